//! `/v1/tasks/bulk` and `/v1/bulk-jobs`: an action over every task a filter takes,
//! previewed or run as a job, and the jobs with their progress.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::JsonBody;
use super::openapi::{Invalid, Malformed, NotFound, TooLarge};
use super::problem::{ApiError, Problem};
use boomerang_api::request::BulkRequest;
use boomerang_api::view::{BulkJobView, BulkJobsView, BulkPreviewView};
use boomerang_core::domain::{BulkJobId, TenantId};
use boomerang_core::engine::Engine;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(bulk_action))
        .routes(routes!(list_bulk_jobs))
        .routes(routes!(get_bulk_job))
}

/// A bulk job's id in a path.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
struct JobPath {
    /// The job's id (a ULID).
    #[param(value_type = String, example = "01JD0Q5ZQ7N0Z8B6W4Y3X2V1TS")]
    id: BulkJobId,
}

impl<S: Send + Sync> FromRequestParts<S> for JobPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let not_found = || Problem::not_found("no such bulk job");
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| not_found())?;
        let id = raw.parse().map_err(|_| not_found())?;
        Ok(JobPath { id })
    }
}

/// Retry, cancel or release every task a filter takes.
///
/// With `dry_run`, answers how many tasks it would act on and a sample of them, changing
/// nothing. Otherwise starts a job (`202`, its URL in `Location`) that pages through your
/// tasks and acts on each one the filter takes, at most `per_second` a second; follow it
/// at `/v1/bulk-jobs/{id}`. A job goes on after a restart where it stopped, and never acts
/// on a task twice: a task it retried that failed again is not retried again by it. A
/// task registered after the job began is not its. Retried and released tasks are
/// delivered like any other, within their destination's limits and breaker.
#[utoipa::path(post, path = "/tasks/bulk", tag = "bulk", operation_id = "bulk_action",
    request_body = BulkRequest,
    responses(
        (status = 200, description = "The preview (`dry_run`): nothing was changed", body = BulkPreviewView),
        (status = 202, description = "The job, started", body = BulkJobView),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn bulk_action(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    JsonBody(request): JsonBody<BulkRequest>,
) -> Result<Response, ApiError> {
    let order = request.order()?;
    let action = order.plan.action.as_str();
    if order.dry_run {
        let preview = engine.preview_bulk(&tenant, &order.plan).await?;
        let view = BulkPreviewView::new(action, preview.count, preview.complete, &preview.sample);
        return Ok(Json(view).into_response());
    }
    let job = engine.start_bulk(&tenant, order.plan).await?;
    let location = format!("/v1/bulk-jobs/{}", job.id);
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(BulkJobView::new(&job)),
    )
        .into_response())
}

/// Your newest bulk jobs (up to 50), newest first, with their progress.
#[utoipa::path(get, path = "/bulk-jobs", tag = "bulk", operation_id = "list_bulk_jobs",
    responses((status = 200, description = "The jobs", body = BulkJobsView)))]
async fn list_bulk_jobs(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<BulkJobsView>, ApiError> {
    let jobs = engine.bulk_jobs(&tenant).await?;
    Ok(Json(BulkJobsView {
        jobs: jobs.iter().map(BulkJobView::new).collect(),
    }))
}

/// A bulk job: its progress, and its report once finished.
#[utoipa::path(get, path = "/bulk-jobs/{id}", tag = "bulk", operation_id = "get_bulk_job",
    params(JobPath),
    responses(
        (status = 200, description = "The job", body = BulkJobView),
        (status = 404, response = NotFound),
    ))]
async fn get_bulk_job(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    path: JobPath,
) -> Result<Json<BulkJobView>, ApiError> {
    match engine.bulk_job(&tenant, &path.id).await? {
        Some(job) => Ok(Json(BulkJobView::new(&job))),
        None => Err(Problem::not_found("no such bulk job").into()),
    }
}
