//! Releasing held tasks: `POST /v1/tasks/{id}/release` and `POST /v1/tasks/release?key=…`.
//! (A held task is registered with `hold` and canceled like any task.)

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::routing::post;
use axum::{Extension, Json, Router};
use serde::Serialize;

use super::problem::Problem;
use super::views::{NotCanceledView, TaskView};
use super::{task_id, task_request};
use crate::domain::TenantId;
use crate::engine::{Engine, KeyRelease};

pub fn routes() -> Router<Arc<Engine>> {
    Router::new()
        .route("/tasks/release", post(release_by_key))
        .route("/tasks/{id}/release", post(release_task))
}

/// Releases a held task; a repeat answers the task as it is now (`200` either way).
async fn release_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, Problem> {
    let release = engine.release(&tenant, &task_id(&id)?).await?;
    Ok(Json(TaskView::new(&release.task, None)))
}

/// What `POST /v1/tasks/release?key=…` did.
#[derive(Debug, Serialize)]
pub struct KeyReleaseView {
    pub key: String,
    pub released: Vec<String>,
    /// The tasks with the key that were not held, with their status.
    pub not_released: Vec<NotCanceledView>,
    pub more: bool,
}

async fn release_by_key(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<KeyReleaseView>, Problem> {
    let key = match params.get("key") {
        Some(k) => task_request::business_key(k.clone())?,
        None => {
            return Err(Problem::invalid(
                "key",
                "is required (release one task with POST /v1/tasks/{id}/release)",
            ))
        }
    };
    let KeyRelease {
        released,
        not_released,
        more,
    } = engine.release_by_key(&tenant, &key).await?;
    Ok(Json(KeyReleaseView {
        key: key.to_string(),
        released: released.iter().map(|id| id.to_string()).collect(),
        not_released: not_released
            .into_iter()
            .map(|(id, status)| NotCanceledView {
                id: id.to_string(),
                status,
            })
            .collect(),
        more,
    }))
}
