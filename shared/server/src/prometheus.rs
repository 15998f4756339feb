//! The local server's metrics: the engine's events counted in a Prometheus registry and
//! served as `GET /metrics` (text exposition), and the last hour of attempts for the
//! console (`boomerang_core::metrics::recent`). Each attempt still gets its log line.

use std::sync::Mutex;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use chrono::{DateTime, Utc};

use boomerang_core::domain::{AttemptOutcome, Status};
use boomerang_core::metrics::recent::{DeliveryWindow, RecentAttempts};
use boomerang_core::metrics::{
    outcome_name, DestinationFigures, LogMetrics, MetricEvent, Metrics, MetricsView,
};

type Labels = Vec<(&'static str, &'static str)>;
/// A destination's label: its scheme, host and port.
type DestinationLabel = Vec<(&'static str, String)>;

pub struct PrometheusMetrics {
    /// Locked only to encode (and for the task-count gauges set just before).
    registry: Mutex<Registry>,
    registered: Counter,
    delivered: Counter,
    retried: Counter,
    failed: Counter,
    canceled: Counter,
    attempts: Family<Labels, Counter>,
    lateness: Histogram,
    duration: Histogram,
    tasks: Family<Labels, Gauge>,
    in_flight: Gauge,
    commit_writes: Histogram,
    commit_seconds: Histogram,
    sweep_repaired: Counter,
    given_back: Counter,
    deferred: Counter,
    handed_to_slow_lane: Counter,
    breaker_changes: Family<Labels, Counter>,
    destination_in_flight: Family<DestinationLabel, Gauge>,
    destination_waiting: Family<DestinationLabel, Gauge>,
    destination_paused: Family<DestinationLabel, Gauge>,
    /// The last hour, for the console's live panel.
    recent: RecentAttempts,
}

impl Default for PrometheusMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl PrometheusMetrics {
    pub fn new() -> Self {
        let m = PrometheusMetrics {
            registry: Mutex::new(Registry::with_prefix("boomerang")),
            registered: Counter::default(),
            delivered: Counter::default(),
            retried: Counter::default(),
            failed: Counter::default(),
            canceled: Counter::default(),
            attempts: Family::default(),
            // 1 ms to ~65 s.
            lateness: Histogram::new(exponential_buckets(0.001, 2.0, 17)),
            duration: Histogram::new(exponential_buckets(0.001, 2.0, 17)),
            tasks: Family::default(),
            in_flight: Gauge::default(),
            // 1 to 512 writes per commit.
            commit_writes: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
            // 50 µs to ~1.6 s.
            commit_seconds: Histogram::new(exponential_buckets(0.00005, 2.0, 16)),
            sweep_repaired: Counter::default(),
            given_back: Counter::default(),
            deferred: Counter::default(),
            handed_to_slow_lane: Counter::default(),
            breaker_changes: Family::default(),
            destination_in_flight: Family::default(),
            destination_waiting: Family::default(),
            destination_paused: Family::default(),
            recent: RecentAttempts::default(),
        };
        m.register_all();
        m
    }

    fn register_all(&self) {
        let mut r = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        r.register("tasks_registered", "Tasks stored", self.registered.clone());
        r.register(
            "tasks_delivered",
            "Tasks whose callback succeeded",
            self.delivered.clone(),
        );
        r.register(
            "tasks_retried",
            "Failed attempts with another to follow",
            self.retried.clone(),
        );
        r.register(
            "tasks_failed",
            "Tasks that exhausted their retry policy",
            self.failed.clone(),
        );
        r.register("tasks_canceled", "Tasks canceled", self.canceled.clone());
        r.register(
            "attempts",
            "Attempts made, by outcome",
            self.attempts.clone(),
        );
        r.register(
            "attempt_lateness_seconds",
            "How long after its due time an attempt started",
            self.lateness.clone(),
        );
        r.register(
            "attempt_duration_seconds",
            "How long an attempt's HTTP call took",
            self.duration.clone(),
        );
        r.register(
            "tasks",
            "Tasks by state, counted in the store when scraped",
            self.tasks.clone(),
        );
        r.register(
            "deliveries_in_flight",
            "HTTP calls under way",
            self.in_flight.clone(),
        );
        self.register_store_and_destinations(&mut r);
    }

    /// The store's commits, the sweep, and the calls and destinations of the delivery
    /// layer (registered after the tasks', the order `/metrics` lists them in).
    fn register_store_and_destinations(&self, r: &mut Registry) {
        r.register(
            "store_commit_writes",
            "Writes committed together in one transaction",
            self.commit_writes.clone(),
        );
        r.register(
            "store_commit_seconds",
            "How long one commit took, from begin to its fsync",
            self.commit_seconds.clone(),
        );
        r.register(
            "sweep_repaired",
            "Lost or stalled work the sweep re-armed",
            self.sweep_repaired.clone(),
        );
        r.register(
            "calls_given_back",
            "Calls that never left this server (out of open files, ports or memory): no \
             attempt was counted, and each was made again",
            self.given_back.clone(),
        );
        r.register(
            "calls_deferred",
            "Attempts put off, uncounted, because their destination asked for a pause (429 or \
             503 with Retry-After) or their flow was over a limit",
            self.deferred.clone(),
        );
        r.register(
            "log_writes_dropped",
            "Log writes that failed (a full disk, a closed pipe) and were dropped",
            crate::log_writer::LOG_WRITES_DROPPED.clone(),
        );
        r.register(
            "attempts_to_slow_lane",
            "Attempts handed to the slow lane because their destination answered slowly of \
             late, so that they wait only among other slow calls",
            self.handed_to_slow_lane.clone(),
        );
        r.register(
            "breaker_changes",
            "Destinations' circuit breakers opened or closed (change=opened|closed)",
            self.breaker_changes.clone(),
        );
        r.register(
            "destination_in_flight",
            "Calls in flight to a destination (scheme, host and port)",
            self.destination_in_flight.clone(),
        );
        r.register(
            "destination_waiting",
            "Deliveries waiting for a slot of their destination",
            self.destination_waiting.clone(),
        );
        r.register(
            "destination_paused_seconds",
            "How much longer a destination is paused (it answered Retry-After)",
            self.destination_paused.clone(),
        );
    }
}

impl PrometheusMetrics {
    /// Shows the destinations now busy or paused, and no longer the ones that were.
    fn set_destinations(&self, destinations: &[DestinationFigures], now: DateTime<Utc>) {
        let families = [
            &self.destination_in_flight,
            &self.destination_waiting,
            &self.destination_paused,
        ];
        for family in families {
            family.clear();
        }
        for d in destinations {
            let label = vec![
                ("tenant", d.tenant.to_string()),
                ("destination", d.destination.to_string()),
            ];
            let paused = d.paused_until.map_or(0, |until| {
                until.signed_duration_since(now).num_seconds().max(1)
            });
            for (family, value) in
                families
                    .into_iter()
                    .zip([d.in_flight, d.waiting, paused as usize])
            {
                family.get_or_create(&label).set(value as i64);
            }
        }
    }
}

impl Metrics for PrometheusMetrics {
    fn record(&self, event: MetricEvent) {
        match event {
            MetricEvent::Registered { count } => {
                self.registered.inc_by(count as u64);
            }
            MetricEvent::Attempt(a) => {
                LogMetrics.record(event);
                let task_counter = match a.outcome {
                    AttemptOutcome::Succeeded => &self.delivered,
                    AttemptOutcome::Retrying => &self.retried,
                    AttemptOutcome::Failed => &self.failed,
                };
                task_counter.inc();
                self.attempts
                    .get_or_create(&vec![("outcome", outcome_name(a.outcome))])
                    .inc();
                self.lateness.observe(a.lateness_ms.max(0) as f64 / 1000.0);
                self.duration.observe(a.duration_ms as f64 / 1000.0);
                self.recent.record(a.started_at, a.outcome, a.lateness_ms);
            }
            MetricEvent::Canceled { count } => {
                self.canceled.inc_by(count as u64);
            }
            MetricEvent::DeliveryStarted => {
                self.in_flight.inc();
            }
            MetricEvent::DeliveryFinished => {
                self.in_flight.dec();
            }
            MetricEvent::StoreCommit { writes, micros } => {
                self.commit_writes.observe(writes as f64);
                self.commit_seconds.observe(micros as f64 / 1e6);
            }
            MetricEvent::GivenBack => {
                self.given_back.inc();
            }
            MetricEvent::Deferred => {
                self.deferred.inc();
            }
            MetricEvent::HandedToSlowLane => {
                self.handed_to_slow_lane.inc();
            }
            MetricEvent::BreakerOpened => {
                self.breaker_changes
                    .get_or_create(&vec![("change", "opened")])
                    .inc();
            }
            MetricEvent::BreakerClosed => {
                self.breaker_changes
                    .get_or_create(&vec![("change", "closed")])
                    .inc();
            }
            MetricEvent::SweepRepaired { count } => {
                self.sweep_repaired.inc_by(count as u64);
            }
            // The AWS functions' metric lines count these (`boomerang_aws::metric_lines`);
            // the local server logs them where they happen.
            MetricEvent::SetAside { .. }
            | MetricEvent::BucketCheckFailed
            | MetricEvent::RedriveFailed { .. } => {}
        }
    }
}

impl MetricsView for PrometheusMetrics {
    fn recent(&self, now: DateTime<Utc>) -> DeliveryWindow {
        self.recent.window(now)
    }

    fn exposition(
        &self,
        tasks_by_status: Option<&[(Status, u64)]>,
        destinations: &[DestinationFigures],
    ) -> String {
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        self.set_destinations(destinations, Utc::now());
        if let Some(counts) = tasks_by_status {
            for status in Status::ALL {
                let n = counts.iter().find(|(s, _)| *s == status).map_or(0, |c| c.1);
                self.tasks
                    .get_or_create(&vec![("status", status.as_str())])
                    .set(n as i64);
            }
        }
        let mut text = String::new();
        if let Err(e) = encode(&mut text, &registry) {
            // Writing into a String does not fail; were it to, the scrape is short.
            tracing::error!(error = %e, "encoding the metrics failed");
        }
        text
    }
}
