//! Circuit breakers: one item each in the tenant's `BR#` partition, the breaker as JSON,
//! written conditionally on its version. A closed breaker stays as an item (the delivery
//! function deletes nothing); the open ones are listed by a filter on `bo`.

use async_trait::async_trait;

use super::table::DynamoStore;
use crate::attr;
use crate::keys;
use crate::sdk::items::{
    conflict_or_unavailable, corrupt as corrupt_attr, get_n, get_s, n, s, Item,
};
use crate::sdk::sdk_failure;
use aws_sdk_dynamodb::types::AttributeValue;
use boomerang_core::domain::{Breaker, Destination, TenantId};
use boomerang_core::ports::{Breakers, StoreError, StoredBreaker};

fn corrupt(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Corrupt(e.into())
}

fn breaker_from(item: &Item) -> Result<Breaker, StoreError> {
    serde_json::from_str(get_s(item, attr::breaker::DOC)?).map_err(corrupt)
}

#[async_trait]
impl Breakers for DynamoStore {
    async fn breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
    ) -> Result<Option<StoredBreaker>, StoreError> {
        let item = self
            .get_item(&keys::breaker(tenant, destination), true)
            .await?;
        item.map(|item| {
            Ok(StoredBreaker {
                breaker: breaker_from(&item)?,
                version: u64::try_from(get_n(&item, attr::breaker::VERSION)?)
                    .map_err(|_| corrupt_attr(attr::breaker::VERSION))?,
            })
        })
        .transpose()
    }

    async fn save_breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        breaker: &Breaker,
        version: Option<u64>,
    ) -> Result<bool, StoreError> {
        let doc = serde_json::to_string(breaker).map_err(corrupt)?;
        let mut item = keys::breaker(tenant, destination).to_item();
        item.insert(attr::breaker::DOC.into(), s(doc));
        item.insert(
            attr::breaker::VERSION.into(),
            n(version.map_or(1, |v| v + 1)),
        );
        item.insert(
            attr::breaker::OPEN.into(),
            AttributeValue::Bool(breaker.is_open()),
        );
        let req = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        let req = match version {
            None => req.condition_expression(format!("attribute_not_exists({})", attr::PK)),
            Some(v) => req
                .condition_expression(format!("{} = :expected", attr::breaker::VERSION))
                .expression_attribute_values(":expected", n(v)),
        };
        match req.send().await.map_err(conflict_or_unavailable) {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn open_breakers(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(Destination, Breaker)>, StoreError> {
        let items: Vec<Item> = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(format!("{} = :pk", attr::PK))
            .filter_expression(format!("{} = :open", attr::breaker::OPEN))
            .expression_attribute_values(":pk", s(keys::breaker_partition(tenant)))
            .expression_attribute_values(":open", AttributeValue::Bool(true))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        items
            .iter()
            .map(|item| {
                let destination = Destination::of(get_s(item, attr::SK)?);
                Ok((destination, breaker_from(item)?))
            })
            .collect()
    }
}
