//! What the API shows of a tenant's signing secrets.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use boomerang_core::domain::{SecretEntry, SecretSet};

/// One signing secret in force.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"id": "3f2a9c0d1e4b5a67", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                          "created_at": "2030-01-01T09:00:00Z", "expires_at": null}))]
pub struct SigningSecretView {
    /// Names the secret (to retire it) without showing it.
    pub id: String,
    /// The secret, as Standard Webhooks libraries take it.
    pub secret: String,
    /// When it was added (`null` for a first secret kept from before rotation existed).
    pub created_at: Option<DateTime<Utc>>,
    /// When it stops signing deliveries (`null`: the newest, which never expires).
    pub expires_at: Option<DateTime<Utc>>,
}

/// The secrets in force, newest first: every delivery carries one signature from each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SigningSecretsView {
    pub secrets: Vec<SigningSecretView>,
}

impl SigningSecretsView {
    pub fn new(set: &SecretSet, now: DateTime<Utc>) -> Self {
        Self {
            secrets: set.in_force(now).map(SigningSecretView::from).collect(),
        }
    }
}

impl From<&SecretEntry> for SigningSecretView {
    fn from(entry: &SecretEntry) -> Self {
        Self {
            id: entry.id().to_string(),
            secret: entry.secret.expose(),
            created_at: entry.created_at,
            expires_at: entry.expires_at,
        }
    }
}
