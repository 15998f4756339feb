//! What the API shows of a tenant's circuit breakers.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::task::human as human_duration;
use boomerang_core::domain::{Breaker, BreakerSettings, Destination};

/// One destination's breaker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"destination": "https://hooks.example.com:443", "state": "open",
                          "opened_at": "2030-01-01T09:00:00Z",
                          "next_probe_at": "2030-01-01T09:00:30Z", "probes_failed": 0,
                          "by_hand": false}))]
pub struct BreakerView {
    pub destination: String,
    /// `open` or `closed`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_at: Option<DateTime<Utc>>,
    /// When the next probe may go (`null` when opened by hand: no probe is made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_probe_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub probes_failed: u32,
    /// Opened by an operator: it stays open until an operator closes it.
    #[serde(default)]
    pub by_hand: bool,
}

impl BreakerView {
    pub fn new(destination: &Destination, breaker: &Breaker) -> Self {
        let closed = Self {
            destination: destination.to_string(),
            state: "closed".into(),
            opened_at: None,
            next_probe_at: None,
            probes_failed: 0,
            by_hand: false,
        };
        match breaker {
            Breaker::Closed { .. } => closed,
            Breaker::Open {
                opened_at,
                probe_at,
                probes_failed,
                by_hand,
                ..
            } => Self {
                state: "open".into(),
                opened_at: Some(*opened_at),
                next_probe_at: (!by_hand).then_some(*probe_at),
                probes_failed: *probes_failed,
                by_hand: *by_hand,
                ..closed
            },
        }
    }
}

/// A tenant's breaker settings, as they apply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BreakerSettingsView {
    pub failures: u32,
    #[schema(example = "1m")]
    pub span: String,
    #[schema(example = "30s")]
    pub first_probe: String,
    #[schema(example = "10m")]
    pub max_probe: String,
}

impl From<&BreakerSettings> for BreakerSettingsView {
    fn from(s: &BreakerSettings) -> Self {
        Self {
            failures: s.failures,
            span: human_duration(s.span),
            first_probe: human_duration(s.first_probe),
            max_probe: human_duration(s.max_probe),
        }
    }
}

/// `GET /v1/breakers`: the settings, and the open breakers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BreakersView {
    pub settings: BreakerSettingsView,
    pub open: Vec<BreakerView>,
}
