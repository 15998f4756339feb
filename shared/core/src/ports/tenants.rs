//! The tenant directory: who an API key belongs to, and each tenant's secrets and defaults
//! (its signing secrets kept, and changed, through [`SigningKeys`]).

use async_trait::async_trait;

use super::cause::Cause;
use crate::domain::{AlertTarget, SecretSet, TenantId};

#[derive(Debug, thiserror::Error)]
#[error("tenant directory unavailable: {0}")]
pub struct TenantsError(#[source] pub Cause);

/// A tenant directory keeps each tenant's signing secrets too ([`SigningKeys`]).
#[async_trait]
pub trait Tenants: SigningKeys + Send + Sync {
    /// The tenant an API key belongs to, if any.
    async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError>;

    /// Where the tenant's failure alerts go when a task names no destination of its own,
    /// if the tenant set one.
    async fn alert_target(&self, tenant: &TenantId) -> Result<Option<AlertTarget>, TenantsError>;

    /// The most calls the tenant's tasks make at once to one destination, if the tenant
    /// has a limit of its own (else the server's applies). Asked at every delivery: a
    /// directory that reads it from afar keeps a copy.
    async fn destination_limit(&self, tenant: &TenantId) -> Result<Option<usize>, TenantsError>;
}

/// Why a tenant's secrets were not replaced.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceSecretsError {
    /// They are no longer the ones read: read them again and redo the change.
    #[error("the signing secrets changed meanwhile")]
    Changed,
    /// This directory's secrets are set by its configuration and cannot change here.
    #[error("{0}")]
    Fixed(String),
    #[error(transparent)]
    Unavailable(#[from] TenantsError),
}

#[async_trait]
pub trait SigningKeys: Send + Sync {
    /// The tenant's signing secrets, if it is a tenant.
    async fn signing_secrets(&self, tenant: &TenantId) -> Result<Option<SecretSet>, TenantsError>;

    /// Replaces the tenant's secrets with `new` if they are still `old` (a conditional
    /// write: two changes at once never lose one).
    async fn replace_signing_secrets(
        &self,
        tenant: &TenantId,
        old: &SecretSet,
        new: &SecretSet,
    ) -> Result<(), ReplaceSecretsError>;
}
