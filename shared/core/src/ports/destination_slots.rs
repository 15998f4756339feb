//! Call slots at a destination that every instance of a fleet shares. Within one process
//! the destination's lane holds a tenant's calls there to its limit; where many instances
//! deliver side by side (the AWS delivery function), each has its own lanes, and only a
//! shared count keeps a slow receiver from being called by every instance at once.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::flows::SlotHolder;
use super::store::StoreError;
use crate::domain::{Destination, TenantId};

#[async_trait]
pub trait DestinationSlots: Send + Sync {
    /// Takes one of the `limit` slots of the tenant's calls to `destination` for `holder`
    /// until `until`, unless as many are held, unexpired at `now`, by others. True if
    /// taken (or already held).
    async fn take_destination_slot(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        limit: u32,
        holder: &SlotHolder,
        (now, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<bool, StoreError>;

    /// Frees `holder`'s slot at `destination`, if it holds one.
    async fn free_destination_slot(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        holder: &SlotHolder,
    ) -> Result<(), StoreError>;
}
