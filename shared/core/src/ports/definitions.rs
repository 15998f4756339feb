//! A tenant's named definitions: its retry policies, task templates and breaker settings, each kept as a
//! document under a name, by one store capability written once for every kind.

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::store::StoreError;
use crate::domain::{BreakerSettings, DefinitionName, Policy, Template, TenantId};

/// What a tenant can name and keep: a store keeps each kind apart (its own table, its own
/// key prefix), so a policy and a template may share a name.
pub trait Definition: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    const KIND: DefinitionKind;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefinitionKind {
    Policy,
    Template,
    /// A tenant's circuit breaker settings (only `default`, for every destination).
    BreakerSettings,
}

impl DefinitionKind {
    /// The word for it, in keys and messages (`policy`).
    pub fn as_str(self) -> &'static str {
        match self {
            DefinitionKind::Policy => "policy",
            DefinitionKind::Template => "template",
            DefinitionKind::BreakerSettings => "breaker settings",
        }
    }
}

impl Definition for Policy {
    const KIND: DefinitionKind = DefinitionKind::Policy;
}

impl Definition for Template {
    const KIND: DefinitionKind = DefinitionKind::Template;
}

impl Definition for BreakerSettings {
    const KIND: DefinitionKind = DefinitionKind::BreakerSettings;
}

/// Each tenant's definitions of one kind, by name.
#[async_trait]
pub trait Definitions<D: Definition>: Send + Sync {
    /// Stores the tenant's definition `name`, replacing one of that name.
    async fn put_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
        doc: &D,
    ) -> Result<(), StoreError>;

    /// The tenant's definition `name`, if there is one.
    async fn definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<Option<D>, StoreError>;

    /// Removes the tenant's definition `name`; whether there was one.
    async fn delete_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<bool, StoreError>;

    /// The tenant's definitions, by name.
    async fn definitions(&self, tenant: &TenantId) -> Result<Vec<(DefinitionName, D)>, StoreError>;
}
