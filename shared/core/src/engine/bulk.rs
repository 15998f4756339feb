//! Bulk actions by filter: a preview (the count and a sample, changing nothing), and jobs
//! that retry, cancel or release every task a filter takes, a page at a time at the
//! plan's pace. A job is moved on by whichever runner holds its lease (the local server's
//! loop, the AWS sweeper), and is written after each page: one that stopped is taken up
//! where it was (see [`crate::domain::bulk`] for why no task is acted on twice).
//!
//! The calls a retry or release brings about go through the delivery lanes like any
//! other, so a destination's limits hold for them.

use std::time::{Duration, Instant};

use futures_util::{stream, StreamExt};

use super::error::EngineError;
use super::state::Engine;
use crate::domain::{
    Act, BulkAction, BulkJob, BulkJobId, BulkPlan, InHand, JobRefusal, Status, Task, TaskId,
    TenantId,
};
use crate::metrics::MetricEvent;
use crate::ports::{ListQuery, StoreError};

/// Tasks a job reads per step, at most (fewer at a pace under 100 a second).
const JOB_PAGE: u32 = 100;
/// A tenant's jobs running at once, at most: each is paged and paced by itself.
pub const MAX_RUNNING_JOBS: usize = 10;
/// Jobs one runner moves on side by side.
const JOBS_AT_ONCE: usize = 16;
/// Tasks a preview reads per page.
const PREVIEW_PAGE: u32 = 500;
/// How long a preview reads before it answers with what it counted so far.
const PREVIEW_BUDGET: Duration = Duration::from_secs(20);
/// Tasks a preview shows.
const SAMPLE: usize = 10;
/// Tasks of one page acted on at once.
const AT_ONCE: usize = 8;

/// A name for this process as the runner of bulk jobs, made once at its start: its host
/// and pid, and a random part (two containers can share both).
pub fn bulk_runner() -> String {
    format!("{}/{}", super::state::this_process(), ulid::Ulid::new())
}

/// What a bulk action would do, changing nothing.
#[derive(Debug, Default)]
pub struct BulkPreview {
    /// How many tasks it would act on now.
    pub count: u64,
    /// The first few of them, newest first.
    pub sample: Vec<Task>,
    /// False when the count stopped at the preview's time budget (it is a lower bound).
    pub complete: bool,
}

/// Why a runner stopped running a job.
#[derive(Debug, PartialEq, Eq)]
pub enum JobRun {
    Finished,
    /// Another runner holds it (or wrote it first).
    Held,
    /// The runner's time ran out; the job goes on at the next run.
    OutOfTime,
}

/// What one step of a job did.
enum JobStep {
    /// It acted on this many tasks; the job goes on.
    Acted(usize),
    Stopped(JobRun),
}

impl Engine {
    /// The count and a sample of the tasks `plan` takes now; changes nothing. The same
    /// filter as a job's, read the same way, so a job started at once acts on as many.
    pub async fn preview_bulk(
        &self,
        tenant: &TenantId,
        plan: &BulkPlan,
    ) -> Result<BulkPreview, EngineError> {
        let started = Instant::now();
        let since = self.ports.clock.now();
        let mut preview = BulkPreview {
            complete: true,
            ..BulkPreview::default()
        };
        for status in plan.statuses() {
            let mut cursor = None;
            loop {
                if started.elapsed() > PREVIEW_BUDGET {
                    preview.complete = false;
                    return Ok(preview);
                }
                let query = page_query(plan, status, cursor, PREVIEW_PAGE);
                let page = self.ports.store.tasks.list(tenant, &query).await?;
                for task in page.tasks.into_iter().filter(|t| plan.takes(t, since)) {
                    preview.count += 1;
                    if preview.sample.len() < SAMPLE {
                        preview.sample.push(task);
                    }
                }
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
        }
        Ok(preview)
    }

    /// Starts a job for `plan`; runners take it from the store.
    pub async fn start_bulk(
        &self,
        tenant: &TenantId,
        plan: BulkPlan,
    ) -> Result<BulkJob, EngineError> {
        let over_limit = || {
            EngineError::Limited {
            detail: format!(
                "{MAX_RUNNING_JOBS} bulk jobs are running already; start another when one has finished"
            ),
            retry_after: Duration::from_secs(60),
        }
        };
        if self.running_jobs_of(tenant).await?.len() >= MAX_RUNNING_JOBS {
            return Err(over_limit());
        }
        let job = BulkJob::new(tenant.clone(), plan, self.ports.clock.now());
        self.ports.store.bulk_jobs.create_job(&job).await?;
        // Starts at the same moment may all have found room: those with more running jobs
        // before them (by id) than the limit give way, before acting on anything.
        let running = self.running_jobs_of(tenant).await?;
        let ahead = running.iter().filter(|id| **id < job.id).count();
        if ahead >= MAX_RUNNING_JOBS {
            let withdrawn = job.withdrawn(self.ports.clock.now());
            let saved = self
                .ports
                .store
                .bulk_jobs
                .save_job(&withdrawn, job.version)
                .await;
            // A runner that took it meanwhile found it running: the job stands.
            if saved.is_ok() {
                return Err(over_limit());
            }
        }
        tracing::info!(
            job = %job.id, tenant = %tenant, action = job.plan.action.as_str(),
            "bulk job started"
        );
        Ok(job)
    }

    /// The tenant's running jobs, every one (not only the newest listed).
    async fn running_jobs_of(&self, tenant: &TenantId) -> Result<Vec<BulkJobId>, EngineError> {
        let running = self.ports.store.bulk_jobs.running_jobs().await?;
        Ok((running.into_iter())
            .filter(|(owner, _)| owner == tenant)
            .map(|(_, id)| id)
            .collect())
    }

    pub async fn bulk_job(
        &self,
        tenant: &TenantId,
        id: &BulkJobId,
    ) -> Result<Option<BulkJob>, EngineError> {
        Ok(self.ports.store.bulk_jobs.job(tenant, id).await?)
    }

    /// The tenant's newest jobs, newest first.
    pub async fn bulk_jobs(&self, tenant: &TenantId) -> Result<Vec<BulkJob>, EngineError> {
        Ok(self.ports.store.bulk_jobs.jobs(tenant).await?)
    }

    /// Every tenant's running jobs.
    pub async fn running_bulk_jobs(&self) -> Result<Vec<(TenantId, BulkJobId)>, EngineError> {
        Ok(self.ports.store.bulk_jobs.running_jobs().await?)
    }

    /// Runs every running job side by side for at most `budget` (the AWS sweeper's run);
    /// answers how many are still running.
    pub async fn run_bulk_jobs(
        &self,
        runner: &str,
        budget: Duration,
    ) -> Result<usize, EngineError> {
        let until = Instant::now() + budget;
        let running = self.running_bulk_jobs().await?;
        let runs = stream::iter(running.iter())
            .map(|(tenant, id)| self.run_bulk_job(tenant, id, runner, Some(until)))
            .buffer_unordered(JOBS_AT_ONCE)
            .collect::<Vec<_>>()
            .await;
        let mut left = 0;
        for run in runs {
            match run {
                Ok(JobRun::Finished) => {}
                Ok(_) => left += 1,
                Err(e) => {
                    left += 1;
                    tracing::warn!(error = %e, "a bulk job step failed; it is taken up again");
                }
            }
        }
        Ok(left)
    }

    /// Moves the job on, a page at a time at its pace, until it is finished, another
    /// runner holds it, or `until` comes.
    pub async fn run_bulk_job(
        &self,
        tenant: &TenantId,
        id: &BulkJobId,
        runner: &str,
        until: Option<Instant>,
    ) -> Result<JobRun, EngineError> {
        loop {
            let started = Instant::now();
            let Some(job) = self.ports.store.bulk_jobs.job(tenant, id).await? else {
                return Ok(JobRun::Finished);
            };
            let acted = match self.job_step(job.clone(), runner).await? {
                JobStep::Stopped(run) => return Ok(run),
                JobStep::Acted(n) => n,
            };
            let wait = job.plan.pace(acted).saturating_sub(started.elapsed());
            if until.is_some_and(|until| Instant::now() + wait >= until) {
                return Ok(JobRun::OutOfTime);
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// One step: take the job, read a page (unless one is in hand from a step that
    /// stopped), act on the tasks it took, and write the counts.
    async fn job_step(&self, job: BulkJob, runner: &str) -> Result<JobStep, EngineError> {
        let mut job = match job.claim(runner, self.ports.clock.now()) {
            Ok(claimed) => claimed,
            Err(JobRefusal::Finished) => return Ok(JobStep::Stopped(JobRun::Finished)),
            Err(JobRefusal::Held(_)) => return Ok(JobStep::Stopped(JobRun::Held)),
        };
        if !self.save_job(&job).await? {
            return Ok(JobStep::Stopped(JobRun::Held));
        }
        if job.in_hand.is_empty() {
            if let Some(status) = job.reading() {
                let limit = job.plan.page(JOB_PAGE);
                let query = page_query(&job.plan, status, job.cursor.after, limit);
                let page = self.ports.store.tasks.list(&job.tenant, &query).await?;
                let taken = (page.tasks.iter())
                    .filter(|t| job.plan.takes(t, job.created_at))
                    .map(InHand::of)
                    .collect();
                let read = job.page_read(
                    page.tasks.len(),
                    taken,
                    page.next_cursor,
                    self.ports.clock.now(),
                );
                if !self.save_job(&read).await? {
                    return Ok(JobStep::Stopped(JobRun::Held));
                }
                job = read;
            }
        }
        let acts = stream::iter(job.in_hand.iter().copied())
            .map(|listed| self.act_in_bulk(&job, listed))
            .buffer_unordered(AT_ONCE)
            .collect::<Vec<_>>()
            .await;
        let (mut done, mut skipped) = (0, 0);
        for act in acts {
            // A failed write leaves the page in hand: the next step acts on it again.
            match act? {
                true => done += 1,
                false => skipped += 1,
            }
        }
        let next = job.page_done(done, skipped, self.ports.clock.now());
        if !self.save_job(&next).await? {
            return Ok(JobStep::Stopped(JobRun::Held));
        }
        if next.is_running() {
            return Ok(JobStep::Acted(job.in_hand.len()));
        }
        tracing::info!(
            job = %next.id, tenant = %next.tenant, done = next.progress.done,
            skipped = next.progress.skipped, "bulk job finished"
        );
        Ok(JobStep::Stopped(JobRun::Finished))
    }

    /// Writes the job over the version before it; `false` if another runner wrote first.
    async fn save_job(&self, job: &BulkJob) -> Result<bool, EngineError> {
        match (self.ports.store.bulk_jobs)
            .save_job(job, job.version - 1)
            .await
        {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Acts on one task of the job's page, read again and written conditionally (a
    /// delivery or a caller that got there first wins); whether the action is done. A
    /// task that cannot be read (its record is corrupt) is left, so that it never holds
    /// the job up.
    async fn act_in_bulk(&self, job: &BulkJob, listed: InHand) -> Result<bool, EngineError> {
        loop {
            let task = match self.ports.store.tasks.get(&job.tenant, &listed.id).await {
                Ok(Some(task)) => task,
                Ok(None) => return Ok(false),
                Err(StoreError::Corrupt(e)) => {
                    tracing::warn!(job = %job.id, task = %listed.id, error = %e, "bulk job left a task it cannot read");
                    return Ok(false);
                }
                Err(e) => return Err(e.into()),
            };
            let now = self.ports.clock.now();
            let next = match job.plan.act(&task, &listed, now) {
                Act::Write(next) => *next,
                Act::AlreadyDone => return Ok(true),
                Act::Leave(_) => return Ok(false),
            };
            let Some(next) = self.write_change(&task, next).await? else {
                continue;
            };
            match job.plan.action {
                BulkAction::Cancel => self.record(MetricEvent::Canceled { count: 1 }),
                BulkAction::Retry | BulkAction::Release => self.arm_written(&next).await,
            }
            return Ok(true);
        }
    }
}

/// A page of the tasks in `status` the plan may take: by business key where the filter
/// names one (an index every store has), else by state.
fn page_query(plan: &BulkPlan, status: Status, cursor: Option<TaskId>, limit: u32) -> ListQuery {
    ListQuery {
        status: Some(status),
        key: plan.filter.key.clone(),
        limit,
        cursor,
    }
}
