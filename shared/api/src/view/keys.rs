//! What actions on many tasks answer: a page of a list, a batch's results, and what an
//! action by key did.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::task::TaskView;
use crate::problem::Problem;
use crate::schema::enums;
use boomerang_core::domain::{BusinessKey, Status, TaskId};
use boomerang_core::engine::KeyOutcome;
use boomerang_core::ports::Page;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PageView {
    pub tasks: Vec<TaskView>,
    pub next_cursor: Option<String>,
}

/// What `POST /v1/tasks/batch` did: one result per task, in the order sent.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchView {
    pub tasks: Vec<BatchItemView>,
}

/// One task of a batch: registered (201), repeated (200), or refused with a problem.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchItemView {
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
}

/// What `DELETE /v1/tasks?key=…` did.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyCancelView {
    pub key: String,
    /// The tasks it canceled.
    #[schema(value_type = Vec<String>)]
    pub canceled: Vec<TaskId>,
    /// The tasks with the key it could not cancel: being delivered, or finished.
    pub not_canceled: Vec<KeyedStatusView>,
    /// More tasks have the key than one request handles: send it again.
    pub more: bool,
}

/// What `POST /v1/tasks/release?key=…` did.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyReleaseView {
    pub key: String,
    #[schema(value_type = Vec<String>)]
    pub released: Vec<TaskId>,
    /// The tasks with the key that were not held, with their status.
    pub not_released: Vec<KeyedStatusView>,
    pub more: bool,
}

/// A task with the key that an action by key left as it was.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyedStatusView {
    #[schema(value_type = String)]
    pub id: TaskId,
    #[schema(value_type = enums::Status)]
    pub status: Status,
}

fn keyed_statuses(outcome: &KeyOutcome) -> Vec<KeyedStatusView> {
    outcome
        .not_done
        .iter()
        .map(|(id, status)| KeyedStatusView {
            id: *id,
            status: *status,
        })
        .collect()
}

impl KeyCancelView {
    pub fn new(key: &BusinessKey, outcome: &KeyOutcome) -> Self {
        Self {
            key: key.to_string(),
            canceled: outcome.done.clone(),
            not_canceled: keyed_statuses(outcome),
            more: outcome.more,
        }
    }
}

impl KeyReleaseView {
    pub fn new(key: &BusinessKey, outcome: &KeyOutcome) -> Self {
        Self {
            key: key.to_string(),
            released: outcome.done.clone(),
            not_released: keyed_statuses(outcome),
            more: outcome.more,
        }
    }
}

impl PageView {
    pub fn new(page: &Page) -> Self {
        Self {
            tasks: page.tasks.iter().map(|t| TaskView::new(t, None)).collect(),
            next_cursor: page.next_cursor.map(|c| c.to_string()),
        }
    }
}
