//! The tenant directory: who an API key belongs to, and each tenant's secrets and defaults.

use async_trait::async_trait;

use super::Cause;
use crate::domain::{AlertTarget, SigningSecret, TenantId};

#[derive(Debug, thiserror::Error)]
#[error("tenant directory unavailable: {0}")]
pub struct TenantsError(#[source] pub Cause);

#[async_trait]
pub trait Tenants: Send + Sync {
    /// The tenant an API key belongs to, if any.
    async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError>;

    async fn signing_secret(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<SigningSecret>, TenantsError>;

    /// Where the tenant's failure alerts go when a task names no destination of its own,
    /// if the tenant set one.
    async fn alert_target(&self, tenant: &TenantId) -> Result<Option<AlertTarget>, TenantsError>;
}
