//! The compensating sweep: finds work whose timer was lost and arms it again.

use chrono::{DateTime, Duration, Utc};

use crate::domain::{AttemptRef, PendingWork, WorkKind};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::metrics::MetricEvent;
use crate::ports::TimerError;

/// How long [`Engine::sweep_within`] waits before it tries again a pass that could not arm
/// what it found (or failed): short, so that the repair follows the end of an outage
/// closely; long enough that a run does not hammer a service that is down.
pub const SWEEP_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// How a sweep pass ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PassEnd {
    /// It found nothing (or the store keeps no position): the sweep is done.
    Nothing,
    /// It armed all it found and moved past it: another may find more.
    MovedOn,
    /// It found work it could not all arm: the same work is there for another pass.
    Stuck,
}

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
        Ok(self.sweep_pass(lookahead).await?.0)
    }

    /// [`Self::sweep`] pass after pass while each one finds work and moves past it,
    /// starting none after `budget`: a backlog of lost timers (a queue that refused sends
    /// for a minute at a high rate) is armed again in one run, not one batch per run. A
    /// pass that found work it could not arm, or that failed, is tried again
    /// [`SWEEP_RETRY_PAUSE`] later within the budget: the outage that failed it may be over
    /// by then, and the repair should not wait for the next run (half a minute on AWS). A
    /// failure that outlasts the budget is the answer, unless an earlier pass did work.
    pub async fn sweep_within(
        &self,
        lookahead: Duration,
        budget: std::time::Duration,
    ) -> Result<SweepReport, EngineError> {
        let started = std::time::Instant::now();
        let mut total = SweepReport::default();
        let mut worked = false;
        loop {
            let end = match self.sweep_pass(lookahead).await {
                Ok((report, end)) => {
                    total += report;
                    worked = true;
                    end
                }
                Err(e) if started.elapsed() + SWEEP_RETRY_PAUSE >= budget => {
                    return if worked { Ok(total) } else { Err(e) };
                }
                Err(e) => {
                    tracing::warn!(error = %e, "sweep pass failed; trying again shortly");
                    PassEnd::Stuck
                }
            };
            let elapsed = started.elapsed();
            match end {
                PassEnd::Nothing => return Ok(total),
                PassEnd::MovedOn if elapsed < budget => {}
                PassEnd::Stuck if elapsed + SWEEP_RETRY_PAUSE < budget => {
                    tokio::time::sleep(SWEEP_RETRY_PAUSE).await;
                }
                PassEnd::MovedOn | PassEnd::Stuck => return Ok(total),
            }
        }
    }

    /// One sweep; also how it ended: whether another could find more.
    async fn sweep_pass(&self, lookahead: Duration) -> Result<(SweepReport, PassEnd), EngineError> {
        let now = self.ports.clock.now();
        let cutoff = now.checked_add_signed(lookahead).unwrap_or(now);
        let due = self
            .ports
            .store
            .sweep
            .due(cutoff, self.settings.sweep_batch)
            .await?;
        // Counted once the checkpoint moves past them: a pass tried again would read (and
        // set aside) the same items again.
        let set_aside = self.ports.store.sweep.take_set_aside();
        let found = !due.work.is_empty();
        let (report, all_done) = self.repair(due.work).await?;
        // Only once everything it read is in a timer's (or the queue's) hands may the store
        // move past it.
        let Some(mark) = due.mark.filter(|_| all_done) else {
            let end = if all_done {
                PassEnd::Nothing
            } else {
                PassEnd::Stuck
            };
            return Ok((report, end));
        };
        self.ports.store.sweep.swept(&mark).await?;
        if set_aside > 0 {
            self.ports
                .metrics
                .record(MetricEvent::SetAside { count: set_aside });
        }
        Ok((
            report,
            if found {
                PassEnd::MovedOn
            } else {
                PassEnd::Nothing
            },
        ))
    }

    /// Takes over pending work whose timer was lost: arms attempts, checks and leases'
    /// ends, raises owed alerts and resends pending dead letters. Returns what it did, and
    /// whether every arm and send worked. The timers are armed together
    /// ([`crate::ports::Timer::arm_many`]: ten to a request on SQS), each as [`Self::arm`]
    /// arms one; the dead letters follow one by one.
    pub async fn repair(&self, work: Vec<PendingWork>) -> Result<(SweepReport, bool), EngineError> {
        let mut report = SweepReport::default();
        let (timed, letters): (Vec<_>, Vec<_>) =
            (work.into_iter()).partition(|w| !matches!(w.kind, WorkKind::DeadLetter));
        let arms: Vec<_> = (timed.iter())
            .map(|w| (w.attempt.clone(), w.due_at))
            .collect();
        let armed = self.arm_all(&arms).await;
        let mut all_done = armed.iter().all(|&armed| armed);
        // Only what was armed counts as repaired: a pass tried again while the queue is
        // down would otherwise count the same work once a try.
        for (work, _) in timed.iter().zip(&armed).filter(|(_, &armed)| armed) {
            match work.kind {
                // Armed for when the lease ends: the claim then takes the attempt over.
                WorkKind::LeaseExpiry => report.leases_taken_over += 1,
                _ => report.rearmed += 1,
            }
        }
        for work in letters {
            let (tenant, id) = (&work.attempt.tenant, &work.attempt.task_id);
            let store = &self.ports.store.tasks;
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

    /// [`Self::rearm`] for several attempts, armed together; whether each armed.
    pub async fn rearm_many(&self, attempts: &[AttemptRef]) -> Vec<bool> {
        let now = self.ports.clock.now();
        let arms: Vec<_> = attempts.iter().map(|a| (a.clone(), now)).collect();
        self.arm_all(&arms).await
    }

    /// Arms timers together; whether each armed (a failure is logged and left to the
    /// sweep, as [`Self::arm`] does).
    async fn arm_all(&self, arms: &[(AttemptRef, DateTime<Utc>)]) -> Vec<bool> {
        if arms.is_empty() {
            return Vec::new();
        }
        let mut results = self.ports.timer.arm_many(arms).await.into_iter();
        (arms.iter())
            .map(|(attempt, _)| {
                let result = results
                    .next()
                    .unwrap_or_else(|| Err(TimerError("the timer gave no outcome".into())));
                self.armed(attempt.task_id, attempt.attempt, result)
            })
            .collect()
    }
}

impl std::ops::AddAssign for SweepReport {
    fn add_assign(&mut self, other: SweepReport) {
        self.rearmed += other.rearmed;
        self.leases_taken_over += other.leases_taken_over;
        self.dead_letters_resent += other.dead_letters_resent;
        self.alerts_raised += other.alerts_raised;
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::harness::*;

    /// A pass whose arm fails (the queue still down) is tried again a moment later within
    /// the run, instead of leaving the work to the next run.
    #[tokio::test(start_paused = true)]
    async fn a_pass_that_cannot_arm_is_tried_again_within_the_budget() {
        let h = harness(ScriptedWebhooks::answering(vec![]));
        h.timer.fail_next(1);
        let task = h
            .register(FireTime::After(secs(60)), RetryPolicy::default())
            .await;
        assert!(h.timer.armed().is_empty(), "its timer failed to arm");
        h.clock.advance(secs(150));
        h.timer.fail_next(1);
        let overdue = chrono::Duration::seconds(-60);
        let report = h.engine.sweep_within(overdue, secs(10)).await.unwrap();
        assert_eq!(report.rearmed, 1, "found twice: failed, then armed");
        let armed: Vec<_> = h.timer.armed().into_iter().map(|(id, ..)| id).collect();
        assert_eq!(armed, vec![task.id]);
    }

    /// Without time for another pass, the failed one is the run's answer.
    #[tokio::test]
    async fn a_pass_that_cannot_arm_ends_a_run_with_no_time_left() {
        let h = harness(ScriptedWebhooks::answering(vec![]));
        h.timer.fail_next(1);
        h.register(FireTime::After(secs(60)), RetryPolicy::default())
            .await;
        h.clock.advance(secs(150));
        h.timer.fail_next(1);
        let overdue = chrono::Duration::seconds(-60);
        let report = h.engine.sweep_within(overdue, secs(0)).await.unwrap();
        assert_eq!(report.rearmed, 0, "nothing was armed");
        assert!(h.timer.armed().is_empty());
    }
}
