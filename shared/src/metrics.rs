//! What the engine counts, behind a port: the Lambdas print CloudWatch Embedded Metric
//! Format lines (CloudWatch turns them into metrics without any API call); the local binary
//! only logs.

use std::io::Write;

use serde_json::json;

/// The namespace the dashboard and alarms read.
pub const NAMESPACE: &str = "Boomerang";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricEvent {
    Registered,
    /// An attempt succeeded.
    Delivered {
        lateness_ms: i64,
    },
    /// An attempt failed and another is scheduled.
    Retried {
        lateness_ms: i64,
    },
    /// An attempt failed and the task failed with it.
    Failed {
        lateness_ms: i64,
    },
    /// The sweeper re-armed lost or stalled work.
    SweepRepaired {
        count: usize,
    },
}

impl MetricEvent {
    /// The metric name and value, and the attempt's lateness if it was one.
    fn parts(self) -> (&'static str, i64, Option<i64>) {
        match self {
            MetricEvent::Registered => ("Registered", 1, None),
            MetricEvent::Delivered { lateness_ms } => ("Delivered", 1, Some(lateness_ms)),
            MetricEvent::Retried { lateness_ms } => ("Retried", 1, Some(lateness_ms)),
            MetricEvent::Failed { lateness_ms } => ("Failed", 1, Some(lateness_ms)),
            MetricEvent::SweepRepaired { count } => ("SweepRepaired", count as i64, None),
        }
    }
}

pub trait Metrics: Send + Sync {
    fn record(&self, event: MetricEvent);
}

/// Drops every event (the local binary's logs already say what happened).
#[derive(Debug, Default)]
pub struct NoMetrics;

impl Metrics for NoMetrics {
    fn record(&self, _event: MetricEvent) {}
}

/// Prints one EMF JSON line per event on stdout.
#[derive(Debug, Default)]
pub struct EmfMetrics;

/// The EMF document for one event at `timestamp_ms`.
pub fn emf_line(event: MetricEvent, timestamp_ms: i64) -> serde_json::Value {
    let (name, value, lateness) = event.parts();
    let mut metrics = vec![json!({"Name": name, "Unit": "Count"})];
    let mut doc = json!({ name: value });
    if let Some(ms) = lateness {
        metrics.push(json!({"Name": "AttemptLateness", "Unit": "Milliseconds"}));
        doc["AttemptLateness"] = json!(ms);
    }
    doc["_aws"] = json!({
        "Timestamp": timestamp_ms,
        "CloudWatchMetrics": [{"Namespace": NAMESPACE, "Dimensions": [[]], "Metrics": metrics}],
    });
    doc
}

impl Metrics for EmfMetrics {
    fn record(&self, event: MetricEvent) {
        let line = emf_line(event, chrono::Utc::now().timestamp_millis());
        // One write per line so concurrent events never interleave.
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_events_carry_lateness_in_the_emf_document() {
        let doc = emf_line(MetricEvent::Retried { lateness_ms: 42 }, 1_700_000_000_000);
        assert_eq!(doc["Retried"], 1);
        assert_eq!(doc["AttemptLateness"], 42);
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], NAMESPACE);
        let names: Vec<_> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].clone())
            .collect();
        assert_eq!(names, vec![json!("Retried"), json!("AttemptLateness")]);
        assert_eq!(doc["_aws"]["Timestamp"], 1_700_000_000_000i64);
    }

    #[test]
    fn counts_without_lateness() {
        let doc = emf_line(MetricEvent::SweepRepaired { count: 3 }, 0);
        assert_eq!(doc["SweepRepaired"], 3);
        assert!(doc.get("AttemptLateness").is_none());
    }
}
