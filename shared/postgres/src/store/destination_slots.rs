//! A tenant's slots at a destination where it has a limit of its own: rows of
//! `destination_slots`, taken and freed as a flow's slots are ([`super::flows`]), under an
//! advisory lock of their own, so that the limit holds across every server.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use boomerang_core::domain::{Destination, TenantId};
use boomerang_core::ports::{DestinationSlots, SlotHolder, StoreError};

use super::flows::Slots;
use super::PgStore;

/// A tenant's slots at a destination: its limit there. The statements are a flow's, on
/// the destination's table.
const DESTINATION_SLOTS: Slots = Slots {
    lock: "destination",
    full: "SELECT count(*) FILTER (WHERE holder <> $3 AND until_ms > $4) >= $5
                  AND count(*) FILTER (WHERE holder = $3) = 0
           FROM destination_slots WHERE tenant = $1 AND destination = $2",
    take: "WITH expired AS (
               DELETE FROM destination_slots
               WHERE tenant = $1 AND destination = $2 AND until_ms <= $4 AND holder <> $3
           ), held AS (
               SELECT count(*) FILTER (WHERE holder <> $3) AS others,
                      count(*) FILTER (WHERE holder = $3) AS mine
               FROM destination_slots
               WHERE tenant = $1 AND destination = $2 AND (until_ms > $4 OR holder = $3)
           )
           INSERT INTO destination_slots (tenant, destination, holder, until_ms)
           SELECT $1, $2, $3, $5 FROM held WHERE mine > 0 OR others < $6
           ON CONFLICT (tenant, destination, holder) DO UPDATE SET until_ms = excluded.until_ms
           RETURNING 1",
    free: "DELETE FROM destination_slots
           WHERE tenant = $1 AND destination = $2 AND holder = $3",
};

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
