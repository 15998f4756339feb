//! A tenant's slots at a destination where it has a limit of its own: rows of
//! `destination_slots`, taken and freed as a flow's slots are ([`super::flows`]), under an
//! advisory lock of their own, so that the limit holds across every server.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use boomerang_core::domain::{Destination, TenantId};
use boomerang_core::ports::{DestinationSlots, SlotHolder, StoreError};

use super::flows::{slots, Slots};
use super::PgStore;

/// A tenant's slots at a destination: its limit there; a flow's statements, on the
/// destination's table.
const DESTINATION_SLOTS: Slots = slots!("destination", "destination_slots", "destination");

#[async_trait]
impl DestinationSlots for PgStore {
    async fn take_destination_slot(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        limit: u32,
        holder: &SlotHolder,
        lease: (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<bool, StoreError> {
        let at = (tenant, destination.as_str());
        (self.take_slot_of(&DESTINATION_SLOTS, at, limit, holder, lease)).await
    }

    async fn free_destination_slot(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        let at = (tenant, destination.as_str());
        (self.free_slot_of(&DESTINATION_SLOTS, at, holder)).await
    }
}
