//! The compensating sweep: finds work whose timer was lost and arms it again.

use chrono::Duration;

use super::{Engine, EngineError};
use crate::domain::{PendingWork, WorkKind};
use crate::metrics::MetricEvent;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Scheduled attempts (and held tasks' checks) whose timer was (re-)armed.
    pub rearmed: usize,
    /// Deliveries whose lease ends by the cutoff, armed for a new worker to take over.
    pub leases_taken_over: usize,
    /// Dead letters sent again.
    pub dead_letters_resent: usize,
    /// Owed final alerts handled late (they could not be registered when their task
    /// failed).
    pub alerts_raised: usize,
}

impl Engine {
    /// Arms every pending work item due by `now + lookahead` (see
    /// [`crate::domain::Task::pending_work`]), raises owed alerts and resends pending dead
    /// letters. With durable timers (AWS) `lookahead` is negative: only work overdue by
    /// that much is suspect.
    pub async fn sweep(&self, lookahead: Duration) -> Result<SweepReport, EngineError> {
        let now = self.ports.clock.now();
        let cutoff = now.checked_add_signed(lookahead).unwrap_or(now);
        let due = self
            .ports
            .sweep
            .due(cutoff, self.settings.sweep_batch)
            .await?;
        let (report, all_done) = self.repair(due.work).await?;
        // Only once everything it read is in a timer's (or the queue's) hands may the store
        // move past it.
        if let (true, Some(mark)) = (all_done, &due.mark) {
            self.ports.sweep.swept(mark).await?;
        }
        Ok(report)
    }

    /// Takes over pending work whose timer was lost: arms attempts, checks and leases'
    /// ends, raises owed alerts and resends pending dead letters. Returns what it did, and
    /// whether every arm and send worked.
    pub async fn repair(&self, work: Vec<PendingWork>) -> Result<(SweepReport, bool), EngineError> {
        let mut report = SweepReport::default();
        let mut all_done = true;
        for work in work {
            match work.kind {
                WorkKind::Attempt | WorkKind::Check => {
                    all_done &= self.arm(work.attempt, work.due_at).await;
                    report.rearmed += 1;
                }
                // Armed for when the lease ends: the claim then takes the attempt over.
                WorkKind::LeaseExpiry => {
                    all_done &= self.arm(work.attempt, work.due_at).await;
                    report.leases_taken_over += 1;
                }
                WorkKind::DeadLetter => {
                    let (tenant, id) = (&work.attempt.tenant, &work.attempt.task_id);
                    let store = &self.ports.store;
                    let Some(mut task) = store.get(tenant, id).await? else {
                        continue;
                    };
                    if task.owed_alert().is_some() {
                        all_done &= self.owed_alert(task).await?;
                        report.alerts_raised += 1;
                        // Read again: raising the alert wrote the task.
                        match store.get(tenant, id).await? {
                            Some(again) => task = again,
                            None => continue,
                        }
                    }
                    if task.dead_letter_pending {
                        all_done &= self.dead_letter(task).await?;
                        report.dead_letters_resent += 1;
                    }
                }
            }
        }
        let repaired = report.rearmed
            + report.leases_taken_over
            + report.dead_letters_resent
            + report.alerts_raised;
        if repaired > 0 {
            self.ports
                .metrics
                .record(MetricEvent::SweepRepaired { count: repaired });
        }
        Ok((report, all_done))
    }
}
