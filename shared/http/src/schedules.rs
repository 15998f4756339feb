//! `/v1/schedules`: recurring callbacks. Each occurrence is an ordinary task (listed with
//! the tenant's tasks, with its `schedule_id`).

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::openapi::{Object, RefOr, Schema};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{JsonBody, QueryParams};
use super::openapi::{BadQuery, Conflict, Invalid, Malformed, NotFound, TooLarge};
use super::problem::{ApiError, Problem};
use boomerang_api::request::{
    PageQuery, ScheduleDraft, ScheduleFields, TaskRequest, NOT_ON_A_SCHEDULE,
};
use boomerang_api::view::{ScheduleListView, ScheduleView};
use boomerang_core::domain::limits::DEFAULT_SCHEDULE_PAGE;
use boomerang_core::domain::{ScheduleId, TenantId};
use boomerang_core::engine::Engine;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(create_schedule, list_schedules))
        .routes(routes!(get_schedule, delete_schedule))
        .routes(routes!(pause_schedule))
        .routes(routes!(resume_schedule))
}

/// A schedule's id in a path.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
struct SchedulePath {
    /// The schedule's id (a ULID).
    #[param(value_type = String, example = "01JD0Q5ZQ7N0Z8B6W4Y3X2V1TS")]
    id: ScheduleId,
}

impl<S: Send + Sync> FromRequestParts<S> for SchedulePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let not_found = || Problem::not_found("no such schedule");
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| not_found())?;
        let id = raw.parse().map_err(|_| not_found())?;
        Ok(SchedulePath { id })
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// At most this many (1–100, default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// A previous page's `next_cursor`.
    cursor: Option<String>,
}

/// The body of `POST /v1/schedules`, for the document: one object, the schedule's own
/// fields and a task's, without those a schedule does not take.
struct ScheduleRequest;

impl utoipa::PartialSchema for ScheduleRequest {
    fn schema() -> RefOr<Schema> {
        let mut merged = match TaskRequest::schema() {
            RefOr::T(Schema::Object(task)) => task,
            _ => Object::new(),
        };
        for field in NOT_ON_A_SCHEDULE {
            merged.properties.remove(field);
            merged.required.retain(|r| r != field);
        }
        if let RefOr::T(Schema::Object(own)) = ScheduleFields::schema() {
            merged.properties.extend(own.properties);
        }
        merged.description = Some(
            "A schedule's own fields (`cron` or `every`, `timezone`, `start_at`, `end_at`, \
             `catch_up`) and the fields of the task each occurrence is."
                .into(),
        );
        merged.example = None;
        merged.examples = Vec::new();
        RefOr::T(Schema::Object(merged))
    }
}

impl ToSchema for ScheduleRequest {}

/// Create a recurring callback.
///
/// Each occurrence is an ordinary task, with its own attempts, alerts and flow limits, and
/// `schedule_id` set. Daylight-saving changes follow the zone: a local time a change skips
/// fires once right after the gap, one it repeats fires once.
#[utoipa::path(post, path = "/schedules", tag = "schedules", operation_id = "create_schedule",
    request_body(content = ScheduleRequest, example = json!({
        "cron": "0 9 * * MON-FRI", "timezone": "Europe/Paris",
        "url": "https://example.com/hooks/daily-report", "body": {"report": "daily"}
    })),
    responses(
        (status = 201, description = "Created", body = ScheduleView),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn create_schedule(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    JsonBody(draft): JsonBody<ScheduleDraft>,
) -> Result<Response, ApiError> {
    let templates = super::templates::templates_for(&engine, &tenant, [&draft.task]).await?;
    let new = draft.new_schedule(&templates)?;
    let schedule = engine.create_schedule(&tenant, new).await?;
    let location = format!("/v1/schedules/{}", schedule.id);
    let view = ScheduleView::new(&schedule, engine.now());
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    )
        .into_response())
}

/// List the tenant's schedules, newest first.
#[utoipa::path(get, path = "/schedules", tag = "schedules", operation_id = "list_schedules",
    params(ListParams),
    responses(
        (status = 200, description = "A page of schedules", body = ScheduleListView),
        (status = 400, response = BadQuery),
        (status = 422, response = Invalid),
    ))]
async fn list_schedules(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<ScheduleListView>, ApiError> {
    let page = PageQuery {
        limit: params.limit,
        cursor: params.cursor,
    };
    let (limit, cursor) = (page.limit(DEFAULT_SCHEDULE_PAGE)?, page.cursor()?);
    let page = engine.schedules(&tenant, cursor, limit).await?;
    let now = engine.now();
    Ok(Json(ScheduleListView {
        schedules: page
            .schedules
            .iter()
            .map(|s| ScheduleView::new(s, now))
            .collect(),
        next_cursor: page.next_cursor.map(|c| c.to_string()),
    }))
}

/// A schedule.
#[utoipa::path(get, path = "/schedules/{id}", tag = "schedules", operation_id = "get_schedule",
    params(SchedulePath),
    responses(
        (status = 200, description = "The schedule", body = ScheduleView),
        (status = 404, response = NotFound),
    ))]
async fn get_schedule(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    SchedulePath { id }: SchedulePath,
) -> Result<Json<ScheduleView>, ApiError> {
    let schedule = engine.schedule(&tenant, &id).await?;
    Ok(Json(ScheduleView::new(&schedule, engine.now())))
}

/// Delete a schedule: its pending occurrence is skipped (one under way finishes).
#[utoipa::path(delete, path = "/schedules/{id}", tag = "schedules", operation_id = "delete_schedule",
    params(SchedulePath),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, response = NotFound),
    ))]
async fn delete_schedule(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    SchedulePath { id }: SchedulePath,
) -> Result<StatusCode, ApiError> {
    engine.delete_schedule(&tenant, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Pause a schedule: its pending occurrence is skipped, and none follows until resumed.
#[utoipa::path(post, path = "/schedules/{id}/pause", tag = "schedules", operation_id = "pause_schedule",
    params(SchedulePath),
    responses(
        (status = 200, description = "Paused", body = ScheduleView),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
    ))]
async fn pause_schedule(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    SchedulePath { id }: SchedulePath,
) -> Result<Json<ScheduleView>, ApiError> {
    let schedule = engine.pause_schedule(&tenant, &id).await?;
    Ok(Json(ScheduleView::new(&schedule, engine.now())))
}

/// Resume a paused schedule from its next slot (slots passed while paused do not fire).
#[utoipa::path(post, path = "/schedules/{id}/resume", tag = "schedules", operation_id = "resume_schedule",
    params(SchedulePath),
    responses(
        (status = 200, description = "Resumed", body = ScheduleView),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
    ))]
async fn resume_schedule(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    SchedulePath { id }: SchedulePath,
) -> Result<Json<ScheduleView>, ApiError> {
    let schedule = engine.resume_schedule(&tenant, &id).await?;
    Ok(Json(ScheduleView::new(&schedule, engine.now())))
}
