//! A tenant's named definitions, policies and templates alike: stored, read, deleted and
//! listed the same way. A definition is copied into a task at registration, so changing
//! or deleting one affects tasks registered after the change only.

use std::sync::Arc;

use crate::domain::{BreakerSettings, DefinitionName, Policy, Template, TenantId};
use crate::engine::error::{EngineError, Missing};
use crate::engine::ports::StorePorts;
use crate::engine::state::Engine;
use crate::ports::{Definition, Definitions};

/// A definition the engine's store keeps, and where.
pub trait Stored: Definition {
    fn port(store: &StorePorts) -> &Arc<dyn Definitions<Self>>;
}

impl Stored for Policy {
    fn port(store: &StorePorts) -> &Arc<dyn Definitions<Self>> {
        &store.policies
    }
}

impl Stored for Template {
    fn port(store: &StorePorts) -> &Arc<dyn Definitions<Self>> {
        &store.templates
    }
}

impl Stored for BreakerSettings {
    fn port(store: &StorePorts) -> &Arc<dyn Definitions<Self>> {
        &store.breaker_settings
    }
}

impl Engine {
    fn definitions_of<D: Stored>(&self) -> &Arc<dyn Definitions<D>> {
        D::port(&self.ports.store)
    }

    /// The tenant's definition `name`, if it has one.
    pub async fn find_definition<D: Stored>(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<Option<D>, EngineError> {
        Ok(self.definitions_of::<D>().definition(tenant, name).await?)
    }

    /// The tenant's definition `name`; [`EngineError::NotFound`] if it has none.
    pub async fn definition<D: Stored>(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<D, EngineError> {
        self.find_definition(tenant, name)
            .await?
            .ok_or(EngineError::NotFound(Missing::Definition(D::KIND)))
    }

    pub async fn delete_definition<D: Stored>(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<(), EngineError> {
        match self
            .definitions_of::<D>()
            .delete_definition(tenant, name)
            .await?
        {
            true => Ok(()),
            false => Err(EngineError::NotFound(Missing::Definition(D::KIND))),
        }
    }

    /// The tenant's definitions of one kind, by name.
    pub async fn definitions<D: Stored>(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(DefinitionName, D)>, EngineError> {
        Ok(self.definitions_of::<D>().definitions(tenant).await?)
    }

    /// Stores the tenant's template `name`, as the API checked it (a flow only where the
    /// backend keeps flow limits: every task taking it would be refused otherwise).
    pub async fn put_template(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
        template: &Template,
    ) -> Result<(), EngineError> {
        if template.0.contains_key("flow") && self.ports.store.flows.is_none() {
            return Err(super::policies::no_flows());
        }
        Ok(self
            .ports
            .store
            .templates
            .put_definition(tenant, name, template)
            .await?)
    }
}
