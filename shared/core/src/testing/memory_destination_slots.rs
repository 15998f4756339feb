//! Destination slots in memory: what a fleet's shared slots hold, for the engine's tests.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::{Destination, TenantId};
use crate::ports::{DestinationSlots, SlotHolder, StoreError};

type Held = Vec<(SlotHolder, DateTime<Utc>)>;

#[derive(Default)]
pub struct MemoryDestinationSlots {
    held: Mutex<HashMap<(TenantId, Destination), Held>>,
}

impl MemoryDestinationSlots {
    /// How many of the tenant's slots at `destination` are held, unexpired at `now`.
    pub fn held(&self, tenant: &TenantId, destination: &Destination, now: DateTime<Utc>) -> usize {
        let held = self.held.lock().expect("slots lock");
        let slots = held.get(&(tenant.clone(), destination.clone()));
        slots.map_or(0, |s| s.iter().filter(|(_, until)| *until > now).count())
    }
}

#[async_trait]
impl DestinationSlots for MemoryDestinationSlots {
    async fn take_destination_slot(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        limit: u32,
        holder: &SlotHolder,
        (now, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<bool, StoreError> {
        let mut held = self.held.lock().expect("slots lock");
        let slots = held
            .entry((tenant.clone(), destination.clone()))
            .or_default();
        slots.retain(|(_, until)| *until > now);
        if slots.iter().any(|(h, _)| h == holder) {
            return Ok(true);
        }
        if slots.len() >= limit as usize {
            return Ok(false);
        }
        slots.push((holder.clone(), until));
        Ok(true)
    }

    async fn free_destination_slot(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        let mut held = self.held.lock().expect("slots lock");
        if let Some(slots) = held.get_mut(&(tenant.clone(), destination.clone())) {
            slots.retain(|(h, _)| h != holder);
        }
        Ok(())
    }
}
