//! A tenant's signing secrets: read, rotated and retired. Each change is the domain's
//! ([`SecretSet::rotate`], [`SecretSet::retire`]) written only over the set it was made
//! from, so two changes at once never lose one.

use std::time::Duration;

use crate::domain::{SecretId, SecretRefusal, SecretSet, SigningSecret, TenantId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::ports::ReplaceSecretsError;

/// Tries of a change that lost to another at the same moment.
const CHANGE_TRIES: usize = 5;

impl Engine {
    /// The tenant's signing secrets, newest first.
    pub async fn signing_secrets(&self, tenant: &TenantId) -> Result<SecretSet, EngineError> {
        let secrets = self.ports.tenants.signing_secrets(tenant).await?;
        secrets.ok_or(EngineError::NoTenant)
    }

    /// Adds a fresh secret that signs every delivery from now on; the others stay in force
    /// for at most `grace` more. Answers the new set (the fresh secret first).
    pub async fn rotate_signing_secret(
        &self,
        tenant: &TenantId,
        grace: Duration,
    ) -> Result<SecretSet, EngineError> {
        let fresh = SigningSecret::generate();
        self.change_secrets(tenant, |set, now| set.rotate(fresh.clone(), grace, now))
            .await
    }

    /// Stops signing with secret `id` at once.
    pub async fn retire_signing_secret(
        &self,
        tenant: &TenantId,
        id: &SecretId,
    ) -> Result<SecretSet, EngineError> {
        self.change_secrets(tenant, |set, now| set.retire(id, now))
            .await
    }

    async fn change_secrets(
        &self,
        tenant: &TenantId,
        change: impl Fn(&SecretSet, chrono::DateTime<chrono::Utc>) -> Result<SecretSet, SecretRefusal>,
    ) -> Result<SecretSet, EngineError> {
        let keys = &self.ports.tenants;
        for _ in 0..CHANGE_TRIES {
            let old = self.signing_secrets(tenant).await?;
            let new = change(&old, self.ports.clock.now()).map_err(EngineError::Secret)?;
            match keys.replace_signing_secrets(tenant, &old, &new).await {
                Ok(()) => {
                    tracing::info!(%tenant, in_force = new.signing(self.ports.clock.now()).len(), "signing secrets changed");
                    return Ok(new);
                }
                Err(ReplaceSecretsError::Changed) => continue,
                Err(ReplaceSecretsError::Fixed(why)) => return Err(EngineError::Fixed(why)),
                Err(ReplaceSecretsError::Unavailable(e)) => return Err(e.into()),
            }
        }
        Err(EngineError::Store(crate::ports::StoreError::Conflict))
    }
}
