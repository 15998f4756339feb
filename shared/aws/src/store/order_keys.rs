//! Order keys' lines: a key's item in its tenant's `OK#` partition holds its last place
//! given (moved on conditionally, so two registrations never get one place); each place held
//! is an item in the key's own `OL#` partition, sorted by its number, so the head is the
//! first item of a query. A place costs a read and two writes to take (its own and the
//! key's) and one to leave; reading the head is one strongly consistent query.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::Select;
use chrono::{DateTime, Utc};

use super::table::DynamoStore;
use crate::attr::{self, order as order_attr};
use crate::keys;
use crate::sdk::items::{corrupt, get_n, get_s, n, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{OrderEntry, OrderKey, TaskId, TenantId};
use boomerang_core::ports::{OrderKeyState, OrderKeys, StoreError, ORDER_KEYS_LISTED};

fn unavailable<E>(e: aws_sdk_dynamodb::error::SdkError<E>) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static,
{
    StoreError::Unavailable(sdk_failure(e))
}

fn place_from(item: &Item) -> Result<OrderEntry, StoreError> {
    let seq = get_s(item, attr::SK)?
        .parse()
        .map_err(|_| corrupt(attr::SK))?;
    let task: TaskId = get_s(item, order_attr::TASK)?
        .parse()
        .map_err(|_| corrupt(order_attr::TASK))?;
    let at = DateTime::<Utc>::from_timestamp_millis(get_n(item, order_attr::AT)?)
        .ok_or_else(|| corrupt(order_attr::AT))?;
    Ok(OrderEntry { seq, task, at })
}

/// Tries of a place that others took first.
const PLACE_TRIES: usize = 64;

fn is_conditional<E>(e: &aws_sdk_dynamodb::error::SdkError<E>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    e.as_service_error()
        .and_then(|se| se.code())
        .is_some_and(|code| code == "ConditionalCheckFailedException")
}

impl DynamoStore {
    /// The key's last place given (0 for a new key), read strongly.
    async fn last_place(&self, tenant: &TenantId, key: &OrderKey) -> Result<u64, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(keys::order_key(tenant, key).to_item()))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        match out.item() {
            Some(item) => {
                u64::try_from(get_n(item, order_attr::LAST)?).map_err(|_| corrupt(order_attr::LAST))
            }
            None => Ok(0),
        }
    }

    /// Moves the key's counter from `last` to the next place (nothing if another did).
    async fn advance_counter(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
        last: u64,
    ) -> Result<(), StoreError> {
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(keys::order_key(tenant, key).to_item()))
            .update_expression("SET #last = :next")
            .expression_attribute_names("#last", order_attr::LAST)
            .expression_attribute_values(":next", n(last + 1));
        let update = match last {
            0 => update.condition_expression("attribute_not_exists(#last)"),
            _ => update
                .condition_expression("#last = :last")
                .expression_attribute_values(":last", n(last)),
        };
        match update.send().await {
            Ok(_) => Ok(()),
            Err(e) if is_conditional(&e) => Ok(()),
            Err(e) => Err(unavailable(e)),
        }
    }

    /// How many places of the key are held (one query that counts, without reading them).
    async fn backlog(&self, tenant: &TenantId, key: &OrderKey) -> Result<u64, StoreError> {
        let pages = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(format!("{} = :pk", attr::PK))
            .expression_attribute_values(":pk", s(keys::order_line_partition(tenant, key)))
            .select(Select::Count)
            .consistent_read(true)
            .into_paginator()
            .send()
            .collect::<Vec<_>>()
            .await;
        let mut count = 0u64;
        for page in pages {
            count += page.map_err(unavailable)?.count() as u64;
        }
        Ok(count)
    }
}

#[async_trait]
impl OrderKeys for DynamoStore {
    /// The place is written before the key's counter says it is given (both conditional),
    /// so a place that can be read implies every lower one was written: a task never finds
    /// itself head while an elder's place is still on its way. One that finds the next
    /// place taken moves the counter on for its taker, and tries the one after.
    async fn take_place(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
        task: TaskId,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        for _ in 0..PLACE_TRIES {
            let last = self.last_place(tenant, key).await?;
            let next = last + 1;
            let mut item = keys::order_place(tenant, key, next).to_item();
            item.insert(order_attr::TASK.into(), s(task.to_string()));
            item.insert(order_attr::AT.into(), n(now.timestamp_millis()));
            let put = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression(format!("attribute_not_exists({})", attr::PK))
                .send()
                .await;
            let taken_by_us = match put {
                Ok(_) => true,
                Err(e) if is_conditional(&e) => false,
                Err(e) => return Err(unavailable(e)),
            };
            self.advance_counter(tenant, key, last).await?;
            if taken_by_us {
                return Ok(next);
            }
        }
        Err(StoreError::Conflict)
    }

    async fn head(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
    ) -> Result<Option<OrderEntry>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(format!("{} = :pk", attr::PK))
            .expression_attribute_values(":pk", s(keys::order_line_partition(tenant, key)))
            .limit(1)
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        out.items().first().map(place_from).transpose()
    }

    async fn line(&self, tenant: &TenantId, key: &OrderKey) -> Result<OrderKeyState, StoreError> {
        Ok(OrderKeyState {
            key: key.clone(),
            head: self.head(tenant, key).await?,
            backlog: self.backlog(tenant, key).await?,
        })
    }

    async fn leave(&self, tenant: &TenantId, key: &OrderKey, seq: u64) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(keys::order_place(tenant, key, seq).to_item()))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn order_keys(
        &self,
        tenant: &TenantId,
        after: Option<&OrderKey>,
        limit: usize,
    ) -> Result<Vec<OrderKeyState>, StoreError> {
        let limit = limit.clamp(1, ORDER_KEYS_LISTED);
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(format!("{} = :pk", attr::PK))
            .expression_attribute_values(":pk", s(keys::order_keys_partition(tenant)))
            .limit(limit as i32)
            .consistent_read(true);
        if let Some(after) = after {
            query = query.set_exclusive_start_key(Some(keys::order_key(tenant, after).to_item()));
        }
        let out = query.send().await.map_err(unavailable)?;
        let mut states = Vec::new();
        for item in out.items() {
            let key = OrderKey::parse(get_s(item, attr::SK)?).map_err(|_| corrupt(attr::SK))?;
            let head = self.head(tenant, &key).await?;
            let backlog = self.backlog(tenant, &key).await?;
            states.push(OrderKeyState { key, head, backlog });
        }
        Ok(states)
    }
}
