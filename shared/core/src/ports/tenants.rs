//! The tenant directory: who an API key belongs to, and each tenant's secrets and defaults.

use async_trait::async_trait;

use super::cause::Cause;
use super::signing_keys::SigningKeys;
use crate::domain::{AlertTarget, TenantId};

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
