//! Each destination's circuit breaker, around the call (see [`crate::domain::breaker`]).
//! Before a call, the breaker shared by every instance (read again every couple of
//! seconds) says whether to call: an open one puts the attempt off, re-armed and using
//! up no attempt, until its probe is due; the delivery that finds the probe due claims it
//! by a conditional write and calls (a probe claimed for a call that is then not made is
//! given back). After the attempt is written, a probe's health moves the shared breaker
//! (a success closes it); any other call's is counted in this process's lane, and its
//! failures in a row open the shared breaker. Opening and closing each raise an
//! operational alert once, whoever wrote the change.
//!
//! The breaker is a guard, not a custodian: a store that cannot be read or written for it
//! is logged and the call goes on as if it were closed.

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
use crate::ports::{StoreError, StoredBreaker, WebhookError, WebhookResult};

/// How long a breaker read stays this process's view of it.
const BREAKER_FRESH: chrono::Duration = chrono::Duration::seconds(2);
/// How soon a delivery that lost the probe to another looks again.
const PROBE_LOST_RETRY: chrono::Duration = chrono::Duration::seconds(5);

/// The health a call showed its breaker; `None` where it never reached the receiver (the
/// server refused the address, the call was never signed, or it never left this
/// machine).
pub(in crate::engine) fn breaker_health(result: &WebhookResult) -> Option<CallHealth> {
    match result.error {
        Some(WebhookError::Refused(_) | WebhookError::Local(_) | WebhookError::NotSent(_)) => None,
        _ => Some(CallHealth::of(result.status)),
    }
}

impl Engine {
    /// The breaker's word before the other gates: go (`Some(version)`: the probe is due,
    /// and this delivery may claim it from that version, once the other gates let it
    /// through), or [`super::DeliverOutcome::Deferred`] until it may. Asked first, so that
    /// a delivery the breaker holds back takes no destination slot and spends no start of
    /// its flow's rate.
    pub(in crate::engine) async fn breaker_admission(
        &self,
        at: &AttemptRef,
        task: &Task,
        place: &Place,
    ) -> Result<Step<Option<u64>>, EngineError> {
        let now = self.ports.clock.now();
        let Some(stored) = self.shared_breaker(task, place, now).await else {
            return Ok(Step::Continue(None));
        };
        let mut breaker = stored.breaker.clone();
        match breaker.admit(now) {
            Admission::Call => Ok(Step::Continue(None)),
            Admission::Wait(until) => Ok(Step::Done(self.defer(at.clone(), until).await?)),
            Admission::Probe => Ok(Step::Continue(Some(stored.version))),
        }
    }

    /// Claims the probe found due at version `read`, by a conditional write: go as the
    /// probe (`Some`: the version the claim wrote), or put off when another delivery
    /// claimed it first, or when the claim cannot be written (an open breaker is never
    /// taken as closed for want of a write).
    pub(in crate::engine) async fn claim_probe(
        &self,
        at: &AttemptRef,
        task: &Task,
        place: &Place,
        read: u64,
    ) -> Result<Step<Option<u64>>, EngineError> {
        let (tenant, destination) = (&task.tenant, &place.destination);
        let breakers = &self.ports.store.breakers;
        let now = self.ports.clock.now();
        let claimed = async {
            let Some(stored) = breakers.breaker(tenant, destination).await? else {
                return Ok(false);
            };
            let mut breaker = stored.breaker;
            if stored.version != read || breaker.admit(now) != Admission::Probe {
                return Ok(false);
            }
            breakers
                .save_breaker(tenant, destination, &breaker, Some(read))
                .await
        };
        let claimed: Result<bool, StoreError> = claimed.await;
        place.lane.forget_breaker();
        match claimed {
            Ok(true) => {
                tracing::info!(%destination, task = %task.id, "probing an open destination");
                Ok(Step::Continue(Some(read + 1)))
            }
            Ok(false) => Ok(Step::Done(
                self.defer(at.clone(), now + PROBE_LOST_RETRY).await?,
            )),
            Err(e) => {
                tracing::warn!(%destination, error = %e, "claiming a breaker's probe failed; put off");
                Ok(Step::Done(
                    self.defer(at.clone(), now + PROBE_LOST_RETRY).await?,
                ))
            }
        }
    }

    /// The shared breaker of the task's destination, as this process last read it within
    /// [`BREAKER_FRESH`]; `None` while it is closed (or cannot be read).
    async fn shared_breaker(
        &self,
        task: &Task,
        place: &Place,
        now: DateTime<Utc>,
    ) -> Option<StoredBreaker> {
        let stored = match place.lane.cached_breaker(now, BREAKER_FRESH) {
            Some(cached) => cached,
            None => {
                let breakers = &self.ports.store.breakers;
                match breakers.breaker(&task.tenant, &place.destination).await {
                    Ok(read) => {
                        // A breaker that changed since this lane began counting makes
                        // its count stale (failures from before a close, say).
                        place.lane.cache_breaker(read.clone(), now);
                        read
                    }
                    Err(e) => {
                        tracing::warn!(destination = %place.destination, error = %e, "reading a breaker failed; calling");
                        None
                    }
                }
            }
        };
        let open = stored.filter(|s| s.breaker.is_open());
        if open.is_some() {
            // The shared breaker counts now: failures counted before it opened are spent.
            place.lane.reset_count();
        }
        open
    }

    /// Gives back a probe claimed for a call that was not made, so that the next one need
    /// not wait out the claim's lease.
    pub(in crate::engine) async fn release_probe(
        &self,
        task: &Task,
        place: &Place,
        probe: Option<u64>,
    ) {
        let Some(claimed) = probe else {
            return;
        };
        let (tenant, destination) = (&task.tenant, &place.destination);
        let breakers = &self.ports.store.breakers;
        let released = async {
            let Some(stored) = breakers.breaker(tenant, destination).await? else {
                return Ok(());
            };
            let mut breaker = stored.breaker;
            if stored.version != claimed || !breaker.release_probe() {
                return Ok(());
            }
            breakers
                .save_breaker(tenant, destination, &breaker, Some(claimed))
                .await
                .map(|_| ())
        };
        if let Err(e) = released.await {
            tracing::warn!(%destination, error = %e, "giving back a breaker's probe failed; its lease will");
        }
        place.lane.forget_breaker();
    }

    /// Tells the breaker how the call went (`probe`: the version its probe claim wrote). A
    /// failure here is logged: the breaker is a guard, and the attempt is written.
    pub(in crate::engine) async fn note_breaker(
        &self,
        task: &Task,
        place: &Place,
        health: CallHealth,
        probe: Option<u64>,
    ) {
        let noted = match probe {
            Some(claimed) => self.settle_probe(task, place, health, claimed).await,
            None => self.count_call(task, place, health).await,
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
        let settings = self.breaker_settings_or_default(&task.tenant).await;
        let now = self.ports.clock.now();
        let Some(opened) = place.lane.count_call(health, now, &settings) else {
            return Ok(());
        };
        let destination = &place.destination;
        let stored = (self.ports.store.breakers.breaker(&task.tenant, destination)).await?;
        if stored.as_ref().is_some_and(|s| s.breaker.is_open()) {
            return Ok(());
        }
        let version = stored.map(|s| s.version);
        let change = BreakerChange::Opened;
        (self.change_breaker(&task.tenant, destination, &opened, version, change, false)).await?;
        place.lane.forget_breaker();
        Ok(())
    }

    /// The probe's health, written to the shared breaker if it is still the one the probe
    /// claimed (a breaker closed or opened by hand meanwhile has moved on): a success
    /// closes it, a failure spaces the next probe further.
    async fn settle_probe(
        &self,
        task: &Task,
        place: &Place,
        health: CallHealth,
        claimed: u64,
    ) -> Result<(), EngineError> {
        let (tenant, destination) = (&task.tenant, &place.destination);
        let breakers = &self.ports.store.breakers;
        let Some(stored) = breakers.breaker(tenant, destination).await? else {
            return Ok(());
        };
        if stored.version != claimed {
            return Ok(());
        }
        let settings = self.breaker_settings_or_default(tenant).await;
        let mut breaker = stored.breaker;
        let now = self.ports.clock.now();
        let version = Some(claimed);
        match breaker.on_call(health, true, now, &settings) {
            Some(change) => {
                (self.change_breaker(tenant, destination, &breaker, version, change, false))
                    .await?;
                place.lane.reset_count();
            }
            None => {
                breakers
                    .save_breaker(tenant, destination, &breaker, version)
                    .await?;
            }
        }
        place.lane.forget_breaker();
        Ok(())
    }

    /// Writes a breaker that opened or closed (`by_hand`: an operator's doing),
    /// conditionally on the version read; the one writer that wins raises the alert and
    /// counts it.
    pub(in crate::engine) async fn change_breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        breaker: &Breaker,
        version: Option<u64>,
        change: BreakerChange,
        by_hand: bool,
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
        self.record(match change {
            BreakerChange::Opened => MetricEvent::BreakerOpened,
            BreakerChange::Closed => MetricEvent::BreakerClosed,
        });
        tracing::warn!(%tenant, %destination, ?change, by_hand, "circuit breaker changed");
        let now = self.ports.clock.now();
        let body = BreakerAlertBody::new(destination, change, breaker, by_hand, now);
        self.raise_breaker_alert(tenant, destination, &body, written)
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

    /// The tenant's breaker settings, the defaults if they cannot be read (logged): a
    /// call's health is not lost for want of them.
    async fn breaker_settings_or_default(&self, tenant: &TenantId) -> BreakerSettings {
        self.breaker_settings(tenant).await.unwrap_or_else(|e| {
            tracing::warn!(%tenant, error = %e, "reading breaker settings failed; the defaults apply");
            BreakerSettings::default()
        })
    }

    /// Registers a change's operational alert where the tenant's failure alerts go by
    /// default; none configured, none sent. Best effort: a registration that fails is
    /// logged, and the change stands.
    async fn raise_breaker_alert(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        body: &BreakerAlertBody,
        version: u64,
    ) {
        let raised = async {
            let Some(target) = self.default_alert_target(tenant).await? else {
                return Ok(());
            };
            let new = NewTask {
                spec: breaker_alert_spec(&target, body),
                retry_from: RetrySource::Default,
                when: FireTime::Now,
                idempotency_key: Some(breaker_alert_key(destination, version)),
                request_hash: "breaker-alert".into(),
            };
            let prepared = self.prepare(tenant, new).await?;
            self.register_prepared(prepared).await.map(|_| ())
        };
        if let Err(e) = raised.await {
            tracing::error!(%tenant, %destination, error = %e, "could not register the breaker alert");
        }
    }
}
