//! What the engine counts, behind a port: the Lambdas print CloudWatch Embedded Metric
//! Format lines (CloudWatch turns them into metrics without any API call), one per attempt
//! that is also the attempt's log line; the local binary logs one line per attempt.

use std::io::Write;

use serde_json::json;

use crate::domain::{AttemptOutcome, TaskId};

/// The namespace the dashboard and alarms read.
pub const NAMESPACE: &str = "Boomerang";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricEvent {
    /// Tasks were stored (one registration, or the new tasks of a batch).
    Registered { count: usize },
    /// An attempt ended: it succeeded, it failed and another follows, or the task failed.
    Attempt(AttemptFacts),
    /// The sweeper re-armed lost or stalled work.
    SweepRepaired { count: usize },
}

/// What one attempt came to: the metrics, and the attempt's one log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptFacts {
    pub task: TaskId,
    pub attempt: u32,
    pub outcome: AttemptOutcome,
    pub http_status: Option<u16>,
    pub lateness_ms: i64,
    pub duration_ms: u64,
}

impl MetricEvent {
    /// The metric name and value.
    fn parts(self) -> (&'static str, i64) {
        match self {
            MetricEvent::Registered { count } => ("Registered", count as i64),
            MetricEvent::Attempt(a) => match a.outcome {
                AttemptOutcome::Succeeded => ("Delivered", 1),
                AttemptOutcome::Retrying => ("Retried", 1),
                AttemptOutcome::Failed => ("Failed", 1),
            },
            MetricEvent::SweepRepaired { count } => ("SweepRepaired", count as i64),
        }
    }
}

pub trait Metrics: Send + Sync {
    fn record(&self, event: MetricEvent);
}

/// Drops every event.
#[derive(Debug, Default)]
pub struct NoMetrics;

impl Metrics for NoMetrics {
    fn record(&self, _event: MetricEvent) {}
}

/// The local binary's: one log line per attempt.
#[derive(Debug, Default)]
pub struct LogMetrics;

impl Metrics for LogMetrics {
    fn record(&self, event: MetricEvent) {
        if let MetricEvent::Attempt(a) = event {
            tracing::info!(
                task = %a.task, attempt = a.attempt, outcome = outcome_name(a.outcome),
                http_status = a.http_status, lateness_ms = a.lateness_ms,
                duration_ms = a.duration_ms, "attempt finished"
            );
        }
    }
}

fn outcome_name(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Succeeded => "succeeded",
        AttemptOutcome::Retrying => "retrying",
        AttemptOutcome::Failed => "failed",
    }
}

/// Prints one EMF JSON line per event on stdout.
#[derive(Debug, Default)]
pub struct EmfMetrics;

/// The EMF document for one event at `timestamp_ms`. An attempt's document is also its
/// one log line: the task, the attempt and what came back ride along as properties
/// (searchable in CloudWatch Logs Insights, not metrics).
pub fn emf_line(event: MetricEvent, timestamp_ms: i64) -> serde_json::Value {
    let (name, value) = event.parts();
    let mut metrics = vec![json!({"Name": name, "Unit": "Count"})];
    let mut doc = json!({ name: value });
    if let MetricEvent::Attempt(a) = event {
        metrics.push(json!({"Name": "AttemptLateness", "Unit": "Milliseconds"}));
        doc["AttemptLateness"] = json!(a.lateness_ms);
        doc["task"] = json!(a.task.to_string());
        doc["attempt"] = json!(a.attempt);
        doc["http_status"] = json!(a.http_status);
        doc["duration_ms"] = json!(a.duration_ms);
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
    fn attempt_events_carry_lateness_and_the_attempt_in_the_emf_document() {
        let task = TaskId::new();
        let facts = AttemptFacts {
            task,
            attempt: 2,
            outcome: AttemptOutcome::Retrying,
            http_status: Some(503),
            lateness_ms: 42,
            duration_ms: 120,
        };
        let doc = emf_line(MetricEvent::Attempt(facts), 1_700_000_000_000);
        assert_eq!(doc["Retried"], 1);
        assert_eq!(doc["AttemptLateness"], 42);
        assert_eq!(doc["task"], task.to_string());
        assert_eq!(
            (doc["attempt"].clone(), doc["http_status"].clone()),
            (json!(2), json!(503))
        );
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
