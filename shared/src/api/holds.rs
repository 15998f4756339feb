//! Releasing held tasks: `POST /v1/tasks/{id}/release` and `POST /v1/tasks/release?key=…`.
//! (A held task is registered with `hold` and canceled like any task.)

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::routing::post;
use axum::{Extension, Json, Router};

use super::problem::Problem;
use super::views::{KeyReleaseView, TaskView};
use super::{key_param, task_id};
use crate::domain::TenantId;
use crate::engine::Engine;

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

async fn release_by_key(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<KeyReleaseView>, Problem> {
    let key = key_param(&params, "release one task with POST /v1/tasks/{id}/release")?;
    let outcome = engine.release_by_key(&tenant, &key).await?;
    Ok(Json(KeyReleaseView::new(&key, &outcome)))
}
