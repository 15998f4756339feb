//! The Lambdas' metrics: one compact JSON line per event on stdout ([`metric_line`]); an
//! attempt's line is also its log line. CloudWatch Logs metric filters in the stack turn the
//! lines into the `Boomerang` metrics ([`NAMESPACE`]), so a line carries no metric
//! directive: CloudWatch Logs bills by the byte, and an Embedded Metric Format document
//! would be twice as long.

use std::io::Write;

use serde_json::json;

use boomerang_core::metrics::{outcome_name, MetricEvent, Metrics};

/// The namespace the metric filters publish to, and the dashboard and alarms read.
pub const NAMESPACE: &str = "Boomerang";

/// Prints one compact JSON line per event on stdout.
#[derive(Debug, Default)]
pub struct MetricLines;

/// The line of one event; the stack's metric filters read these fields:
/// - `{"registered": n}` → `Registered` (n);
/// - an attempt: `task`, `attempt`, `outcome` (`succeeded` → `Delivered`, `retrying` →
///   `Retried`, `failed` → `Failed`), `http_status`, `lateness_ms` (→ `AttemptLateness`)
///   and `duration_ms`;
/// - `{"sweep_repaired": n}` → `SweepRepaired` (n);
/// - `{"set_aside": n}`: unreadable items the sweep or a bucket's fire passed over (each
///   logged with its key at error level);
/// - `{"bucket_check_failed": 1}`: a run's check of the minutes' bucket fires failed (the
///   next run checks the same minutes again);
/// - `{"redrive_failed": n}`: timers in the system-failures queue not handed back (left
///   there for the next run), or 1 for a run that could not read the queue.
///
/// Other events have no line: the stack has no metric for them.
pub fn metric_line(event: MetricEvent) -> Option<serde_json::Value> {
    Some(match event {
        MetricEvent::Registered { count } => json!({ "registered": count }),
        MetricEvent::Attempt(a) => json!({
            "task": a.task.to_string(),
            "attempt": a.attempt,
            "outcome": outcome_name(a.outcome),
            "http_status": a.http_status,
            "lateness_ms": a.lateness_ms,
            "duration_ms": a.duration_ms,
        }),
        MetricEvent::SweepRepaired { count } => json!({ "sweep_repaired": count }),
        MetricEvent::SetAside { count } => json!({ "set_aside": count }),
        MetricEvent::BucketCheckFailed => json!({ "bucket_check_failed": 1 }),
        MetricEvent::RedriveFailed { count } => json!({ "redrive_failed": count }),
        MetricEvent::BreakerOpened => json!({ "breaker": "opened" }),
        MetricEvent::BreakerClosed => json!({ "breaker": "closed" }),
        MetricEvent::Canceled { .. }
        | MetricEvent::DeliveryStarted
        | MetricEvent::DeliveryFinished
        | MetricEvent::GivenBack
        | MetricEvent::Deferred
        // The slow lane's queue counts them itself (`NumberOfMessagesSent`), for nothing.
        | MetricEvent::HandedToSlowLane
        | MetricEvent::StoreCommit { .. } => return None,
    })
}

impl Metrics for MetricLines {
    fn record(&self, event: MetricEvent) {
        // One write per line so concurrent events never interleave.
        if let Some(line) = metric_line(event) {
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use boomerang_core::domain::{AttemptOutcome, TaskId};
    use boomerang_core::metrics::AttemptFacts;
    use chrono::Utc;

    #[test]
    fn an_attempt_line_names_the_task_and_what_came_back() {
        let task = TaskId::new();
        let facts = AttemptFacts {
            task,
            attempt: 2,
            outcome: AttemptOutcome::Retrying,
            http_status: Some(503),
            lateness_ms: 42,
            duration_ms: 120,
            started_at: Utc::now(),
        };
        let line = metric_line(MetricEvent::Attempt(facts)).unwrap();
        assert_eq!(
            line,
            json!({
                "task": task.to_string(), "attempt": 2, "outcome": "retrying",
                "http_status": 503, "lateness_ms": 42, "duration_ms": 120
            })
        );
        // Compact: well under half the Embedded Metric Format document it replaces.
        assert!(line.to_string().len() < 140, "{line}");
    }

    #[test]
    fn counts_are_lines_of_their_own() {
        assert_eq!(
            metric_line(MetricEvent::Registered { count: 100 })
                .unwrap()
                .to_string(),
            r#"{"registered":100}"#
        );
        assert_eq!(
            metric_line(MetricEvent::SweepRepaired { count: 3 })
                .unwrap()
                .to_string(),
            r#"{"sweep_repaired":3}"#
        );
        let lines = [
            (MetricEvent::SetAside { count: 2 }, r#"{"set_aside":2}"#),
            (
                MetricEvent::BucketCheckFailed,
                r#"{"bucket_check_failed":1}"#,
            ),
            (
                MetricEvent::RedriveFailed { count: 4 },
                r#"{"redrive_failed":4}"#,
            ),
        ];
        for (event, line) in lines {
            assert_eq!(metric_line(event).unwrap().to_string(), line);
        }
    }
}
