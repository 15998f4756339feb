//! `/v1/tasks`: register (one or a batch), read, list, cancel (one or by key) and redrive.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{caller_trace, key_param, JsonBody, KeyParams, QueryParams, TaskPath};
use super::openapi::{BadQuery, Conflict, Invalid, Malformed, NotFound, TooLarge};
use super::problem::{ApiError, Problem};
use super::templates::templates_for;
use boomerang_api::request::{business_key, BatchRequest, PageQuery, TaskRequest};
use boomerang_api::schema::enums;
use boomerang_api::view::{BatchItemView, BatchView, KeyCancelView, PageView, TaskView};
use boomerang_core::domain::limits::DEFAULT_PAGE;
use boomerang_core::domain::{FieldPath, Status, TaskId, TenantId};
use boomerang_core::engine::Engine;
use boomerang_core::ports::ListQuery;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(create_task, list_tasks, cancel_by_key))
        .routes(routes!(create_tasks))
        .routes(routes!(get_task, cancel_task))
        .routes(routes!(retry_task))
}

/// The `Idempotency-Key` header of a registration.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // read from the headers by hand, so a bad value is a problem naming it
struct IdempotencyHeader {
    /// Registers the task at most once: a repeat with the same key and request answers the
    /// task registered first (200). Same as the `idempotency_key` field; visible ASCII.
    #[param(rename = "Idempotency-Key", value_type = String, required = false,
            min_length = 1, max_length = 255)]
    idempotency_key: Option<String>,
}

/// Register a callback.
///
/// Answers 201 with the new task, or 200 with the task registered before when the same
/// idempotency key came with the same request.
#[utoipa::path(post, path = "/tasks", tag = "tasks", operation_id = "create_task",
    request_body = TaskRequest,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Registered", body = TaskView,
         headers(("Location" = String, description = "The task's URL")),
         links(
            ("get" = (operation_id = "get_task", parameters(("id" = "$response.body#/id")))),
            ("cancel" = (operation_id = "cancel_task", parameters(("id" = "$response.body#/id")))),
            ("retry" = (operation_id = "retry_task", parameters(("id" = "$response.body#/id")))),
            ("release" = (operation_id = "release_task", parameters(("id" = "$response.body#/id")))),
         )),
        (status = 200, description = "Registered before with this idempotency key and request",
         body = TaskView, headers(("Location" = String, description = "The task's URL"))),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn create_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    headers: HeaderMap,
    JsonBody(task): JsonBody<TaskRequest>,
) -> Result<Response, ApiError> {
    let header_key = match headers.get("idempotency-key") {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| Problem::invalid("idempotency_key", "must be visible ASCII"))?,
        ),
        None => None,
    };
    let templates = templates_for(&engine, &tenant, [&task]).await?;
    let submission = templates.apply(task)?.submission(header_key)?;
    let submission = submission.traced(caller_trace(&headers).as_ref());
    let registration = engine.submit(&tenant, submission).await?;
    let view = TaskView::new(&registration.task, Some(&[]));
    let status = if registration.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let location = format!("/v1/tasks/{}", registration.task.id);
    Ok((status, [(header::LOCATION, location)], Json(view)).into_response())
}

/// Register up to 100 callbacks at once.
///
/// Every task is checked before any is stored: one bad task refuses the batch with a
/// problem naming it (`tasks[3].delay`). Then each is stored as `POST /v1/tasks` would; the
/// answer holds one result per task, in order: its status (201, 200 for an idempotent
/// repeat, or a problem's) and the task or the problem.
#[utoipa::path(post, path = "/tasks/batch", tag = "tasks", operation_id = "create_tasks",
    request_body = BatchRequest,
    responses(
        (status = 200, description = "One result per task, in order", body = BatchView),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn create_tasks(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    headers: HeaderMap,
    JsonBody(batch): JsonBody<BatchRequest>,
) -> Result<Json<BatchView>, ApiError> {
    if headers.contains_key("idempotency-key") {
        return Err(Problem::invalid(
            "idempotency_key",
            "a batch takes each task's own idempotency_key field, not the header",
        )
        .into());
    }
    let templates = templates_for(&engine, &tenant, &batch.tasks).await?;
    let caller = caller_trace(&headers);
    let news = (batch.new_tasks(&templates)?.into_iter())
        .map(|new| new.traced(caller.as_ref()))
        .collect();
    let results = engine
        .register_batch(&tenant, news)
        .await
        .map_err(|(i, e)| Problem::of_part(e, FieldPath::root().name("tasks").index(i)))?;
    let tasks = results
        .into_iter()
        .map(|result| match result {
            Ok(r) => BatchItemView {
                status: if r.created { 201 } else { 200 },
                task: Some(TaskView::new(&r.task, Some(&[]))),
                problem: None,
            },
            Err(e) => {
                let problem = Problem::from(e);
                BatchItemView {
                    status: problem.status,
                    task: None,
                    problem: Some(problem),
                }
            }
        })
        .collect();
    Ok(Json(BatchView { tasks }))
}

/// A task, with its attempts.
#[utoipa::path(get, path = "/tasks/{id}", tag = "tasks", operation_id = "get_task",
    params(TaskPath),
    responses(
        (status = 200, description = "The task and its attempts, oldest first", body = TaskView),
        (status = 404, response = NotFound),
    ))]
async fn get_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    TaskPath { id }: TaskPath,
) -> Result<Json<TaskView>, ApiError> {
    let details = engine.get(&tenant, &id).await?;
    Ok(Json(TaskView::new(&details.task, Some(&details.attempts))))
}

/// The query of `GET /v1/tasks`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only tasks in this state.
    #[param(value_type = Option<enums::Status>)]
    status: Option<String>,
    /// Only tasks with this business key.
    #[param(min_length = 1, max_length = 255)]
    key: Option<String>,
    /// Tasks per page (1–100; default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(min_length = 26, max_length = 26)]
    cursor: Option<String>,
}

/// List tasks, newest first.
///
/// A page holds up to `limit` tasks (without their attempts); `next_cursor`, when set,
/// fetches the next.
#[utoipa::path(get, path = "/tasks", tag = "tasks", operation_id = "list_tasks",
    params(ListParams),
    responses(
        (status = 200, description = "A page of tasks", body = PageView),
        (status = 400, response = BadQuery),
        (status = 422, response = Invalid),
    ))]
async fn list_tasks(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<PageView>, ApiError> {
    let status = params
        .status
        .map(|s| {
            Status::parse(&s).ok_or_else(|| {
                let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
                Problem::invalid("status", format!("must be one of {}", all.join(", ")))
            })
        })
        .transpose()?;
    let page = PageQuery {
        limit: params.limit,
        cursor: params.cursor,
    };
    let (limit, cursor) = (page.limit(DEFAULT_PAGE)?, page.cursor::<TaskId>()?);
    let key = params.key.map(business_key).transpose()?;
    let query = ListQuery {
        status,
        key,
        limit,
        cursor,
    };
    let page = engine.list(&tenant, &query).await?;
    Ok(Json(PageView::new(&page)))
}

/// Cancel a scheduled or held task.
///
/// A task being delivered, or finished, cannot be canceled (409). A canceled task stays
/// readable.
#[utoipa::path(delete, path = "/tasks/{id}", tag = "tasks", operation_id = "cancel_task",
    params(TaskPath),
    responses(
        (status = 200, description = "Canceled", body = TaskView),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
    ))]
async fn cancel_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    TaskPath { id }: TaskPath,
) -> Result<Json<TaskView>, ApiError> {
    let task = engine.cancel(&tenant, &id).await?;
    Ok(Json(TaskView::new(&task, None)))
}

/// Cancel every scheduled or held task with a business key.
///
/// One request looks at up to 1,000 tasks with the key; `more: true` says to send it
/// again.
#[utoipa::path(delete, path = "/tasks", tag = "tasks", operation_id = "cancel_by_key",
    params(KeyParams),
    responses(
        (status = 200, description = "What was canceled, and what could not be", body = KeyCancelView),
        (status = 400, response = BadQuery),
        (status = 422, response = Invalid),
    ))]
async fn cancel_by_key(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    QueryParams(params): QueryParams<KeyParams>,
) -> Result<Json<KeyCancelView>, ApiError> {
    let key = key_param(params, "cancel one task with DELETE /v1/tasks/{id}")?;
    let outcome = engine.cancel_by_key(&tenant, &key).await?;
    Ok(Json(KeyCancelView::new(&key, &outcome)))
}

/// Redrive a failed task: it is scheduled again, now, with a new round of attempts.
#[utoipa::path(post, path = "/tasks/{id}/retry", tag = "tasks", operation_id = "retry_task",
    params(TaskPath),
    responses(
        (status = 200, description = "Scheduled again", body = TaskView),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
    ))]
async fn retry_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    TaskPath { id }: TaskPath,
) -> Result<Json<TaskView>, ApiError> {
    let task = engine.redrive(&tenant, &id).await?;
    Ok(Json(TaskView::new(&task, None)))
}
