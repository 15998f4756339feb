//! A tenant directory held in memory: one API key, one tenant, its signing secrets, and
//! optionally the tenant's alert destination and destination limit.

use std::sync::Mutex;

use async_trait::async_trait;

use crate::domain::{AlertTarget, SecretSet, SigningSecret, TenantId};
use crate::ports::{ReplaceSecretsError, SigningKeys, Tenants, TenantsError};

pub struct MemoryTenants {
    api_key: String,
    tenant: TenantId,
    secrets: Mutex<SecretSet>,
    alert: Option<AlertTarget>,
    destination_limit: Option<usize>,
}

impl MemoryTenants {
    pub fn new(api_key: &str, tenant: TenantId, secret: SigningSecret) -> Self {
        Self {
            api_key: api_key.to_string(),
            tenant,
            secrets: Mutex::new(SecretSet::single(secret, None)),
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

    async fn alert_target(&self, tenant: &TenantId) -> Result<Option<AlertTarget>, TenantsError> {
        Ok(self.alert.clone().filter(|_| tenant == &self.tenant))
    }

    async fn destination_limit(&self, tenant: &TenantId) -> Result<Option<usize>, TenantsError> {
        Ok(self.destination_limit.filter(|_| tenant == &self.tenant))
    }
}

#[async_trait]
impl SigningKeys for MemoryTenants {
    async fn signing_secrets(&self, tenant: &TenantId) -> Result<Option<SecretSet>, TenantsError> {
        let secrets = self.secrets.lock().expect("never poisoned");
        Ok((tenant == &self.tenant).then(|| secrets.clone()))
    }

    async fn replace_signing_secrets(
        &self,
        tenant: &TenantId,
        old: &SecretSet,
        new: &SecretSet,
    ) -> Result<(), ReplaceSecretsError> {
        let mut secrets = self.secrets.lock().expect("never poisoned");
        if tenant != &self.tenant {
            return Err(TenantsError(format!("no tenant {tenant}").into()).into());
        }
        if &*secrets != old {
            return Err(ReplaceSecretsError::Changed);
        }
        *secrets = new.clone();
        Ok(())
    }
}
