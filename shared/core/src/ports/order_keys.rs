//! Each key's line of tasks delivered in order ([`crate::domain::order`]): places taken
//! at registration, the head read before each delivery, places left as tasks end.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::store::StoreError;
use crate::domain::{OrderEntry, OrderKey, TaskId, TenantId};

/// How many keys a list returns at most.
pub const ORDER_KEYS_LISTED: usize = 100;

/// A key as a list shows it: its head, and how many places are held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderKeyState {
    pub key: OrderKey,
    pub head: Option<OrderEntry>,
    pub backlog: u64,
}

#[async_trait]
pub trait OrderKeys: Send + Sync {
    /// Takes the next place in the key's line for `task` (atomically: two tasks never get
    /// the same place, and a place given later is greater); answers it.
    async fn take_place(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
        task: TaskId,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// The key's head: its lowest place held, if any (a read that sees every place given
    /// or left before it).
    async fn head(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
    ) -> Result<Option<OrderEntry>, StoreError>;

    /// One key's head and backlog (none and 0 for a key no task holds a place in).
    async fn line(&self, tenant: &TenantId, key: &OrderKey) -> Result<OrderKeyState, StoreError>;

    /// Gives up place `seq` (nothing happens if it is not held).
    async fn leave(&self, tenant: &TenantId, key: &OrderKey, seq: u64) -> Result<(), StoreError>;

    /// The tenant's keys after `after` (by key), at most `limit` of them
    /// ([`ORDER_KEYS_LISTED`] at most), with their heads and backlogs. A key no task holds
    /// a place in may be left out.
    async fn order_keys(
        &self,
        tenant: &TenantId,
        after: Option<&OrderKey>,
        limit: usize,
    ) -> Result<Vec<OrderKeyState>, StoreError>;
}
