//! A tenant's signing secrets, and their rotation without downtime.
//!
//! Deliveries carry one Standard Webhooks signature per secret in force (the
//! `webhook-signature` header holds them space-separated), so a receiver that knows any
//! one of them accepts the delivery. A rotation adds a new secret and gives the others a
//! grace period; a secret is retired when its grace period ends or when it is retired by
//! hand. The newest secret never expires, so a tenant always has one in force.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::tenant::SigningSecret;

/// The most secrets in force at once: a rotation past it is refused until one is retired.
pub const MAX_SECRETS: usize = 5;
/// How long the secrets a rotation replaces stay in force, unless the rotation says.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(24 * 3600);
/// The longest grace period a rotation may give.
pub const MAX_GRACE: Duration = Duration::from_secs(30 * 24 * 3600);

/// A secret's id: the first 8 bytes of the SHA-256 of its key, in hex. It names a secret
/// without revealing it, and is the same wherever the secret is kept (a secret kept before
/// ids existed has one too).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SecretId(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a signing secret's id is 16 hexadecimal digits")]
pub struct InvalidSecretId;

impl SecretId {
    pub fn of(secret: &SigningSecret) -> Self {
        let digest = Sha256::digest(secret.key());
        Self(digest[..8].iter().map(|b| format!("{b:02x}")).collect())
    }
}

impl FromStr for SecretId {
    type Err = InvalidSecretId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
        match hex {
            true => Ok(Self(s.to_ascii_lowercase())),
            false => Err(InvalidSecretId),
        }
    }
}

impl TryFrom<String> for SecretId {
    type Error = InvalidSecretId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<SecretId> for String {
    fn from(id: SecretId) -> Self {
        id.0
    }
}

impl fmt::Display for SecretId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One secret of a tenant's, and how long it stays in force.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretEntry {
    pub secret: SigningSecret,
    /// When it was added (unknown for a tenant's first secret kept before rotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// When it stops being used: the end of the grace period a rotation gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

impl SecretEntry {
    pub fn id(&self) -> SecretId {
        SecretId::of(&self.secret)
    }

    fn in_force(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_none_or(|end| end > now)
    }
}

/// A tenant's secrets, newest first; never empty, and its newest never expires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<SecretEntry>", into = "Vec<SecretEntry>")]
pub struct SecretSet {
    entries: Vec<SecretEntry>,
}

/// Why a change to a tenant's secrets is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretRefusal {
    #[error("{MAX_SECRETS} signing secrets are in force already: retire one first")]
    TooMany,
    #[error("no signing secret {0}")]
    Unknown(SecretId),
    #[error("{0} is the only signing secret in force: rotate first, then retire it")]
    OnlyOne(SecretId),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a tenant's signing secrets cannot be an empty list")]
pub struct EmptySecretSet;

impl SecretSet {
    /// A tenant's only secret.
    pub fn single(secret: SigningSecret, created_at: Option<DateTime<Utc>>) -> Self {
        Self {
            entries: vec![SecretEntry {
                secret,
                created_at,
                expires_at: None,
            }],
        }
    }

    /// The secrets kept in force at `now`, newest first.
    pub fn in_force(&self, now: DateTime<Utc>) -> impl Iterator<Item = &SecretEntry> {
        self.entries.iter().filter(move |e| e.in_force(now))
    }

    /// What deliveries at `now` are signed with, newest first.
    pub fn signing(&self, now: DateTime<Utc>) -> Vec<SigningSecret> {
        self.in_force(now).map(|e| e.secret.clone()).collect()
    }

    /// The secret every delivery is signed with, whatever the others.
    pub fn newest(&self) -> &SigningSecret {
        &self.entries[0].secret
    }

    /// Adds `fresh` as the newest secret; each other one in force stays so for at most
    /// `grace` more. Expired ones are dropped.
    pub fn rotate(
        &self,
        fresh: SigningSecret,
        grace: Duration,
        now: DateTime<Utc>,
    ) -> Result<Self, SecretRefusal> {
        let kept = self.pruned(now);
        if kept.len() >= MAX_SECRETS {
            return Err(SecretRefusal::TooMany);
        }
        let grace = chrono::Duration::from_std(grace.min(MAX_GRACE)).unwrap_or_default();
        let end = now + grace;
        let older = kept.into_iter().map(|e| SecretEntry {
            expires_at: Some(e.expires_at.map_or(end, |was| was.min(end))),
            ..e
        });
        let fresh = SecretEntry {
            secret: fresh,
            created_at: Some(now),
            expires_at: None,
        };
        let entries = std::iter::once(fresh).chain(older).collect();
        Ok(Self { entries })
    }

    /// Stops using secret `id` now. The last one in force cannot be retired; if the newest
    /// is retired, the newest left stays in force for good.
    pub fn retire(&self, id: &SecretId, now: DateTime<Utc>) -> Result<Self, SecretRefusal> {
        let kept = self.pruned(now);
        if !kept.iter().any(|e| &e.id() == id) {
            return Err(SecretRefusal::Unknown(id.clone()));
        }
        let mut left: Vec<SecretEntry> = kept.into_iter().filter(|e| &e.id() != id).collect();
        let Some(newest) = left.first_mut() else {
            return Err(SecretRefusal::OnlyOne(id.clone()));
        };
        newest.expires_at = None;
        Ok(Self { entries: left })
    }

    /// The entries in force at `now` (the newest always is).
    fn pruned(&self, now: DateTime<Utc>) -> Vec<SecretEntry> {
        self.in_force(now).cloned().collect()
    }
}

impl TryFrom<Vec<SecretEntry>> for SecretSet {
    type Error = EmptySecretSet;
    /// Kept lists come back as written; the newest is put in force for good whatever the
    /// list says, so that no reading leaves a tenant without a secret.
    fn try_from(mut entries: Vec<SecretEntry>) -> Result<Self, Self::Error> {
        let newest = entries.first_mut().ok_or(EmptySecretSet)?;
        newest.expires_at = None;
        Ok(Self { entries })
    }
}

impl From<SecretSet> for Vec<SecretEntry> {
    fn from(set: SecretSet) -> Self {
        set.entries
    }
}

#[cfg(test)]
mod tests;
