//! `GET /v1/stats`: a tenant's figures, for the console's counts, live panel and
//! destinations.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::breaker::BreakerView;
use boomerang_core::domain::Status;
use boomerang_core::engine::Stats;
use boomerang_core::metrics::{DeliveryWindow, DestinationFigures, MinuteFigures};

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StatsView {
    /// Tasks by state, every state named; `null` where the store cannot count them
    /// cheaply (DynamoDB, on AWS).
    #[schema(example = json!({"held": 0, "scheduled": 12, "delivering": 1, "succeeded": 340,
                              "failed": 2, "canceled": 5}))]
    pub counts: Option<BTreeMap<String, u64>>,
    /// The last hour of attempts, minute by minute, oldest first; `null` where the server
    /// keeps no such window (the Lambdas: CloudWatch has these figures on AWS).
    pub deliveries: Option<DeliveryWindowView>,
    /// Your destinations with calls in flight or waiting, or paused, by destination;
    /// `null` where the server keeps no such figures (the Lambdas).
    pub destinations: Option<Vec<DestinationView>>,
    /// Your destinations whose circuit breaker is open: nothing but its probe is sent
    /// to them.
    #[serde(default)]
    pub open_breakers: Vec<BreakerView>,
}

/// One destination (scheme, host and port) of yours, now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"destination": "https://hooks.example.com", "limit": 16,
                          "in_flight": 16, "waiting": 240, "paused_until": null}))]
pub struct DestinationView {
    pub destination: String,
    /// The most calls in flight to it at once (yours, else the server's).
    pub limit: usize,
    pub in_flight: usize,
    /// Deliveries waiting for one of its slots.
    pub waiting: usize,
    /// It answered 429 or 503 with `Retry-After`: nothing is sent to it until then.
    pub paused_until: Option<DateTime<Utc>>,
}

impl From<DestinationFigures> for DestinationView {
    fn from(d: DestinationFigures) -> Self {
        Self {
            destination: d.destination.to_string(),
            limit: d.limit,
            in_flight: d.in_flight,
            waiting: d.waiting,
            paused_until: d.paused_until,
        }
    }
}

impl StatsView {
    pub fn new(stats: Stats) -> Self {
        let counts = stats.counts.map(|counts| {
            Status::ALL
                .iter()
                .map(|status| {
                    let n = counts
                        .iter()
                        .filter(|(s, _)| s == status)
                        .map(|(_, n)| n)
                        .sum();
                    (status.as_str().to_string(), n)
                })
                .collect()
        });
        Self {
            counts,
            deliveries: stats.deliveries.map(DeliveryWindowView::from),
            destinations: (stats.destinations)
                .map(|all| all.into_iter().map(DestinationView::from).collect()),
            open_breakers: (stats.open_breakers.iter())
                .map(|(destination, breaker)| BreakerView::new(destination, breaker))
                .collect(),
        }
    }
}

/// What the window holds now: one entry per minute, oldest first, and the hour's
/// lateness percentiles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DeliveryWindowView {
    pub minutes: Vec<MinuteView>,
    /// Of every attempt in the window (`null` without attempts): the upper bound of the
    /// lateness bucket the percentile falls in.
    pub lateness_p50_ms: Option<i64>,
    pub lateness_p99_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MinuteView {
    /// The minute's start.
    pub at: DateTime<Utc>,
    pub attempts: u64,
    pub succeeded: u64,
    /// Attempts that failed, whether retried or final.
    pub failed: u64,
    pub lateness_p50_ms: Option<i64>,
    pub lateness_p99_ms: Option<i64>,
}

impl From<DeliveryWindow> for DeliveryWindowView {
    fn from(w: DeliveryWindow) -> Self {
        Self {
            minutes: w.minutes.into_iter().map(MinuteView::from).collect(),
            lateness_p50_ms: w.lateness_p50_ms,
            lateness_p99_ms: w.lateness_p99_ms,
        }
    }
}

impl From<MinuteFigures> for MinuteView {
    fn from(m: MinuteFigures) -> Self {
        Self {
            at: m.at,
            attempts: m.attempts,
            succeeded: m.succeeded,
            failed: m.failed,
            lateness_p50_ms: m.lateness_p50_ms,
            lateness_p99_ms: m.lateness_p99_ms,
        }
    }
}
