//! Flow counters in this process's memory, for the embedded server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use super::flows::{FlowCounters, FlowFigures, SlotHolder};
use super::store::StoreError;
use crate::domain::{AttemptRef, FlowKey, TaskId, TenantId};

/// A task, as the key of its note in a flow's waiting list.
type AttemptKey = (TenantId, TaskId);

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
    /// Per task put off by the flow, its attempt and until when.
    waiting: HashMap<AttemptKey, (AttemptRef, DateTime<Utc>)>,
    /// Wakes one task waiting for a slot each time one is freed.
    freed: Arc<Notify>,
}

impl FlowState {
    fn figures(&self, key: &FlowKey, now: DateTime<Utc>) -> FlowFigures {
        FlowFigures {
            key: key.clone(),
            waiting: self.waiting.values().filter(|(_, u)| *u > now).count() as u64,
            in_flight: self.slots.values().filter(|lease| **lease > now).count() as u64,
        }
    }
}

impl ProcessFlowCounters {
    fn with<T>(&self, tenant: &TenantId, key: &FlowKey, f: impl FnOnce(&mut FlowState) -> T) -> T {
        let mut flows = self.flows.lock().unwrap_or_else(|e| e.into_inner());
        let state = flows.entry((tenant.clone(), key.clone())).or_default();
        let answer = f(state);
        // A flow with nothing counted and nobody waiting (only this map holds `freed`).
        let idle = state.slots.is_empty() && state.window.is_none() && state.waiting.is_empty();
        if idle && Arc::strong_count(&state.freed) == 1 {
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

    async fn note_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        attempt: &AttemptRef,
        (now, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<(), StoreError> {
        self.with(tenant, key, |state| {
            state.waiting.retain(|_, (_, u)| *u > now);
            let task = (attempt.tenant.clone(), attempt.task_id);
            state.waiting.insert(task, (attempt.clone(), until));
        });
        Ok(())
    }

    async fn take_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<Vec<AttemptRef>, StoreError> {
        Ok(self.with(tenant, key, |state| {
            let notes = state.waiting.drain().filter(|(_, (_, until))| *until > now);
            notes.map(|(_, (attempt, _))| attempt).collect()
        }))
    }

    async fn figures(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
    ) -> Result<Vec<FlowFigures>, StoreError> {
        let flows = self.flows.lock().unwrap_or_else(|e| e.into_inner());
        let mut figures: Vec<FlowFigures> = (flows.iter())
            .filter(|((t, _), _)| t == tenant)
            .map(|((_, key), state)| state.figures(key, now))
            .filter(|f| f.waiting > 0 || f.in_flight > 0)
            .collect();
        figures.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(figures)
    }

    async fn flow_figures(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<FlowFigures, StoreError> {
        let flows = self.flows.lock().unwrap_or_else(|e| e.into_inner());
        Ok(match flows.get(&(tenant.clone(), key.clone())) {
            Some(state) => state.figures(key, now),
            None => FlowFigures::none(key.clone()),
        })
    }
}
