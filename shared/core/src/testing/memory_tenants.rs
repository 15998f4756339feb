//! A tenant directory held in memory: one API key, one tenant, one signing secret, and
//! optionally the tenant's alert destination and destination limit.

use async_trait::async_trait;

use crate::domain::{AlertTarget, SigningSecret, TenantId};
use crate::ports::{Tenants, TenantsError};

pub struct MemoryTenants {
    api_key: String,
    tenant: TenantId,
    secret: SigningSecret,
    alert: Option<AlertTarget>,
    destination_limit: Option<usize>,
}

impl MemoryTenants {
    pub fn new(api_key: &str, tenant: TenantId, secret: SigningSecret) -> Self {
        Self {
            api_key: api_key.to_string(),
            tenant,
            secret,
            alert: None,
            destination_limit: None,
        }
    }

    /// The tenant's default alert destination.
    pub fn with_alert(mut self, alert: AlertTarget) -> Self {
        self.alert = Some(alert);
        self
    }

    /// The tenant's own limit of calls at once to one destination.
    pub fn with_destination_limit(mut self, limit: usize) -> Self {
        self.destination_limit = Some(limit);
        self
    }
}

#[async_trait]
impl Tenants for MemoryTenants {
    async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError> {
        Ok((api_key == self.api_key).then(|| self.tenant.clone()))
    }

    async fn signing_secret(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<SigningSecret>, TenantsError> {
        Ok((tenant == &self.tenant).then(|| self.secret.clone()))
    }

    async fn alert_target(&self, tenant: &TenantId) -> Result<Option<AlertTarget>, TenantsError> {
        Ok(self.alert.clone().filter(|_| tenant == &self.tenant))
    }

    async fn destination_limit(&self, tenant: &TenantId) -> Result<Option<usize>, TenantsError> {
        Ok(self.destination_limit.filter(|_| tenant == &self.tenant))
    }
}
