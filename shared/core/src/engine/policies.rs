//! A tenant's named retry policies: kept by the store, copied into a task at registration
//! (so a later change affects new tasks only); `default` replaces the built-in default.

use super::{Engine, EngineError, RetrySource};
use crate::domain::{PolicyName, RetryPolicy, TenantId};

impl Engine {
    /// The tenant's policy a registration names, or its default one; `None`: keep the
    /// spec's.
    pub(super) async fn retry_policy(
        &self,
        tenant: &TenantId,
        from: &RetrySource,
    ) -> Result<Option<RetryPolicy>, EngineError> {
        match from {
            RetrySource::Given => Ok(None),
            RetrySource::Default => {
                let name = PolicyName::default_policy();
                Ok(self.ports.policies.policy(tenant, &name).await?)
            }
            RetrySource::Named(name) => match self.ports.policies.policy(tenant, name).await? {
                Some(policy) => Ok(Some(policy)),
                None => Err(EngineError::Invalid {
                    field: "retry",
                    detail: format!("no retry policy named `{name}` (PUT /v1/policies/{name})"),
                }),
            },
        }
    }

    /// Stores the tenant's retry policy `name` (`default` replaces the built-in default
    /// for its new tasks).
    pub async fn put_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
        policy: &RetryPolicy,
    ) -> Result<(), EngineError> {
        Ok(self.ports.policies.put_policy(tenant, name, policy).await?)
    }

    pub async fn policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<RetryPolicy, EngineError> {
        self.ports
            .policies
            .policy(tenant, name)
            .await?
            .ok_or(EngineError::NotFound)
    }

    pub async fn delete_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<(), EngineError> {
        match self.ports.policies.delete_policy(tenant, name).await? {
            true => Ok(()),
            false => Err(EngineError::NotFound),
        }
    }

    pub async fn policies(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(PolicyName, RetryPolicy)>, EngineError> {
        Ok(self.ports.policies.policies(tenant).await?)
    }
}
