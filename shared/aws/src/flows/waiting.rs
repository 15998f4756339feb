//! Which tasks wait in a flow, and which flows a tenant has, kept in the table.
//!
//! - A waiting task is an item `Q#<task id>` in its flow's partition, naming its attempt
//!   and until when it waits (one write unit per put-off delivery, expiring with the
//!   table's expiry an hour after its time).
//! - The flows a tenant has used lately are items `K#<key>` in the partition
//!   `FL#<tenant>`, written when a task first waits in one (once an hour per process), so
//!   that listing a tenant's flows reads one partition, not the table.

use std::time::Instant;

use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
use chrono::{DateTime, Utc};

use super::counters::{millis, sort_key, DynamoFlowCounters, KEEP};
use super::slots::held_past;
use crate::attr;
use crate::keys::{self, ItemKey};
use crate::sdk::items::{n, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{Attempt, AttemptRef, FlowKey, TenantId};
use boomerang_core::ports::{FlowFigures, StoreError};

/// A tenant's flow item is written again by a process after this long.
const SEEN_AGAIN: std::time::Duration = std::time::Duration::from_secs(30 * 60);
/// Items per `BatchWriteItem` (the API's limit).
const BATCH: usize = 25;

impl DynamoFlowCounters {
    pub(super) async fn put_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        attempt: &AttemptRef,
        until: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(keys::flow_partition(tenant, key)))
            .item(attr::SK, s(keys::flow_waiting(&attempt.task_id)))
            .item(attr::flow::ATTEMPT, n(attempt.attempt.number()))
            .item(attr::flow::WAITS_UNTIL, n(until.timestamp_millis()))
            .item(attr::EXPIRES, n((until + KEEP).timestamp()))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        self.note_seen(tenant, key, until).await
    }

    /// Writes the tenant's item for flow `key`, unless this process did lately.
    async fn note_seen(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let seen = keys::flow_partition(tenant, key);
        let fresh = (self.seen().get(&seen)).is_some_and(|at| at.elapsed() < SEEN_AGAIN);
        if fresh {
            return Ok(());
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(keys::tenant_flows_partition(tenant)))
            .item(attr::SK, s(keys::flow_seen(key)))
            .item(attr::EXPIRES, n((now + KEEP).timestamp()))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        self.seen().insert(seen, Instant::now());
        Ok(())
    }

    pub(super) async fn take_waiting_items(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<Vec<AttemptRef>, StoreError> {
        let pk = keys::flow_partition(tenant, key);
        let items = self.query_all(&pk, keys::FLOW_WAITING).await?;
        let woken = (items.iter())
            .filter(|item| waits_past(item, now))
            .filter_map(|item| attempt_of(item, tenant))
            .collect();
        for chunk in items.chunks(BATCH) {
            self.delete_all(chunk).await?;
        }
        Ok(woken)
    }

    async fn delete_all(&self, items: &[Item]) -> Result<(), StoreError> {
        let mut requests: Vec<WriteRequest> = (items.iter())
            .filter_map(|item| {
                let key = ItemKey::of(item)?.to_item();
                let delete = DeleteRequest::builder().set_key(Some(key)).build().ok()?;
                Some(WriteRequest::builder().delete_request(delete).build())
            })
            .collect();
        // Unprocessed deletes are sent again; each try is a fresh batch of what is left.
        for _ in 0..5 {
            if requests.is_empty() {
                return Ok(());
            }
            let answer = self
                .client
                .batch_write_item()
                .request_items(&self.table, requests)
                .send()
                .await
                .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
            requests = (answer.unprocessed_items)
                .and_then(|mut left| left.remove(&self.table))
                .unwrap_or_default();
        }
        Ok(())
    }

    pub(super) async fn figures_of(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
    ) -> Result<Vec<FlowFigures>, StoreError> {
        let mut figures = Vec::new();
        let partition = keys::tenant_flows_partition(tenant);
        for item in self.query_all(&partition, keys::FLOWS_SEEN).await? {
            let Some(key) = sort_key(&item).and_then(keys::seen_flow) else {
                continue;
            };
            let flow = self.flow_figures_of(tenant, key, now).await?;
            if flow.waiting > 0 || flow.in_flight > 0 {
                figures.push(flow);
            }
        }
        figures.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(figures)
    }

    /// One flow's figures: its waiting notes and its slots, one query each.
    pub(super) async fn flow_figures_of(
        &self,
        tenant: &TenantId,
        key: FlowKey,
        now: DateTime<Utc>,
    ) -> Result<FlowFigures, StoreError> {
        let pk = keys::flow_partition(tenant, &key);
        let waiting = self.query_all(&pk, keys::FLOW_WAITING).await?;
        let waiting = waiting.iter().filter(|i| waits_past(i, now)).count();
        let slots = self.query_all(&pk, keys::FLOW_SLOTS).await?;
        let in_flight = slots.iter().filter(|i| held_past(i, now)).count();
        Ok(FlowFigures {
            key,
            waiting: waiting as u64,
            in_flight: in_flight as u64,
        })
    }
}

fn waits_past(item: &Item, now: DateTime<Utc>) -> bool {
    millis(item, attr::flow::WAITS_UNTIL) > now.timestamp_millis()
}

fn attempt_of(item: &Item, tenant: &TenantId) -> Option<AttemptRef> {
    let task_id = keys::waiting_task(sort_key(item)?)?;
    let attempt = Attempt::from(u32::try_from(millis(item, attr::flow::ATTEMPT)).ok()?);
    Some(AttemptRef {
        task_id,
        attempt,
        tenant: tenant.clone(),
    })
}
