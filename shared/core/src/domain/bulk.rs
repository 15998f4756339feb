//! Bulk actions: retrying, canceling or releasing every task a [`TaskFilter`] takes, as a
//! job that pages through the tenant's tasks at a set pace and can be resumed where it
//! stopped. Pure: the job is a value moved on by these functions; the engine reads pages,
//! acts on each task and writes the job (conditionally on its version) around them.
//!
//! A resumed job never acts on a task twice: the page it was acting on when it stopped is
//! kept (`in_hand`), each task with the round it was in when it was read, and acted on
//! again: a task whose round moved on since it was read (the job retried it before it
//! stopped) counts as done, and is not retried again.

use std::ops::RangeInclusive;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::{BulkJobId, TaskId, TenantId};
use super::invalid::Invalid;
use super::lifecycle::Refusal;
use super::task::{Status, Task};
use super::task_filter::TaskFilter;

/// Tasks a job acts on per second unless told otherwise.
pub const DEFAULT_PACE: u32 = 100;
pub const PACE_RANGE: RangeInclusive<u32> = 1..=1_000;
/// How long a runner holds a job once it takes a step: another runner may take the job
/// over after that (the first has stopped). Each step renews it.
pub const JOB_LEASE: chrono::Duration = chrono::Duration::seconds(15);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BulkAction {
    /// A new round of retries for each failed task, as `POST /v1/tasks/{id}/retry` does.
    Retry,
    /// Cancels each scheduled or held task.
    Cancel,
    /// Releases each held task.
    Release,
}

impl BulkAction {
    /// The states of the tasks it acts on.
    pub fn statuses(self) -> &'static [Status] {
        match self {
            BulkAction::Retry => &[Status::Failed],
            BulkAction::Cancel => &[Status::Scheduled, Status::Held],
            BulkAction::Release => &[Status::Held],
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BulkAction::Retry => "retry",
            BulkAction::Cancel => "cancel",
            BulkAction::Release => "release",
        }
    }
}

/// What a bulk action does, checked: the action, which tasks, and how fast.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BulkPlan {
    pub action: BulkAction,
    pub filter: TaskFilter,
    /// Tasks acted on per second, at most.
    pub per_second: u32,
}

impl BulkPlan {
    /// Refuses, naming the field: a filter that contradicts itself or names a state the
    /// action does not take; an empty filter unless `all` says that every task of the
    /// action's states is meant; a pace out of range.
    pub fn new(
        action: BulkAction,
        filter: TaskFilter,
        per_second: Option<u32>,
        all: bool,
    ) -> Result<Self, Invalid> {
        filter.check()?;
        if let Some(s) = (filter.statuses.iter()).find(|s| !action.statuses().contains(s)) {
            return Err(Invalid::new(
                "filter.statuses",
                format!(
                    "`{}` does not take {} tasks (it takes: {})",
                    action.as_str(),
                    s.as_str(),
                    names(action.statuses())
                )
                .as_str(),
            ));
        }
        if narrows_nothing(action, &filter) && !all {
            return Err(Invalid::new(
                "filter",
                format!(
                    "an empty filter takes every {} task: send `\"all\": true` to mean that",
                    names(action.statuses())
                )
                .as_str(),
            ));
        }
        if !filter.ended.is_open() && action != BulkAction::Retry {
            return Err(Invalid::new(
                "filter.ended",
                format!(
                    "`{}` takes unfinished tasks, which have not ended",
                    action.as_str()
                ),
            ));
        }
        let per_second = per_second.unwrap_or(DEFAULT_PACE);
        if !PACE_RANGE.contains(&per_second) {
            return Err(Invalid::new(
                "per_second",
                format!(
                    "must be between {} and {}",
                    PACE_RANGE.start(),
                    PACE_RANGE.end()
                )
                .as_str(),
            ));
        }
        Ok(Self {
            action,
            filter,
            per_second,
        })
    }

    /// The states it pages through, in order: the filter's, or else the action's.
    pub fn statuses(&self) -> Vec<Status> {
        let action = self.action.statuses();
        match self.filter.statuses.is_empty() {
            true => action.to_vec(),
            false => (action.iter().copied())
                .filter(|s| self.filter.statuses.contains(s))
                .collect(),
        }
    }

    /// Whether the plan takes `task` as listed: the filter matches it, it is in a state
    /// the action takes, and it was registered before `since` (the job's creation; a task
    /// registered later is not the job's).
    pub fn takes(&self, task: &Task, since: DateTime<Utc>) -> bool {
        self.action.statuses().contains(&task.status)
            && task.created_at < since
            && self.filter.matches(task)
    }

    /// What acting on `task` (read again just now) comes to; `listed` is the round it was
    /// in when the job read it. Acting again on a task the job acted on before it stopped
    /// changes nothing: its round (or state) has moved on.
    pub fn act(&self, task: &Task, listed: &InHand, now: DateTime<Utc>) -> Act {
        let done_already = match self.action {
            // A new round began since it was read: the job's retry, before it stopped.
            BulkAction::Retry => task.round_start != listed.round,
            BulkAction::Cancel => task.status == Status::Canceled,
            BulkAction::Release => false,
        };
        if done_already {
            return Act::AlreadyDone;
        }
        // Replaced by key since it was read: judged again by the filter.
        if !self.filter.matches(task) {
            return Act::Leave(task.status);
        }
        let next = match self.action {
            BulkAction::Retry => task.redrive(now),
            BulkAction::Cancel => task.cancel(now),
            BulkAction::Release => task.release(now),
        };
        match next {
            Ok(next) => Act::Write(Box::new(next)),
            Err(Refusal::Released(_)) => Act::AlreadyDone,
            Err(_) => Act::Leave(task.status),
        }
    }

    /// Tasks read at a time: a page is acted on at once, then the job waits its share of
    /// a second, so a page holds at most a second's worth.
    pub fn page(&self, most: u32) -> u32 {
        most.min(self.per_second)
    }

    /// How long acting on `acted` tasks takes at the plan's pace.
    pub fn pace(&self, acted: usize) -> Duration {
        Duration::from_secs_f64(acted as f64 / f64::from(self.per_second))
    }
}

/// Whether the filter takes every task of the action's states: nothing but states, and
/// those all of the action's.
fn narrows_nothing(action: BulkAction, filter: &TaskFilter) -> bool {
    let states_only = TaskFilter {
        statuses: Vec::new(),
        ..filter.clone()
    }
    .is_empty();
    states_only
        && action
            .statuses()
            .iter()
            .all(|s| filter.statuses.contains(s))
        || filter.is_empty()
}

fn names(statuses: &[Status]) -> String {
    (statuses.iter().map(|s| s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What acting on one task comes to.
#[derive(Debug, PartialEq)]
pub enum Act {
    /// Write this task (conditionally on the version read).
    Write(Box<Task>),
    /// The action was done to it already (by this job before it stopped, or meanwhile).
    AlreadyDone,
    /// It is no longer one the action takes (it moved on): left as it is.
    Leave(Status),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Running,
    Finished,
}

/// Where a job has read to: the state it is paging through (an index into
/// [`BulkPlan::statuses`]) and the last task read of it (lists are newest first).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobCursor {
    pub status: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<TaskId>,
}

/// A task of the page in hand, with the round it was in when the job read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InHand {
    pub id: TaskId,
    pub round: u32,
}

impl InHand {
    pub fn of(task: &Task) -> Self {
        Self {
            id: task.id,
            round: task.round_start,
        }
    }
}

/// A job's counts so far; the final report once it is finished.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// Tasks read from the store.
    pub read: u64,
    /// Of those, the ones the filter took.
    pub matched: u64,
    /// Tasks the action was done to.
    pub done: u64,
    /// Tasks that had moved on when their turn came (delivered, canceled…): left alone.
    pub skipped: u64,
}

/// The runner holding a job, until when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobLease {
    pub runner: String,
    pub until: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BulkJob {
    pub id: BulkJobId,
    pub tenant: TenantId,
    pub plan: BulkPlan,
    pub state: JobState,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    pub progress: Progress,
    #[serde(default)]
    pub cursor: JobCursor,
    /// The page being acted on: taken up again first if the job stopped during it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_hand: Vec<InHand>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<JobLease>,
    /// Each write is conditional on the version read; each write adds one.
    pub version: u64,
}

/// Why a runner cannot take a step of a job.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum JobRefusal {
    #[error("the job is finished")]
    Finished,
    #[error("another runner holds the job until {0}")]
    Held(DateTime<Utc>),
}

impl BulkJob {
    pub fn new(tenant: TenantId, plan: BulkPlan, now: DateTime<Utc>) -> Self {
        Self {
            id: BulkJobId::new(),
            tenant,
            plan,
            state: JobState::Running,
            created_at: now,
            updated_at: now,
            finished_at: None,
            progress: Progress::default(),
            cursor: JobCursor::default(),
            in_hand: Vec::new(),
            lease: None,
            version: 1,
        }
    }

    pub fn is_running(&self) -> bool {
        self.state == JobState::Running
    }

    fn next_version(&self, now: DateTime<Utc>) -> Self {
        let mut next = self.clone();
        next.version += 1;
        next.updated_at = now;
        next
    }

    /// The job, finished before it acted on anything: a start that found itself over the
    /// tenant's limit of running jobs gives way.
    pub fn withdrawn(&self, now: DateTime<Utc>) -> Self {
        let mut job = self.next_version(now);
        job.state = JobState::Finished;
        job.finished_at = Some(now);
        job.lease = None;
        job
    }

    /// `runner` takes the job for its next step (or keeps it): refused when it is
    /// finished, or while another runner's lease lasts.
    pub fn claim(&self, runner: &str, now: DateTime<Utc>) -> Result<Self, JobRefusal> {
        if !self.is_running() {
            return Err(JobRefusal::Finished);
        }
        if let Some(lease) = self.lease.as_ref() {
            if lease.runner != runner && lease.until > now {
                return Err(JobRefusal::Held(lease.until));
            }
        }
        let mut next = self.next_version(now);
        next.lease = Some(JobLease {
            runner: runner.to_string(),
            until: now + JOB_LEASE,
        });
        Ok(next)
    }

    /// The state being paged through, `None` once every state has been read.
    pub fn reading(&self) -> Option<Status> {
        self.plan.statuses().get(self.cursor.status).copied()
    }

    /// A page was read: `read` tasks, of which `matched` are taken in hand; the list goes
    /// on after `next` (`None`: the state is read to its end).
    pub fn page_read(
        &self,
        read: usize,
        matched: Vec<InHand>,
        next: Option<TaskId>,
        now: DateTime<Utc>,
    ) -> Self {
        let mut job = self.next_version(now);
        job.progress.read += read as u64;
        job.progress.matched += matched.len() as u64;
        job.in_hand = matched;
        job.cursor = match next {
            Some(after) => JobCursor {
                status: self.cursor.status,
                after: Some(after),
            },
            None => JobCursor {
                status: self.cursor.status + 1,
                after: None,
            },
        };
        job
    }

    /// The tasks in hand were acted on: `done` had the action done, `skipped` had moved
    /// on. Finished once every state is read and nothing is in hand.
    pub fn page_done(&self, done: u64, skipped: u64, now: DateTime<Utc>) -> Self {
        let mut job = self.next_version(now);
        job.progress.done += done;
        job.progress.skipped += skipped;
        job.in_hand.clear();
        if job.reading().is_none() {
            job.state = JobState::Finished;
            job.finished_at = Some(now);
            job.lease = None;
        }
        job
    }
}

#[cfg(test)]
mod tests;
