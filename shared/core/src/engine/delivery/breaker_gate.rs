//! Each destination's circuit breaker, around the call (see [`crate::domain::breaker`]).
//! Before a call, the breaker shared by every instance (read again every couple of
//! seconds) says whether to call: an open one puts the attempt off, re-armed and using
//! up no attempt, until its probe is due; the delivery that finds the probe due claims it
//! by a conditional write and calls. After a call, a probe's health moves the shared
//! breaker (a success closes it); any other call's is counted in this process's lane,
//! and its failures in a row open the shared breaker. Opening and closing each raise an
//! operational alert once, whoever wrote the change.

use chrono::{DateTime, Utc};

use super::deliver::Place;
use super::outcome::Step;
use crate::domain::breaker::{breaker_alert_key, breaker_alert_spec};
use crate::domain::{
    Admission, AttemptRef, Breaker, BreakerAlertBody, BreakerChange, BreakerSettings, CallHealth,
    DefinitionName, Destination, Task, TenantId,
};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::engine::tasks::{FireTime, NewTask, RetrySource};
use crate::metrics::MetricEvent;
use crate::ports::{StoredBreaker, WebhookError, WebhookResult};

/// How long a breaker read stays this process's view of it.
const BREAKER_FRESH: chrono::Duration = chrono::Duration::seconds(2);
/// How soon a delivery that lost the probe to another looks again.
const PROBE_LOST_RETRY: chrono::Duration = chrono::Duration::seconds(5);

/// What the breaker let an attempt do: call, or call as the probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::engine) struct BreakerPass {
    pub(in crate::engine) probe: bool,
}

impl Engine {
    /// The breaker's word before a call: go (as the probe, if this delivery claimed it),
    /// or [`super::DeliverOutcome::Deferred`] until it may.
    pub(in crate::engine) async fn pass_breaker(
        &self,
        at: &AttemptRef,
        task: &Task,
        place: &Place,
    ) -> Result<Step<BreakerPass>, EngineError> {
        let go = Step::Continue(BreakerPass { probe: false });
        let now = self.ports.clock.now();
        let Some(stored) = self.shared_breaker(task, place, now).await? else {
            return Ok(go);
        };
        let mut breaker = stored.breaker.clone();
        match breaker.admit(now) {
            Admission::Call => Ok(go),
            Admission::Wait(until) => Ok(Step::Done(self.defer(at.clone(), until).await?)),
            Admission::Probe => {
                let claimed = self.ports.store.breakers.save_breaker(
                    &task.tenant,
                    &place.destination,
                    &breaker,
                    Some(stored.version),
                );
                let claimed = claimed.await?;
                place.lane.forget_breaker();
                if claimed {
                    tracing::info!(destination = %place.destination, task = %task.id, "probing an open destination");
                    return Ok(Step::Continue(BreakerPass { probe: true }));
                }
                let again = now + PROBE_LOST_RETRY;
                Ok(Step::Done(self.defer(at.clone(), again).await?))
            }
        }
    }

    /// The shared breaker of the task's destination, as this process last read it within
    /// [`BREAKER_FRESH`]; `None` while it is closed.
    async fn shared_breaker(
        &self,
        task: &Task,
        place: &Place,
        now: DateTime<Utc>,
    ) -> Result<Option<StoredBreaker>, EngineError> {
        let stored = match place.lane.cached_breaker(now, BREAKER_FRESH) {
            Some(cached) => cached,
            None => {
                let breakers = &self.ports.store.breakers;
                let read = breakers.breaker(&task.tenant, &place.destination).await?;
                place.lane.cache_breaker(read.clone(), now);
                read
            }
        };
        Ok(stored.filter(|s| s.breaker.is_open()))
    }

    /// Tells the breaker how the call went. A failure here is logged: the breaker is a
    /// guard, and the attempt's own record is what must be written.
    pub(in crate::engine) async fn note_breaker(
        &self,
        task: &Task,
        place: &Place,
        result: &WebhookResult,
        pass: BreakerPass,
    ) {
        // A call this server refused to make (a forbidden address) says nothing of the
        // receiver.
        if let Some(WebhookError::Refused(_)) = result.error {
            return;
        }
        let health = CallHealth::of(result.status);
        let noted = match pass.probe {
            true => self.settle_probe(task, &place.destination, health).await,
            false => self.count_call(task, place, health).await,
        };
        if let Err(e) = noted {
            tracing::warn!(destination = %place.destination, error = %e, "noting a call in its breaker failed");
        }
    }

    /// A call that was not a probe, counted in this process; failures in a row that open
    /// the count open the shared breaker (unless it already is).
    async fn count_call(
        &self,
        task: &Task,
        place: &Place,
        health: CallHealth,
    ) -> Result<(), EngineError> {
        if health == CallHealth::Up && !place.lane.failing() {
            return Ok(());
        }
        let settings = self.breaker_settings(&task.tenant).await?;
        let now = self.ports.clock.now();
        let Some(opened) = place.lane.count_call(health, now, &settings) else {
            return Ok(());
        };
        let destination = &place.destination;
        let breakers = &self.ports.store.breakers;
        let stored = breakers.breaker(&task.tenant, destination).await?;
        if stored.as_ref().is_some_and(|s| s.breaker.is_open()) {
            return Ok(());
        }
        let version = stored.map(|s| s.version);
        self.change_breaker(
            &task.tenant,
            destination,
            &opened,
            version,
            BreakerChange::Opened,
        )
        .await?;
        place.lane.forget_breaker();
        Ok(())
    }

    /// The probe's health, written to the shared breaker: a success closes it.
    async fn settle_probe(
        &self,
        task: &Task,
        destination: &Destination,
        health: CallHealth,
    ) -> Result<(), EngineError> {
        let settings = self.breaker_settings(&task.tenant).await?;
        let breakers = &self.ports.store.breakers;
        let Some(stored) = breakers.breaker(&task.tenant, destination).await? else {
            return Ok(());
        };
        let mut breaker = stored.breaker;
        let now = self.ports.clock.now();
        let change = breaker.on_call(health, true, now, &settings);
        match change {
            Some(change) => {
                let version = Some(stored.version);
                let changed =
                    self.change_breaker(&task.tenant, destination, &breaker, version, change);
                changed.await.map(|_| ())
            }
            None => {
                let saved = breakers.save_breaker(
                    &task.tenant,
                    destination,
                    &breaker,
                    Some(stored.version),
                );
                saved.await.map(|_| ()).map_err(Into::into)
            }
        }
    }

    /// Writes a breaker that opened or closed, conditionally on the version read; the one
    /// writer that wins raises the alert and counts it.
    pub(in crate::engine) async fn change_breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        breaker: &Breaker,
        version: Option<u64>,
        change: BreakerChange,
    ) -> Result<bool, EngineError> {
        let saved = self
            .ports
            .store
            .breakers
            .save_breaker(tenant, destination, breaker, version);
        if !saved.await? {
            return Ok(false);
        }
        let written = version.map_or(1, |v| v + 1);
        let event = match change {
            BreakerChange::Opened => MetricEvent::BreakerOpened,
            BreakerChange::Closed => MetricEvent::BreakerClosed,
        };
        self.record(event);
        tracing::warn!(%tenant, %destination, change = ?change, "circuit breaker changed");
        self.raise_breaker_alert(tenant, destination, breaker, change, written)
            .await;
        Ok(true)
    }

    /// The tenant's breaker settings, or the defaults.
    pub async fn breaker_settings(
        &self,
        tenant: &TenantId,
    ) -> Result<BreakerSettings, EngineError> {
        let name = DefinitionName::default_name();
        Ok(self
            .find_definition(tenant, &name)
            .await?
            .unwrap_or_default())
    }

    /// Registers the change's operational alert to the tenant's alert destination (else
    /// the server's); none configured, none sent. A failure is logged: the change stands.
    async fn raise_breaker_alert(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        breaker: &Breaker,
        change: BreakerChange,
        version: u64,
    ) {
        let target = match self.ports.tenants.alert_target(tenant).await {
            Ok(Some(target)) => Some(target),
            Ok(None) => self.settings.alert.clone(),
            Err(e) => {
                tracing::error!(%tenant, error = %e, "reading the tenant's alert destination failed; no breaker alert");
                return;
            }
        };
        let Some(target) = target else {
            return;
        };
        let now = self.ports.clock.now();
        let body = BreakerAlertBody::new(destination, change, breaker, now);
        let new = NewTask {
            spec: breaker_alert_spec(&target, &body),
            retry_from: RetrySource::Default,
            when: FireTime::Now,
            idempotency_key: Some(breaker_alert_key(destination, version)),
            request_hash: "breaker-alert".into(),
        };
        let registered = match self.prepare(tenant, new).await {
            Ok(prepared) => self.register_prepared(prepared).await,
            Err(e) => Err(e),
        };
        if let Err(e) = registered {
            tracing::error!(%tenant, %destination, error = %e, "could not register the breaker alert");
        }
    }
}
