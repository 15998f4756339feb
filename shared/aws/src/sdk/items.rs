//! DynamoDB item helpers shared by the task store and the tenant directory.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

use super::sdk_failure;
use crate::attr;
use boomerang_core::ports::{Cause, StoreError};

pub(crate) type Item = HashMap<String, AttributeValue>;

/// A read of one item: consistent, or eventually consistent (half the read units, and it
/// may lag the latest write by a moment).
pub(crate) async fn get_item(
    client: &Client,
    table: &str,
    (pk, sk): (String, String),
    consistent: bool,
) -> Result<Option<Item>, Cause> {
    let out = client
        .get_item()
        .table_name(table)
        .key(attr::PK, s(pk))
        .key(attr::SK, s(sk))
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
