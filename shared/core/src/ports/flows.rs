//! The counters behind flow limits ([`crate::domain::flow`]), shared by every worker that
//! delivers a tenant's tasks.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::store::StoreError;
use crate::domain::{AttemptRef, FlowKey, TaskId, TenantId};

/// One delivery's hold on a flow slot: its task and a part of its own, so that two
/// deliveries of one task (a duplicate timer fire, of which only one wins the claim) never
/// free each other's slot.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SlotHolder(String);

impl SlotHolder {
    pub fn new(task: &TaskId) -> Self {
        Self(format!("{task}.{}", ulid::Ulid::new()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[async_trait]
pub trait FlowCounters: Send + Sync {
    /// Counts a request to start a task of `key` in the window that began at `window`, and
    /// answers how many were made in that window so far, this one included. The engine
    /// starts the first `rate` and tells the others which later window to come back in.
    async fn ask_start(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        window: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// Takes one of `key`'s `parallelism` slots for `holder` until `until`, unless as many
    /// are held, unexpired at `now`, by others. True if taken (or already held).
    async fn take_slot(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        parallelism: u32,
        holder: &SlotHolder,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Frees `holder`'s slot of `key`, if it holds one.
    async fn free_slot(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        holder: &SlotHolder,
    ) -> Result<(), StoreError>;

    /// Returns once a slot of `key` may have been freed, or after `at_most`: counters that
    /// see every free say so at once; shared ones can only let the caller look again.
    async fn slot_freed(&self, tenant: &TenantId, key: &FlowKey, at_most: Duration);

    /// Notes that `attempt`, of a task in flow `key`, was put off by the flow at `now` until
    /// `until` (replacing an earlier note of its task). Notes past their time count for
    /// nothing, and go.
    async fn note_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        attempt: &AttemptRef,
        (now, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<(), StoreError>;

    /// The attempts of flow `key` noted as waiting past `now`; their notes go (a woken task
    /// put off again is noted again).
    async fn take_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<Vec<AttemptRef>, StoreError>;

    /// The tenant's flows with tasks waiting or calls in flight at `now`, or whose tasks
    /// have waited lately (a store keeps the keys it saw for a while), by key.
    async fn figures(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
    ) -> Result<Vec<FlowFigures>, StoreError>;

    /// The figures of the tenant's flow `key` at `now` (all zero for a flow they know
    /// nothing of).
    async fn flow_figures(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<FlowFigures, StoreError>;
}

/// A flow as its counters see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowFigures {
    pub key: FlowKey,
    /// Tasks put off by the flow (its rate, its slots or its pause) and not yet due again.
    pub waiting: u64,
    /// Calls holding one of its slots.
    pub in_flight: u64,
}

impl FlowFigures {
    pub fn none(key: FlowKey) -> Self {
        Self {
            key,
            waiting: 0,
            in_flight: 0,
        }
    }
}

/// Which of a tenant's flows are paused: kept by the store, so that a pause outlives a
/// restart.
#[async_trait]
pub trait FlowPauses: Send + Sync {
    /// Pauses (or resumes) the tenant's flow `key`.
    async fn set_flow_paused(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        paused: bool,
    ) -> Result<(), StoreError>;

    /// Whether the tenant's flow `key` is paused. A store may answer from a copy up to a
    /// second old (every limited delivery asks).
    async fn flow_paused(&self, tenant: &TenantId, key: &FlowKey) -> Result<bool, StoreError>;

    /// The tenant's paused flows.
    async fn paused_flows(&self, tenant: &TenantId) -> Result<Vec<FlowKey>, StoreError>;
}

/// What flow limits need: counters shared by every worker, and the store's pauses. A
/// backend has both or neither.
#[derive(Clone)]
pub struct FlowPorts {
    pub counters: Arc<dyn FlowCounters>,
    pub pauses: Arc<dyn FlowPauses>,
}
