//! The counters behind flow limits ([`crate::domain::flow`]), shared by every worker that
//! delivers a tenant's tasks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use super::StoreError;
use crate::domain::{FlowKey, TaskId, TenantId};

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
}

/// Flow counters in this process's memory: exact where one process delivers every task of
/// its tenants (the embedded server, which owns its data directory alone). A restart
/// forgets them, which at worst lets one window's starts through again.
#[derive(Default)]
pub struct ProcessFlowCounters {
    flows: Mutex<HashMap<(TenantId, FlowKey), FlowState>>,
}

#[derive(Default)]
struct FlowState {
    window: Option<DateTime<Utc>>,
    asked: u64,
    slots: HashMap<SlotHolder, DateTime<Utc>>,
    /// Wakes one task waiting for a slot each time one is freed.
    freed: Arc<Notify>,
}

impl ProcessFlowCounters {
    fn with<T>(&self, tenant: &TenantId, key: &FlowKey, f: impl FnOnce(&mut FlowState) -> T) -> T {
        let mut flows = self.flows.lock().unwrap_or_else(|e| e.into_inner());
        let state = flows.entry((tenant.clone(), key.clone())).or_default();
        let answer = f(state);
        // A flow with nothing counted and nobody waiting (only this map holds `freed`).
        if state.slots.is_empty() && state.window.is_none() && Arc::strong_count(&state.freed) == 1
        {
            flows.remove(&(tenant.clone(), key.clone()));
        }
        answer
    }
}

#[async_trait]
impl FlowCounters for ProcessFlowCounters {
    async fn ask_start(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        window: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        Ok(self.with(tenant, key, |state| {
            if state.window != Some(window) {
                state.window = Some(window);
                state.asked = 0;
            }
            state.asked += 1;
            state.asked
        }))
    }

    async fn take_slot(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        parallelism: u32,
        holder: &SlotHolder,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self.with(tenant, key, |state| {
            state
                .slots
                .retain(|held_by, lease| held_by == holder || *lease > now);
            let free = state.slots.contains_key(holder) || state.slots.len() < parallelism as usize;
            if free {
                state.slots.insert(holder.clone(), until);
            }
            free
        }))
    }

    async fn free_slot(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        self.with(tenant, key, |state| {
            if state.slots.remove(holder).is_some() {
                state.freed.notify_one();
            }
        });
        Ok(())
    }

    async fn slot_freed(&self, tenant: &TenantId, key: &FlowKey, at_most: Duration) {
        let freed = self.with(tenant, key, |state| state.freed.clone());
        let _ = tokio::time::timeout(at_most, freed.notified()).await;
    }
}
