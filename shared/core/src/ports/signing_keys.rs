//! Where each tenant's signing secrets are kept, and changed.

use async_trait::async_trait;

use super::tenants::TenantsError;
use crate::domain::{SecretSet, TenantId};

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
