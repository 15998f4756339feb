//! A tenant's named policies as a registration uses them (`default` replaces the built-in
//! default), and the rule a policy must keep to be stored; they are kept as every
//! definition is ([`super::definitions`]).

use crate::domain::{DefinitionName, Invalid, Policy, TaskSpec, TenantId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;

/// Where a registration's retry policy comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum RetrySource {
    /// Given in the request (and already in the spec).
    #[default]
    Given,
    /// The tenant's policy of this name, copied into the task at registration: a later
    /// change of the policy affects new tasks only.
    Named(DefinitionName),
    /// None given: the tenant's `default` policy if it has one, else the built-in one.
    Default,
}

impl Engine {
    /// The tenant's policy a registration names, or its default one; `None`: keep the
    /// spec's.
    async fn policy_for(
        &self,
        tenant: &TenantId,
        from: &RetrySource,
    ) -> Result<Option<Policy>, EngineError> {
        match from {
            RetrySource::Given => Ok(None),
            RetrySource::Default => {
                let name = DefinitionName::default_name();
                self.find_definition(tenant, &name).await
            }
            RetrySource::Named(name) => match self.find_definition(tenant, name).await? {
                Some(policy) => Ok(Some(policy)),
                None => Err(Invalid::new(
                    "retry",
                    format!("no retry policy named `{name}` (PUT /v1/policies/{name})"),
                )
                .into()),
            },
        }
    }

    /// Applies the policy the registration uses, if any, to `spec`: its retries, and its
    /// flow unless the task gives its own.
    pub(in crate::engine) async fn apply_policy(
        &self,
        tenant: &TenantId,
        from: &RetrySource,
        spec: &mut TaskSpec,
    ) -> Result<(), EngineError> {
        if let Some(policy) = self.policy_for(tenant, from).await? {
            spec.retry = policy.retry;
            if spec.flow.is_none() {
                spec.flow = policy.flow;
            }
        }
        Ok(())
    }

    /// Stores the tenant's policy `name` (`default` replaces the built-in default for its
    /// new tasks).
    pub async fn put_policy(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
        policy: &Policy,
    ) -> Result<(), EngineError> {
        if policy.flow.is_some() && self.ports.store.flows.is_none() {
            return Err(no_flows());
        }
        Ok(self
            .ports
            .store
            .policies
            .put_definition(tenant, name, policy)
            .await?)
    }
}

/// A flow on a backend that keeps no flow counters.
pub(in crate::engine) fn no_flows() -> EngineError {
    Invalid::new("flow", "this backend does not keep flow limits").into()
}
