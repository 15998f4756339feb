//! Flow limits kept in the table, so that they hold across every delivery function
//! instance (and every `serve --backend aws` process).
//!
//! - A rate window is one item, `W#<window start>`: each ask to start is an `ADD` of one
//!   that answers the count, so every worker learns its place in the window. One write
//!   unit per ask.
//! - Parallelism slots are items `S#0` … `S#<parallelism - 1>` ([`slots`]). A limited
//!   delivery costs one query (a read unit or two) and two write units.
//! - A tenant's slots at a destination, where it has a limit of its own, are the same
//!   items in the destination's partition.
//! - Tasks waiting in a flow, and the flows a tenant has, are items too ([`waiting`]), and
//!   so are paused flows ([`pauses`]).
//!
//! Windows and slots carry the table's expiry, so a crashed holder's slot and old windows
//! go away. The submodules share [`counters`], and never use this module, which only
//! answers the port from them.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::ReturnValue;
use chrono::{DateTime, Utc};

use crate::attr;
use crate::keys;
use crate::sdk::items::{corrupt, n, s};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{AttemptRef, Destination, FlowKey, TenantId};
use boomerang_core::ports::{DestinationSlots, FlowCounters, FlowFigures, SlotHolder, StoreError};

mod counters;
mod pauses;
mod slots;
mod waiting;

pub use counters::DynamoFlowCounters;
use counters::KEEP;

#[async_trait]
impl FlowCounters for DynamoFlowCounters {
    async fn ask_start(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        window: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let answer = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(keys::flow_partition(tenant, key)))
            .key(attr::SK, s(keys::flow_window(window)))
            .update_expression("ADD #n :one SET #x = :expires")
            .expression_attribute_names("#n", attr::flow::ASKED)
            .expression_attribute_names("#x", attr::EXPIRES)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":expires", n((window + KEEP).timestamp()))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        let asked = (answer.attributes())
            .and_then(|a| a.get(attr::flow::ASKED))
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok());
        asked.ok_or_else(|| corrupt(attr::flow::ASKED))
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
        let pk = keys::flow_partition(tenant, key);
        (self.take_slot_in(pk, parallelism, holder, now, until)).await
    }

    async fn free_slot(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        (self.free_slot_in(keys::flow_partition(tenant, key), holder)).await
    }

    async fn slot_freed(&self, tenant: &TenantId, key: &FlowKey, at_most: Duration) {
        self.slot_freed_in(tenant, key, at_most).await
    }

    async fn note_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        attempt: &AttemptRef,
        (_, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<(), StoreError> {
        self.put_waiting(tenant, key, attempt, until).await
    }

    async fn take_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<Vec<AttemptRef>, StoreError> {
        self.take_waiting_items(tenant, key, now).await
    }

    async fn figures(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
    ) -> Result<Vec<FlowFigures>, StoreError> {
        self.figures_of(tenant, now).await
    }

    async fn flow_figures(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<FlowFigures, StoreError> {
        self.flow_figures_of(tenant, key.clone(), now).await
    }
}

/// A tenant's calls at one destination take slots as a flow's do, in the destination's
/// own partition: the limit holds across every delivery function instance.
#[async_trait]
impl DestinationSlots for DynamoFlowCounters {
    async fn take_destination_slot(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        limit: u32,
        holder: &SlotHolder,
        (now, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<bool, StoreError> {
        let pk = keys::destination_partition(tenant, destination);
        (self.take_slot_in(pk, limit, holder, now, until)).await
    }

    async fn free_destination_slot(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        let pk = keys::destination_partition(tenant, destination);
        self.free_slot_in(pk, holder).await
    }
}
