//! A tenant's flows as it sees them: listed with what waits in them, paused and resumed.
//! A flow exists as soon as a task names it; there is nothing to create.

use super::error::EngineError;
use super::state::Engine;
use crate::domain::{FlowKey, TenantId};
use crate::ports::{FlowFigures, FlowPorts};

/// One flow of a tenant, now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowState {
    pub key: FlowKey,
    /// Its tasks are held back until it is resumed.
    pub paused: bool,
    /// Tasks put off by its rate, its slots or its pause, not yet due again.
    pub waiting: u64,
    /// Calls holding one of its slots.
    pub in_flight: u64,
}

impl FlowState {
    fn of(figures: FlowFigures, paused: bool) -> Self {
        Self {
            key: figures.key,
            paused,
            waiting: figures.waiting,
            in_flight: figures.in_flight,
        }
    }
}

impl Engine {
    fn flow_ports(&self) -> Result<&FlowPorts, EngineError> {
        self.ports
            .store
            .flows
            .as_ref()
            .ok_or_else(crate::engine::tasks::no_flows)
    }

    /// The tenant's flows that are paused, have tasks waiting or calls in flight, by key.
    pub async fn flows(&self, tenant: &TenantId) -> Result<Vec<FlowState>, EngineError> {
        let Some(ports) = &self.ports.store.flows else {
            return Ok(Vec::new());
        };
        let now = self.ports.clock.now();
        let mut figures = ports.counters.figures(tenant, now).await?;
        let paused = ports.pauses.paused_flows(tenant).await?;
        for key in &paused {
            if !figures.iter().any(|f| &f.key == key) {
                figures.push(FlowFigures::none(key.clone()));
            }
        }
        figures.sort_by(|a, b| a.key.cmp(&b.key));
        let states = figures.into_iter().map(|f| {
            let is_paused = paused.contains(&f.key);
            FlowState::of(f, is_paused)
        });
        Ok(states.collect())
    }

    /// One of the tenant's flows (one no task named yet is simply empty).
    pub async fn flow(&self, tenant: &TenantId, key: &FlowKey) -> Result<FlowState, EngineError> {
        let ports = self.flow_ports()?;
        let now = self.ports.clock.now();
        let figures = ports.counters.flow_figures(tenant, key, now).await?;
        let paused = ports.pauses.flow_paused(tenant, key).await?;
        Ok(FlowState::of(figures, paused))
    }

    /// Pauses the tenant's flow `key`: its tasks wait (uncounted) until it is resumed;
    /// calls already made run to their end.
    pub async fn pause_flow(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
    ) -> Result<FlowState, EngineError> {
        let ports = self.flow_ports()?;
        ports.pauses.set_flow_paused(tenant, key, true).await?;
        self.flow(tenant, key).await
    }

    /// Resumes the tenant's flow `key` and wakes the tasks noted as waiting in it: each is
    /// armed for now, and its limits then decide as for any other.
    pub async fn resume_flow(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
    ) -> Result<FlowState, EngineError> {
        let ports = self.flow_ports()?;
        ports.pauses.set_flow_paused(tenant, key, false).await?;
        let now = self.ports.clock.now();
        let waiting = ports.counters.take_waiting(tenant, key, now).await?;
        let arms: Vec<_> = waiting.into_iter().map(|a| (a, now)).collect();
        for (result, (attempt, _)) in self
            .ports
            .timer
            .arm_many(&arms)
            .await
            .into_iter()
            .zip(&arms)
        {
            self.armed(attempt.task_id, attempt.attempt, result);
        }
        self.flow(tenant, key).await
    }
}
