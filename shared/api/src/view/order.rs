//! What the API shows of a tenant's order keys: each key's head and backlog.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use boomerang_core::domain::TaskId;
use boomerang_core::engine::OrderLine;

/// A key's line: the task whose turn it is, and how many tasks hold a place.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"key": "order-42", "backlog": 3,
    "head": {"task_id": "01JD2W9Q5Z4T8M3X6V7B0C1N2P", "place": 7, "status": "failed",
             "since": "2030-01-01T09:00:00Z", "blocked": true}}))]
pub struct OrderKeyView {
    pub key: String,
    /// Tasks holding a place: the head and those waiting behind it.
    pub backlog: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<OrderHeadView>,
}

/// The head of a key's line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderHeadView {
    #[schema(value_type = String)]
    pub task_id: TaskId,
    pub place: u64,
    /// The task's status (`unknown` while its registration is being written).
    pub status: String,
    /// When it took its place.
    pub since: DateTime<Utc>,
    /// It failed for good and holds the key until it is retried or canceled.
    pub blocked: bool,
}

/// A page of keys, in key order; pass `next_cursor` as `after` for the next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderKeysView {
    pub keys: Vec<OrderKeyView>,
    pub next_cursor: Option<String>,
}

impl From<OrderLine> for OrderKeyView {
    fn from(line: OrderLine) -> Self {
        let head = line.head.map(|(place, task)| OrderHeadView {
            task_id: place.task,
            place: place.seq,
            status: (task.as_ref())
                .map_or("unknown", |t| t.status.as_str())
                .into(),
            since: place.at,
            blocked: task.is_some_and(|t| t.status == boomerang_core::domain::Status::Failed),
        });
        Self {
            key: line.key.to_string(),
            backlog: line.backlog,
            head,
        }
    }
}
