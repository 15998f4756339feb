//! The task lifecycle, top to bottom. Every transition is a function from the current task
//! and its inputs (the time, a verdict, a random draw) to the next task or a typed
//! [`Refusal`]. The engine reads a task, calls one of these, and writes the result on the
//! condition that the stored version is still the one it read; it never edits a task itself.
//!
//! ```text
//! scheduled ──claim──▶ delivering ──after_attempt──▶ succeeded | scheduled (next) | failed
//! scheduled ──cancel─▶ canceled                       failed ──retry──▶ scheduled
//! held ──release──▶ scheduled       held ──cancel──▶ canceled     (see super::hold)
//! ```
//!
//! [`Task::pending_work`] states, once for every store, what work a task still has to do.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::ids::{Attempt, AttemptRef};
use super::task::{AttemptOutcome, AttemptRecord, DeadLetter, Status, Task};
use super::time::checked_add;

/// Why a transition does not apply to the task as it is now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The attempt is not the task's pending one: handled already, or the task moved on.
    #[error("attempt {0} is not pending")]
    StaleAttempt(Attempt),
    /// The attempt comes after the task's current one: the write that leads to it has not
    /// been seen yet (or never happened).
    #[error("attempt {0} is ahead of the task")]
    AttemptAhead(u32),
    /// Another worker holds the attempt until its lease ends.
    #[error("the attempt is being delivered by another worker until {0}")]
    Leased(DateTime<Utc>),
    /// The timer fired before the attempt was due.
    #[error("the attempt is not due until {0}")]
    NotDue(DateTime<Utc>),
    #[error("the task is being delivered and can no longer be canceled")]
    BeingDelivered,
    #[error("the task is already {}", .0.as_str())]
    Finished(Status),
    #[error("only failed tasks can be retried; this one is {}", .0.as_str())]
    NotFailed(Status),
    #[error("the task is {}, not delivering", .0.as_str())]
    NotDelivering(Status),
    #[error("no dead letter is pending for this task")]
    NoDeadLetterPending,
    #[error("no alert is owed for this task")]
    NoAlertPending,
    /// A release of a task that was released already (a repeat): it is now this.
    #[error("the task was released already and is {}", .0.as_str())]
    Released(Status),
    #[error("the task was not registered held; it is {}", .0.as_str())]
    NotHeld(Status),
    #[error("the {0} would fall outside the supported range of times")]
    TimeOutOfRange(&'static str),
    /// A task of the same key that an `on_key: replace` registration cannot replace: an
    /// attempt of it has been made (or is under way), or it is finished.
    #[error("the task has been attempted or is {}; it is not replaced", .0.as_str())]
    NotReplaceable(Status),
}

/// How the response to one attempt is judged.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Success,
    /// Failed for good (a permanent status, a refused destination): the task fails now.
    Fail(String),
    /// Failed; another attempt follows if the retry policy allows one. `retry_after` is
    /// the wait the server asked for, if any.
    Retry {
        error: String,
        retry_after: Option<Duration>,
    },
}

/// The kinds of work a task can have pending. The names are what the stores keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkKind {
    /// `scheduled`: the attempt is due at `due_at`.
    Attempt,
    /// `delivering`: if the worker died, the attempt may be taken over from `due_at`.
    LeaseExpiry,
    /// `failed`, and its dead letter not yet acknowledged (or its alert not yet
    /// registered) since `due_at`.
    DeadLetter,
    /// `held`: the hold times out (or the next check is due) at `due_at`.
    Check,
}

impl WorkKind {
    pub const ALL: [WorkKind; 4] = [
        WorkKind::Attempt,
        WorkKind::LeaseExpiry,
        WorkKind::DeadLetter,
        WorkKind::Check,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkKind::Attempt => "scheduled",
            WorkKind::LeaseExpiry => "lease",
            WorkKind::DeadLetter => "dead_letter",
            WorkKind::Check => "check",
        }
    }

    pub fn parse(s: &str) -> Option<WorkKind> {
        WorkKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Work a timer is armed for when it is written: an attempt, or a held task's check
    /// (a lease's end is armed only by the sweep, a dead letter is resent by it).
    pub fn is_timed(self) -> bool {
        matches!(self, WorkKind::Attempt | WorkKind::Check)
    }
}

/// What a task still has to do, why, and from when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingWork {
    pub attempt: AttemptRef,
    pub kind: WorkKind,
    pub due_at: DateTime<Utc>,
}

impl Task {
    /// Delivery attempt `number` of this task, as a timer carries it.
    pub fn attempt_ref(&self, number: u32) -> AttemptRef {
        AttemptRef::delivery(self.tenant.clone(), self.id, number)
    }

    /// This (held) task's next check, as a timer carries it.
    pub fn check_ref(&self) -> AttemptRef {
        AttemptRef::check(self.tenant.clone(), self.id)
    }

    /// The work this task has pending, if any. Stores index exactly this (and nothing
    /// else) for the sweep: `due_at` is when the work becomes due.
    pub fn pending_work(&self) -> Option<PendingWork> {
        let (kind, due_at) = match self.status {
            Status::Held => (WorkKind::Check, self.check_at?),
            Status::Scheduled => (WorkKind::Attempt, self.next_attempt_at?),
            Status::Delivering => (WorkKind::LeaseExpiry, self.lease_until?),
            Status::Failed if self.dead_letter_pending || self.alert_pending => {
                (WorkKind::DeadLetter, self.updated_at)
            }
            _ => return None,
        };
        let attempt = match kind {
            WorkKind::Check => Attempt::Check,
            _ => Attempt::Delivery(self.attempt),
        };
        Some(PendingWork {
            attempt: AttemptRef::new(self.tenant.clone(), self.id, attempt),
            kind,
            due_at,
        })
    }

    /// Takes `attempt` for delivery: `scheduled` and due, or `delivering` with its lease
    /// expired (the worker died mid-call). The claimer holds a lease of `lease` from `now`.
    pub fn claim(
        &self,
        attempt: Attempt,
        now: DateTime<Utc>,
        lease: Duration,
    ) -> Result<Task, Refusal> {
        let Attempt::Delivery(number) = attempt else {
            return Err(Refusal::StaleAttempt(attempt));
        };
        if number > self.attempt {
            return Err(Refusal::AttemptAhead(number));
        }
        if number < self.attempt {
            return Err(Refusal::StaleAttempt(attempt));
        }
        match (self.status, self.next_attempt_at, self.lease_until) {
            (Status::Scheduled, Some(due), _) if due > now => return Err(Refusal::NotDue(due)),
            (Status::Scheduled, _, _) => {}
            (Status::Delivering, _, Some(until)) if until > now => {
                return Err(Refusal::Leased(until))
            }
            (Status::Delivering, _, Some(_)) => {}
            _ => return Err(Refusal::StaleAttempt(attempt)),
        }
        let lease_until = checked_add(now, lease).ok_or(Refusal::TimeOutOfRange("lease"))?;
        let mut next = self.next_version(now);
        next.status = Status::Delivering;
        next.lease_until = Some(lease_until);
        Ok(next)
    }

    /// Gives back a claimed attempt that never reached the receiver (this machine ran out of
    /// a resource first): the task is scheduled again for the same attempt, due at
    /// `again`; nothing is recorded and the round is not advanced.
    pub fn unclaim(&self, again: DateTime<Utc>, now: DateTime<Utc>) -> Result<Task, Refusal> {
        if self.status != Status::Delivering {
            return Err(Refusal::NotDelivering(self.status));
        }
        let mut next = self.next_version(now);
        next.status = Status::Scheduled;
        next.next_attempt_at = Some(again);
        next.lease_until = None;
        next.timer_armed = false;
        Ok(next)
    }

    /// The task after the attempt it is delivering: succeeded, scheduled for the next
    /// attempt, or failed with a dead letter pending and an alert owed. `draw` is uniform in `[0, 1)` and
    /// picks the jitter.
    pub fn after_attempt(
        &self,
        verdict: &Verdict,
        now: DateTime<Utc>,
        draw: f64,
    ) -> Result<Task, Refusal> {
        if self.status != Status::Delivering {
            return Err(Refusal::NotDelivering(self.status));
        }
        let mut next = self.next_version(now);
        next.lease_until = None;
        // The timer that fired this attempt is spent; the engine arms the next one.
        next.timer_armed = false;
        let (error, next_at) = match verdict {
            Verdict::Success => {
                next.status = Status::Succeeded;
                next.next_attempt_at = None;
                next.last_error = None;
                return Ok(next);
            }
            Verdict::Fail(error) => (error, None),
            Verdict::Retry { error, retry_after } => (
                error,
                self.spec.retry.next_attempt_at(
                    self.attempts_in_round(),
                    self.round_started_at,
                    now,
                    *retry_after,
                    draw,
                ),
            ),
        };
        next.last_error = Some(error.clone());
        match next_at {
            Some(at) => {
                next.status = Status::Scheduled;
                next.attempt += 1;
                next.next_attempt_at = Some(at);
            }
            None => {
                next.status = Status::Failed;
                next.next_attempt_at = None;
                next.dead_letter_pending = true;
                // Owed if the task reports its failure and has somewhere to send it; the
                // engine finds out.
                next.alert_pending = self.reports_failure();
            }
        }
        Ok(next)
    }

    /// Cancels a `scheduled` or `held` task (or a failed one that blocks its order key); a
    /// timer still armed for it will find it canceled.
    pub fn cancel(&self, now: DateTime<Utc>) -> Result<Task, Refusal> {
        match self.status {
            Status::Scheduled | Status::Held => {
                let mut next = self.next_version(now);
                next.status = Status::Canceled;
                next.next_attempt_at = None;
                next.check_at = None;
                Ok(next)
            }
            // A failed task that blocks its order key may be canceled, to let the key go
            // on (once its dead letter and alert are out).
            Status::Failed
                if self.holds_order() && !self.dead_letter_pending && !self.alert_pending =>
            {
                let mut next = self.next_version(now);
                next.status = Status::Canceled;
                Ok(next)
            }
            Status::Delivering => Err(Refusal::BeingDelivered),
            finished => Err(Refusal::Finished(finished)),
        }
    }

    /// Redrives a `failed` task: a new round of its retry policy, starting at `now` (the
    /// API's `POST /v1/tasks/{id}/retry`). Attempt numbers continue where they were.
    pub fn redrive(&self, now: DateTime<Utc>) -> Result<Task, Refusal> {
        if self.status != Status::Failed {
            return Err(Refusal::NotFailed(self.status));
        }
        let mut next = self.next_version(now);
        next.status = Status::Scheduled;
        next.attempt = self.attempt + 1;
        next.round_start = next.attempt;
        next.round_started_at = now;
        next.next_attempt_at = Some(now);
        next.dead_letter_pending = false;
        next.alert_pending = false;
        next.timer_armed = false;
        Ok(next)
    }

    /// The dead-letter queue acknowledged this task's record.
    pub fn dead_letter_sent(&self, now: DateTime<Utc>) -> Result<Task, Refusal> {
        if self.status != Status::Failed || !self.dead_letter_pending {
            return Err(Refusal::NoDeadLetterPending);
        }
        let mut next = self.next_version(now);
        next.dead_letter_pending = false;
        Ok(next)
    }

    /// The record an operator gets for this failed task.
    pub fn dead_letter(&self) -> DeadLetter {
        DeadLetter {
            task_id: self.id,
            tenant: self.tenant.clone(),
            url: self.spec.request.url.clone(),
            attempts: self.attempts_in_round(),
            last_error: self.last_error.clone(),
            failed_at: self.updated_at,
        }
    }

    /// The record of the attempt this claimed task just made, given the task it led to.
    pub fn attempt_record(
        &self,
        next: &Task,
        started_at: DateTime<Utc>,
        finished_at: DateTime<Utc>,
        status_code: Option<u16>,
        response_excerpt: Option<String>,
    ) -> AttemptRecord {
        let scheduled_at = self.next_attempt_at.unwrap_or(started_at);
        AttemptRecord {
            task_id: self.id,
            number: self.attempt,
            scheduled_at,
            started_at,
            lateness_ms: (started_at - scheduled_at).num_milliseconds().max(0),
            duration_ms: (finished_at - started_at).num_milliseconds().max(0) as u64,
            status_code,
            error: next
                .last_error
                .clone()
                .filter(|_| next.status != Status::Succeeded),
            response_excerpt,
            outcome: match next.status {
                Status::Succeeded => AttemptOutcome::Succeeded,
                Status::Scheduled => AttemptOutcome::Retrying,
                _ => AttemptOutcome::Failed,
            },
            worker: None,
        }
    }

    /// Scheduled, and none of its attempts has begun: what a replace registration may
    /// replace, and what a schedule's occurrence is until its first call.
    pub fn is_untried(&self) -> bool {
        self.status == Status::Scheduled && self.attempt == 1
    }

    /// Replaces a pending task with a newer registration of its key (`on_key: replace`):
    /// the new spec, due at `due` but no later than `latest` (the first registration plus
    /// `max_delay`), and never before `now`. Only a task none of whose attempts has begun
    /// is replaced: one under way (or retrying) keeps its course, and the registration
    /// makes a new task instead.
    pub fn replace(
        &self,
        spec: super::task::TaskSpec,
        due: DateTime<Utc>,
        latest: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Task, Refusal> {
        if !self.is_untried() {
            return Err(Refusal::NotReplaceable(self.status));
        }
        let due = latest.map_or(due, |l| due.min(l)).max(now);
        let mut next = self.next_version(now);
        next.spec = spec;
        next.next_attempt_at = Some(due);
        next.round_started_at = due;
        next.timer_armed = false;
        Ok(next)
    }

    /// A copy prepared for the next write: version bumped, `updated_at` set.
    pub(super) fn next_version(&self, now: DateTime<Utc>) -> Task {
        let mut t = self.clone();
        t.version += 1;
        t.updated_at = now;
        t
    }
}

#[cfg(test)]
mod tests;
