//! Releasing held tasks: `POST /v1/tasks/{id}/release` and `POST /v1/tasks/release?key=…`.
//! (A held task is registered with `hold` and canceled like any task.)

use std::sync::Arc;

use axum::extract::State;
use axum::{Extension, Json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{key_param, KeyParams, QueryParams, TaskPath};
use super::openapi::{BadQuery, Conflict, Invalid, NotFound};
use super::problem::ApiError;
use boomerang_api::view::{KeyReleaseView, TaskView};
use boomerang_core::domain::TenantId;
use boomerang_core::engine::Engine;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(release_by_key))
        .routes(routes!(release_task))
}

/// Release a held task: it is called at its fire time (or now, if that has passed).
///
/// A repeat answers the task as it is now (200 either way); a task that is not held and
/// was never released (canceled, say) is a 409.
#[utoipa::path(post, path = "/tasks/{id}/release", tag = "holds", operation_id = "release_task",
    params(TaskPath),
    responses(
        (status = 200, description = "Released (or released before)", body = TaskView),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
    ))]
async fn release_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    TaskPath { id }: TaskPath,
) -> Result<Json<TaskView>, ApiError> {
    let release = engine.release(&tenant, &id).await?;
    Ok(Json(TaskView::new(&release.task, None)))
}

/// Release every held task with a business key.
///
/// One request looks at up to 1,000 tasks with the key; `more: true` says to send it
/// again.
#[utoipa::path(post, path = "/tasks/release", tag = "holds", operation_id = "release_by_key",
    params(KeyParams),
    responses(
        (status = 200, description = "What was released, and what was not held", body = KeyReleaseView),
        (status = 400, response = BadQuery),
        (status = 422, response = Invalid),
    ))]
async fn release_by_key(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    QueryParams(params): QueryParams<KeyParams>,
) -> Result<Json<KeyReleaseView>, ApiError> {
    let key = key_param(params, "release one task with POST /v1/tasks/{id}/release")?;
    let outcome = engine.release_by_key(&tenant, &key).await?;
    Ok(Json(KeyReleaseView::new(&key, &outcome)))
}
