//! Ordered delivery per key: tasks that name the same `order_key` are delivered one at a
//! time, in the order they were registered. Each takes a place in its key's line when it
//! is registered (a sequence number); only the head of the line (its lowest place still
//! held) is delivered; a later task whose time comes first waits for its elders.
//!
//! A task holds its place until it succeeds or is canceled. One that fails for good holds
//! it too, blocking the key until it is retried or canceled, unless it asked to be
//! skipped (`order_on_failure: skip`): then the key goes on without it.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::TaskId;
use super::limits::MAX_ORDER_KEY;

/// A key whose tasks are delivered one at a time, in registration order: 1 to
/// [`MAX_ORDER_KEY`] bytes, without control characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OrderKey(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("an order key must be 1 to {MAX_ORDER_KEY} bytes, without control characters")]
pub struct InvalidOrderKey;

impl OrderKey {
    pub fn parse(key: impl Into<String>) -> Result<Self, InvalidOrderKey> {
        let key = key.into();
        let fine =
            !key.is_empty() && key.len() <= MAX_ORDER_KEY && !key.chars().any(char::is_control);
        fine.then_some(Self(key)).ok_or(InvalidOrderKey)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OrderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for OrderKey {
    type Error = InvalidOrderKey;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(s)
    }
}

impl From<OrderKey> for String {
    fn from(key: OrderKey) -> Self {
        key.0
    }
}

/// What a key does when its head fails for good.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnHeadFailure {
    /// The key waits until the failed task is retried (and succeeds) or canceled.
    #[default]
    Block,
    /// The key goes on without it; a retry of it later takes a new place at the end.
    Skip,
}

impl OnHeadFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            OnHeadFailure::Block => "block",
            OnHeadFailure::Skip => "skip",
        }
    }
}

/// A task's place in its key's line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderSpec {
    pub key: OrderKey,
    #[serde(default, skip_serializing_if = "is_block")]
    pub on_failure: OnHeadFailure,
    /// Its place (given when it is stored; 0 until then).
    #[serde(default)]
    pub seq: u64,
}

fn is_block(policy: &OnHeadFailure) -> bool {
    *policy == OnHeadFailure::Block
}

impl OrderSpec {
    pub fn new(key: OrderKey, on_failure: OnHeadFailure) -> Self {
        Self {
            key,
            on_failure,
            seq: 0,
        }
    }
}

/// One place taken in a key's line: by which task, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderEntry {
    pub seq: u64,
    pub task: TaskId,
    pub at: DateTime<Utc>,
}

/// A place whose task is not stored this long after it was taken is left by a
/// registration that never finished: the line goes on without it.
pub const ORPHAN_PLACE: chrono::Duration = chrono::Duration::seconds(60);
