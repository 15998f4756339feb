//! `POST /v1/signing-secrets`: a rotation, and how long the secrets it replaces stay.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::refused::Refused;
use super::text::DurationText;
use boomerang_core::domain::invalid::within;
use boomerang_core::domain::signing_secrets::{DEFAULT_GRACE, MAX_GRACE};

/// A rotation: a new secret signs every delivery from now on, next to the ones in force.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"grace_period": "24h"}))]
pub struct RotationRequest {
    /// How long the secrets in force now go on signing deliveries beside the new one
    /// (0s to 30d; default 24h): the time your receivers have to switch.
    #[schema(value_type = Option<String>, example = "24h")]
    pub grace_period: Option<DurationText>,
}

impl RotationRequest {
    pub fn grace(self) -> Result<Duration, Refused> {
        let grace = self.grace_period.map_or(DEFAULT_GRACE, |d| d.value());
        Ok(within("grace_period", grace, Duration::ZERO, MAX_GRACE)?)
    }
}
