//! What the engine counts, behind a port. Each backend records the events its own way: the
//! Lambdas print them as lines for the stack's metric filters (`boomerang_aws::metric_lines`);
//! the local server counts them in a Prometheus registry (`boomerang_server::prometheus`,
//! through [`MetricsView`]) and logs one line per attempt.

pub mod recent;

use chrono::{DateTime, Utc};

use crate::domain::{AttemptOutcome, Destination, Status, TaskId, TenantId};
pub use recent::{DeliveryWindow, MinuteFigures};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricEvent {
    /// Tasks were stored (one registration, or the new tasks of a batch).
    Registered {
        count: usize,
    },
    /// An attempt ended: it succeeded, it failed and another follows, or the task failed.
    Attempt(AttemptFacts),
    /// The sweeper re-armed lost or stalled work.
    SweepRepaired {
        count: usize,
    },
    /// Tasks were canceled (by the caller, or by a held task's check).
    Canceled {
        count: usize,
    },
    /// An attempt's HTTP call began; [`MetricEvent::DeliveryFinished`] follows it.
    DeliveryStarted,
    DeliveryFinished,
    /// A call never left this machine (it ran out of open files, ports or memory): no
    /// attempt (or check) was made, and it is made again shortly.
    GivenBack,
    /// An attempt was put off, unclaimed and uncounted, because its destination asked for
    /// a pause (429 or 503 with `Retry-After`) or its flow was over a limit.
    Deferred,
    /// An attempt whose destination answered slowly of late was handed to the slow lane.
    HandedToSlowLane,
    /// A destination's circuit breaker opened (by its failures, or by hand).
    BreakerOpened,
    /// A destination's circuit breaker closed (by a probe's success, or by hand).
    BreakerClosed,
    /// Stored items the sweep or a bucket's fire could not read were passed over (logged
    /// with their keys), so that they stop no pass: an operator's to look at.
    SetAside {
        count: usize,
    },
    /// The check of the minutes' bucket fires failed; the next run checks the same
    /// minutes again.
    BucketCheckFailed,
    /// Timers in the system-failures queue could not be handed back (or the queue could
    /// not be read); they stay there for the next run.
    RedriveFailed {
        count: usize,
    },
    /// The embedded store committed `writes` writes in one transaction, in `micros`.
    StoreCommit {
        writes: usize,
        micros: u64,
    },
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
    pub started_at: DateTime<Utc>,
}

/// What the gate shows of one destination (the engine's gate).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestinationFigures {
    /// Whose calls these are: each tenant has its own places at a destination.
    pub tenant: TenantId,
    pub destination: Destination,
    /// Most calls in flight to it at once (the tenant's limit, else the server's).
    pub limit: usize,
    /// Calls in flight to it.
    pub in_flight: usize,
    /// Deliveries waiting for one of its slots.
    pub waiting: usize,
    /// Until when it is paused (it asked for it with `Retry-After`).
    pub paused_until: Option<DateTime<Utc>>,
}

/// Counts the engine's events.
pub trait Metrics: Send + Sync {
    fn record(&self, event: MetricEvent);
}

/// What a server that keeps its metrics can show of them (the local server; the Lambdas
/// print lines instead, and have no such capability).
pub trait MetricsView: Send + Sync {
    /// The metrics as a scrape answers them (Prometheus text exposition), with the
    /// store's task counts by state where it can count them, and the destinations that
    /// have calls in flight or waiting, or are paused.
    fn exposition(
        &self,
        tasks_by_status: Option<&[(Status, u64)]>,
        destinations: &[DestinationFigures],
    ) -> String;

    /// The last hour of attempts up to `now` ([`recent`]).
    fn recent(&self, now: DateTime<Utc>) -> DeliveryWindow;
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

pub fn outcome_name(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Succeeded => "succeeded",
        AttemptOutcome::Retrying => "retrying",
        AttemptOutcome::Failed => "failed",
    }
}
