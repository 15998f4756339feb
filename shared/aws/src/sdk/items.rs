//! DynamoDB item helpers shared by the adapters on the table (the task store, the tenant
//! directory, the flow counters, the readiness check).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

use super::sdk_failure;
use crate::keys::ItemKey;
use boomerang_core::ports::{Cause, StoreError};

pub(crate) type Item = HashMap<String, AttributeValue>;

/// A read of one item: consistent, or eventually consistent (half the read units, and it
/// may lag the latest write by a moment).
pub(crate) async fn get_item(
    client: &Client,
    table: &str,
    key: &ItemKey,
    consistent: bool,
) -> Result<Option<Item>, Cause> {
    let out = client
        .get_item()
        .table_name(table)
        .set_key(Some(key.to_item()))
        .consistent_read(consistent)
        .send()
        .await
        .map_err(sdk_failure)?;
    Ok(out.item)
}

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(crate) fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(crate) fn get_s<'a>(item: &'a Item, key: &'static str) -> Result<&'a str, StoreError> {
    item.get(key)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or_else(|| corrupt(key))
}

pub(crate) fn get_n(item: &Item, key: &'static str) -> Result<i64, StoreError> {
    item.get(key)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| corrupt(key))
}

pub(crate) fn corrupt(field: &str) -> StoreError {
    StoreError::Corrupt(format!("item attribute `{field}` missing or malformed").into())
}

/// A refused condition as [`StoreError::Conflict`]; any other failure as unavailable.
pub(crate) fn conflict_or_unavailable<E>(e: aws_sdk_dynamodb::error::SdkError<E>) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static + aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    if e.as_service_error()
        .and_then(|se| se.code())
        .is_some_and(|c| c == "ConditionalCheckFailedException")
    {
        StoreError::Conflict
    } else {
        StoreError::Unavailable(sdk_failure(e))
    }
}
