//! The local binary's tenant directory: one API key, one tenant, its signing secrets.

use std::path::PathBuf;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use super::credentials;
use boomerang_core::domain::{AlertTarget, SecretSet, SigningSecret, TenantId};
use boomerang_core::ports::{ReplaceSecretsError, SigningKeys, Tenants, TenantsError};

/// Where the tenant's secrets live, and so whether they can change.
#[derive(Clone, Debug)]
pub enum SecretsKept {
    /// In this process only (tests): a rotation lasts until it ends.
    InMemory,
    /// In the data directory's credentials file: a rotation is written there first.
    File(PathBuf),
    /// Set by the server's configuration (`--signing-secret`): they cannot change.
    Fixed,
}

pub struct StaticTenants {
    key_digest: [u8; 32],
    tenant: TenantId,
    secrets: Mutex<SecretSet>,
    kept: SecretsKept,
}

impl StaticTenants {
    /// One tenant with one secret, kept in memory.
    pub fn new(api_key: &str, tenant: TenantId, secret: SigningSecret) -> Self {
        Self::with_secrets(
            api_key,
            tenant,
            SecretSet::single(secret, None),
            SecretsKept::InMemory,
        )
    }

    pub fn with_secrets(
        api_key: &str,
        tenant: TenantId,
        secrets: SecretSet,
        kept: SecretsKept,
    ) -> Self {
        Self {
            key_digest: Sha256::digest(api_key.as_bytes()).into(),
            tenant,
            secrets: Mutex::new(secrets),
            kept,
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

#[async_trait]
impl SigningKeys for StaticTenants {
    async fn signing_secrets(&self, tenant: &TenantId) -> Result<Option<SecretSet>, TenantsError> {
        let secrets = self.secrets.lock().await;
        Ok((tenant == &self.tenant).then(|| secrets.clone()))
    }

    async fn replace_signing_secrets(
        &self,
        tenant: &TenantId,
        old: &SecretSet,
        new: &SecretSet,
    ) -> Result<(), ReplaceSecretsError> {
        let mut secrets = self.secrets.lock().await;
        if tenant != &self.tenant {
            return Err(TenantsError(format!("no tenant {tenant}").into()).into());
        }
        if &*secrets != old {
            return Err(ReplaceSecretsError::Changed);
        }
        match &self.kept {
            SecretsKept::InMemory => {}
            SecretsKept::File(path) => {
                let (path, new) = (path.clone(), new.clone());
                let saved =
                    tokio::task::spawn_blocking(move || credentials::save_secrets(&path, &new))
                        .await
                        .map_err(|e| TenantsError(e.into()))?;
                saved.map_err(|e| TenantsError(e.into()))?;
            }
            SecretsKept::Fixed => {
                return Err(ReplaceSecretsError::Fixed(
                    "this server's signing secret is set by --signing-secret: start it \
                     without that flag to rotate"
                        .into(),
                ))
            }
        }
        *secrets = new.clone();
        Ok(())
    }
}
