//! The compensating sweep: finds work whose timer was lost and arms it again.

use chrono::Duration;

use super::{Engine, EngineError};
use crate::metrics::MetricEvent;
use crate::ports::DueReason;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Scheduled tasks whose timer was (re-)armed.
    pub rearmed: usize,
    /// Deliveries whose lease expired, handed to a new worker.
    pub leases_taken_over: usize,
    /// Dead letters sent again.
    pub dead_letters_resent: usize,
}

impl Engine {
    /// Re-arms `scheduled` tasks due before `now + lookahead` and expired leases, and resends
    /// pending dead letters. With durable timers (AWS) `lookahead` is negative: only tasks
    /// overdue by that much are suspect. The in-process timer holds only near work in memory,
    /// so there the sweep also loads what falls due within a positive `lookahead`.
    pub async fn sweep(&self, lookahead: Duration) -> Result<SweepReport, EngineError> {
        let now = self.ports.clock.now();
        let due = self
            .ports
            .store
            .due(now + lookahead, now, self.settings.sweep_batch)
            .await?;
        let mut report = SweepReport::default();
        for item in due {
            match item.reason {
                DueReason::Scheduled => {
                    self.arm(&item.id, item.attempt, item.fire_at).await;
                    report.rearmed += 1;
                }
                DueReason::LeaseExpired => {
                    self.arm(&item.id, item.attempt, now).await;
                    report.leases_taken_over += 1;
                }
                DueReason::DeadLetterPending => {
                    if let Some(task) = self.ports.store.get(&item.id).await? {
                        if task.dead_letter_pending {
                            self.dead_letter(task).await?;
                            report.dead_letters_resent += 1;
                        }
                    }
                }
            }
        }
        let repaired = report.rearmed + report.leases_taken_over + report.dead_letters_resent;
        if repaired > 0 {
            self.ports
                .metrics
                .record(MetricEvent::SweepRepaired { count: repaired });
        }
        Ok(report)
    }
}
