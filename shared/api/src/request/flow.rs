//! `flow`: the limits a task shares with the tenant's other tasks of the same flow key (a
//! task's own, or a named policy's).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::refused::Refused;
use super::text::DurationText;
use boomerang_core::domain::FlowSpec;

/// `flow`: the flow key whose limits the task shares.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"key": "partner-api", "rate": 50, "period": "1s", "parallelism": 3}))]
pub struct FlowRequest {
    /// The flow's name (per tenant): 1–255 bytes, no control characters.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255,
             example = "partner-api")]
    pub key: Option<String>,
    /// The most tasks of the flow started per `period` (1–100000).
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 100000, example = 50)]
    pub rate: Option<i64>,
    /// The window `rate` counts in (1s to 24h; default 1s).
    #[schema(value_type = Option<String>, example = "1s")]
    pub period: Option<DurationText>,
    /// The most tasks of the flow in flight at once (1–1000).
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 1000, example = 3)]
    pub parallelism: Option<i64>,
}

impl FlowRequest {
    pub(crate) fn spec(self) -> Result<FlowSpec, Refused> {
        let Some(key) = self.key else {
            return Err(Refused::invalid("flow.key", "is required"));
        };
        let period = self.period.map(|p| p.value());
        Ok(FlowSpec::new(&key, self.rate, period, self.parallelism)?)
    }
}
