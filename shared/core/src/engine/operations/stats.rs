//! Readiness, figures and metrics, and authentication.

use crate::domain::{AttemptRef, Breaker, Destination, Status, TenantId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::metrics::{DeliveryWindow, DestinationFigures, MetricEvent};
use crate::ports::{StoreError, TenantsError};

/// A tenant's figures for the console ([`Engine::stats`]).
#[derive(Debug)]
pub struct Stats {
    /// Tasks by state; `None` where the store cannot count them cheaply (DynamoDB).
    pub counts: Option<Vec<(Status, u64)>>,
    /// The last hour of attempts, minute by minute; `None` where the server keeps no
    /// window (the Lambdas: CloudWatch has the figures there).
    pub deliveries: Option<DeliveryWindow>,
    /// The tenant's destinations with calls in flight or waiting, or paused, in this
    /// server; `None` where the server keeps no figures (a Lambda instance sees only its
    /// own few calls).
    pub destinations: Option<Vec<DestinationFigures>>,
    /// The tenant's open circuit breakers, by destination (kept in the store: every
    /// backend has them).
    pub open_breakers: Vec<(Destination, Breaker)>,
}

impl Engine {
    /// The backend's checks that fail now (`/readyz`); empty when it can take work.
    pub async fn unready(&self) -> Vec<crate::ports::Failing> {
        self.ports.readiness.failing().await
    }

    /// The destinations with calls in flight or waiting, or paused, as of now: `tenant`'s,
    /// or every tenant's.
    pub fn destinations(&self, tenant: Option<&TenantId>) -> Vec<DestinationFigures> {
        self.gate.figures(tenant, self.ports.clock.now())
    }

    /// How many deliveries wait in their destinations' queues, in all: work this process
    /// has in hand beyond its timer.
    pub fn queued_deliveries(&self) -> usize {
        self.gate.queued()
    }

    /// Whether attempt `at` waits in its destination's queue.
    pub fn is_queued(&self, at: &AttemptRef) -> bool {
        self.gate.is_queued(at)
    }

    /// Counts an event through the engine's metrics port (for work around the engine, such
    /// as the sweeper's redrive of failed timers).
    pub fn record(&self, event: MetricEvent) {
        self.ports.metrics.record(event);
    }

    /// The tenant an API key belongs to, if any.
    pub async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError> {
        self.ports.tenants.authenticate(api_key).await
    }

    /// The metrics as `GET /metrics` serves them (with the store's task counts by state
    /// where it can count them), or `None` where metrics go elsewhere.
    pub async fn metrics_exposition(&self) -> Result<Option<String>, EngineError> {
        let Some(view) = &self.ports.metrics_view else {
            return Ok(None);
        };
        let counts = self.count_by_status(None).await?;
        Ok(Some(
            view.exposition(counts.as_deref(), &self.destinations(None)),
        ))
    }

    /// Tasks by state, of one tenant or of all, where the store can count them.
    pub(in crate::engine) async fn count_by_status(
        &self,
        tenant: Option<&TenantId>,
    ) -> Result<Option<Vec<(Status, u64)>>, StoreError> {
        match &self.ports.store.counts {
            Some(counts) => Ok(Some(counts.count_by_status(tenant).await?)),
            None => Ok(None),
        }
    }

    /// A tenant's figures for the console: its tasks by state, where the store can count
    /// them, and the last hour of attempts, where the server keeps them.
    pub async fn stats(&self, tenant: &TenantId) -> Result<Stats, EngineError> {
        let counts = self.count_by_status(Some(tenant)).await?;
        let now = self.ports.clock.now();
        let deliveries = (self.ports.metrics_view.as_ref()).map(|view| view.recent(now));
        let destinations =
            (self.ports.metrics_view.as_ref()).map(|_| self.gate.figures(Some(tenant), now));
        let open_breakers = self.ports.store.breakers.open_breakers(tenant).await?;
        Ok(Stats {
            counts,
            deliveries,
            destinations,
            open_breakers,
        })
    }
}
