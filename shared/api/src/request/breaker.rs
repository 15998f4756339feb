//! `/v1/breakers`: a tenant's circuit breaker settings, and a destination to open or close
//! by hand.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::refused::Refused;
use super::template::is_http_url;
use super::text::DurationText;
use boomerang_core::domain::limits::MAX_URL_LEN;
use boomerang_core::domain::{BreakerSettings, Destination};

/// When a destination's breaker opens, and how it is probed; a field left out keeps its
/// default.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"failures": 20, "span": "1m", "first_probe": "30s", "max_probe": "10m"}))]
pub struct BreakerSettingsRequest {
    /// Failed calls in a row that open it (1–10000; default 20). A call fails when it
    /// times out, cannot connect, or is answered 5xx, 408 or 429.
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 10000)]
    pub failures: Option<i64>,
    /// How long those failures must span at least (0s to 24h; default 1m).
    #[schema(value_type = Option<String>, example = "1m")]
    pub span: Option<DurationText>,
    /// The wait before the first probe (1s to 24h; default 30s); each failed probe
    /// doubles it.
    #[schema(value_type = Option<String>, example = "30s")]
    pub first_probe: Option<DurationText>,
    /// The longest wait between probes (`first_probe` to 24h; default 10m).
    #[schema(value_type = Option<String>, example = "10m")]
    pub max_probe: Option<DurationText>,
}

impl BreakerSettingsRequest {
    pub fn settings(self) -> Result<BreakerSettings, Refused> {
        let failures = match self.failures {
            Some(n) => Some(
                u32::try_from(n)
                    .map_err(|_| Refused::invalid("failures", "must be between 1 and 10000"))?,
            ),
            None => None,
        };
        Ok(BreakerSettings::new(
            failures,
            self.span.map(|d| d.value()),
            self.first_probe.map(|d| d.value()),
            self.max_probe.map(|d| d.value()),
        )?)
    }
}

/// A destination to open or close by hand.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"destination": "https://hooks.example.com"}))]
pub struct DestinationRequest {
    /// A URL of the destination (its scheme, host and port are what count).
    #[schema(value_type = String, required = true, min_length = 1, max_length = 2048)]
    pub destination: Option<String>,
}

impl DestinationRequest {
    pub fn destination(self) -> Result<Destination, Refused> {
        let url = self.destination.unwrap_or_default();
        let destination = Destination::of(&url);
        // A destination is a key where breakers are kept (a DynamoDB sort key: 1 KiB).
        if !is_http_url(&url) || url.len() > MAX_URL_LEN || destination.as_str().len() > 1000 {
            return Err(Refused::invalid(
                "destination",
                "must be an absolute http(s) URL with a host",
            ));
        }
        Ok(destination)
    }
}
