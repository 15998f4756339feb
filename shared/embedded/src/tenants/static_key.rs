//! The local binary's tenant directory: one API key, one tenant, one signing secret.

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use boomerang_core::domain::{AlertTarget, SigningSecret, TenantId};
use boomerang_core::ports::{Tenants, TenantsError};

pub struct StaticTenants {
    key_digest: [u8; 32],
    tenant: TenantId,
    secret: SigningSecret,
}

impl StaticTenants {
    pub fn new(api_key: &str, tenant: TenantId, secret: SigningSecret) -> Self {
        Self {
            key_digest: Sha256::digest(api_key.as_bytes()).into(),
            tenant,
            secret,
        }
    }
}

#[async_trait]
impl Tenants for StaticTenants {
    async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError> {
        // Comparing digests keeps the comparison time independent of the key's content.
        let digest: [u8; 32] = Sha256::digest(api_key.as_bytes()).into();
        Ok((digest == self.key_digest).then(|| self.tenant.clone()))
    }

    async fn signing_secret(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<SigningSecret>, TenantsError> {
        Ok((tenant == &self.tenant).then(|| self.secret.clone()))
    }

    /// The local server has one tenant and no per-tenant settings: its default alert
    /// destination is the server's (`--alert-url`).
    async fn alert_target(&self, _tenant: &TenantId) -> Result<Option<AlertTarget>, TenantsError> {
        Ok(None)
    }

    /// Likewise its destination limit is the server's (`--destination-limit`).
    async fn destination_limit(&self, _tenant: &TenantId) -> Result<Option<usize>, TenantsError> {
        Ok(None)
    }
}
