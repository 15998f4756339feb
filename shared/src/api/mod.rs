//! The HTTP API: one axum Router for the local server and, through `lambda_http`, the API
//! Lambda.

pub mod console;
pub mod holds;
pub mod openapi;
pub mod policies;
pub mod problem;
pub mod stats;
pub mod task_request;
pub mod views;

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::{BusinessKey, Status, TaskId, TenantId};
use crate::engine::{Engine, MAX_BATCH};
use crate::ports::ListQuery;
use openapi::{BadQuery, Conflict, Invalid, Malformed, NotFound, TooLarge};
use problem::Problem;
use task_request::{BatchRequest, TaskRequest};
use views::{BatchItemView, BatchView, KeyCancelView, PageView, TaskView};

/// Requests larger than this are refused before they are parsed.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
pub const DEFAULT_PAGE: u32 = 20;
pub const MAX_PAGE: u32 = 100;

type Routes = OpenApiRouter<Arc<Engine>>;

pub fn router(engine: Arc<Engine>) -> Router {
    routes(engine).layer(CatchPanicLayer::custom(panic_problem))
}

/// The API's document, as `/openapi.json` serves it.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, doc) = documented_routes();
    doc
}

fn routes(engine: Arc<Engine>) -> Router {
    let (routes, doc) = documented_routes();
    let authenticated = routes
        .authenticated
        .route_layer(middleware::from_fn_with_state(engine.clone(), authenticate));
    Router::new()
        .merge(routes.public)
        .merge(authenticated)
        .fallback(|| async { Problem::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async { Problem::method_not_allowed() })
        .layer(Extension(openapi::Served::new(&doc)))
        .with_state(engine)
}

/// The Router's routes, split by whether they take the API key, and the document made
/// from the same registrations.
struct SplitRoutes {
    public: Router<Arc<Engine>>,
    authenticated: Router<Arc<Engine>>,
}

/// Every route is registered here, through `routes!`, which documents it too.
fn documented_routes() -> (SplitRoutes, utoipa::openapi::OpenApi) {
    let v1: Routes = OpenApiRouter::new()
        .routes(routes!(create_task, list_tasks, cancel_by_key))
        .routes(routes!(create_tasks))
        .routes(routes!(get_task, cancel_task))
        .routes(routes!(retry_task))
        .merge(policies::routes())
        .merge(holds::routes())
        .merge(stats::routes());
    let authenticated: Routes = OpenApiRouter::new()
        .nest("/v1", v1)
        .routes(routes!(metrics));
    let public: Routes = OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(openapi::openapi_json))
        .merge(console::routes());
    let (public, public_doc) = public.split_for_parts();
    let (authenticated, authenticated_doc) = authenticated.split_for_parts();
    let doc = openapi::document(public_doc, authenticated_doc);
    (
        SplitRoutes {
            public,
            authenticated,
        },
        doc,
    )
}

#[derive(Serialize, ToSchema)]
struct Health {
    #[schema(example = "ok")]
    status: &'static str,
}

/// Whether the server is up (no key needed).
#[utoipa::path(get, path = "/healthz", tag = "service", operation_id = "healthz",
    responses((status = 200, description = "The server is up", body = Health)))]
async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Logged when a request reached the last line of defence; the end-to-end harness fails
/// any server whose log contains it.
pub const PANIC_LOG: &str = "request handler panicked";

/// The last line of defence: a handler that panicked answers a 500 problem instead of
/// dropping the connection, and the panic is logged. No request should ever get here.
fn panic_problem(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = message, "{PANIC_LOG}");
    Problem::internal().into_response()
}

async fn authenticate(State(engine): State<Arc<Engine>>, mut req: Request, next: Next) -> Response {
    let key = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(key) = key.filter(|k| !k.is_empty()) else {
        return Problem::unauthorized().into_response();
    };
    match engine.authenticate(key).await {
        Ok(Some(tenant)) => {
            req.extensions_mut().insert(tenant);
            next.run(req).await
        }
        Ok(None) => Problem::unauthorized().into_response(),
        Err(e) => {
            tracing::error!(error = %e, "tenant lookup failed");
            Problem::unavailable("cannot check the API key right now").into_response()
        }
    }
}

/// Metrics in the Prometheus / OpenMetrics text format.
///
/// Kept by the local server; the Lambdas print CloudWatch metric lines instead, and
/// answer 404 here.
#[utoipa::path(get, path = "/metrics", tag = "service", operation_id = "metrics",
    responses(
        (status = 200, description = "The metrics",
         content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8", body = String),
        (status = 404, response = NotFound),
    ))]
async fn metrics(State(engine): State<Arc<Engine>>) -> Result<Response, Problem> {
    match engine.metrics_exposition().await? {
        Some(text) => Ok((
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response()),
        None => Err(Problem::not_found("this server keeps no metrics")),
    }
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
    body: Body,
) -> Result<Response, Problem> {
    let body = read_body(&headers, body).await?;
    // The body is read as JSON whatever its declared type: `curl -d` says form-urlencoded.
    let header_key = match headers.get("idempotency-key") {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| Problem::invalid("idempotency_key", "must be visible ASCII"))?,
        ),
        None => None,
    };
    let new = task_request::parse(&body)?.validate(header_key)?;
    let registration = engine.register(&tenant, new).await?;
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
    body: Body,
) -> Result<Json<BatchView>, Problem> {
    let body = read_body(&headers, body).await?;
    if headers.contains_key("idempotency-key") {
        return Err(Problem::invalid(
            "idempotency_key",
            "a batch takes each task's own idempotency_key field, not the header",
        ));
    }
    let batch = task_request::parse_batch(&body)?;
    if batch.tasks.is_empty() || batch.tasks.len() > MAX_BATCH {
        return Err(Problem::invalid(
            "tasks",
            format!("must hold between 1 and {MAX_BATCH} tasks"),
        ));
    }
    let mut news = Vec::with_capacity(batch.tasks.len());
    for (i, task) in batch.tasks.into_iter().enumerate() {
        news.push(
            task.validate(None)
                .map_err(|p| p.within(&format!("tasks[{i}]")))?,
        );
    }
    let results = engine
        .register_batch(&tenant, news)
        .await
        .map_err(|(i, e)| Problem::from(e).within(&format!("tasks[{i}]")))?;
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

/// Reads the request body, refusing an oversized one from its declared length before
/// reading any of it (and from its actual length when it is streamed).
async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, Problem> {
    let too_large = || {
        Problem::too_large(
            "body",
            format!("requests must be at most {} KiB", MAX_REQUEST_BYTES / 1024),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > MAX_REQUEST_BYTES) {
        return Err(too_large());
    }
    axum::body::to_bytes(body, MAX_REQUEST_BYTES)
        .await
        .map_err(|e| {
            let length_limit = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if length_limit {
                too_large()
            } else {
                Problem::malformed(format!("could not read the request body: {e}"))
            }
        })
}

/// The task id of a path. Anything that is not a task id names no task: 404, like an id
/// nobody registered.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
struct TaskPath {
    /// The task's id, a ULID (`01JD2W9Q5Z4T8M3X6V7B0C1N2P`).
    #[param(value_type = String, min_length = 26, max_length = 26)]
    id: TaskId,
}

impl<S: Send + Sync> FromRequestParts<S> for TaskPath {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Problem> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .ok()
            .and_then(|Path(raw)| raw.parse().ok())
            .map(|id| TaskPath { id })
            .ok_or_else(|| Problem::not_found("no such task (ids are 26-character ULIDs)"))
    }
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
) -> Result<Json<TaskView>, Problem> {
    let details = engine.get(&tenant, &id).await?;
    Ok(Json(TaskView::new(&details.task, Some(&details.attempts))))
}

/// The query of `GET /v1/tasks`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only tasks in this state.
    #[param(value_type = Option<Status>)]
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
) -> Result<Json<PageView>, Problem> {
    let status = params
        .status
        .map(|s| {
            Status::parse(&s).ok_or_else(|| {
                let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
                Problem::invalid("status", format!("must be one of {}", all.join(", ")))
            })
        })
        .transpose()?;
    let limit = match params.limit {
        None => DEFAULT_PAGE,
        Some(l) => l
            .parse::<u32>()
            .ok()
            .filter(|l| (1..=MAX_PAGE).contains(l))
            .ok_or_else(|| {
                Problem::invalid("limit", format!("must be between 1 and {MAX_PAGE}"))
            })?,
    };
    let cursor = params
        .cursor
        .map(|c| {
            c.parse::<TaskId>()
                .map_err(|_| Problem::invalid("cursor", "is not a cursor from a previous page"))
        })
        .transpose()?;
    let key = params.key.map(task_request::business_key).transpose()?;
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
) -> Result<Json<TaskView>, Problem> {
    let task = engine.cancel(&tenant, &id).await?;
    Ok(Json(TaskView::new(&task, None)))
}

/// The query of an action by business key.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct KeyParams {
    /// The business key of the tasks to act on.
    #[param(required = true, min_length = 1, max_length = 255)]
    key: Option<String>,
}

/// Cancel every scheduled or held task with a business key.
///
/// One request handles up to 100 tasks; `more` says to send it again.
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
) -> Result<Json<KeyCancelView>, Problem> {
    let key = key_param(params, "cancel one task with DELETE /v1/tasks/{id}")?;
    let outcome = engine.cancel_by_key(&tenant, &key).await?;
    Ok(Json(KeyCancelView::new(&key, &outcome)))
}

/// The `key` of an action by business key; `one` says how to act on one task instead.
fn key_param(params: KeyParams, one: &str) -> Result<BusinessKey, Problem> {
    match params.key {
        Some(k) => Ok(task_request::business_key(k)?),
        None => Err(Problem::invalid("key", format!("is required ({one})"))),
    }
}

/// The query string as `T`. One that cannot be read (a parameter given twice) is a 400
/// problem naming it, not axum's plain-text rejection.
struct QueryParams<T>(T);

impl<T, S> FromRequestParts<S> for QueryParams<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Problem> {
        Query::<T>::try_from_uri(&parts.uri)
            .map(|Query(params)| QueryParams(params))
            .map_err(|e| Problem::bad_query(e.body_text()))
    }
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
) -> Result<Json<TaskView>, Problem> {
    let task = engine.retry(&tenant, &id).await?;
    Ok(Json(TaskView::new(&task, None)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[tokio::test]
    async fn a_panicking_handler_answers_a_500_problem_instead_of_dropping_the_connection() {
        let app = Router::new()
            .route(
                "/boom",
                axum::routing::get(|| async { panic!("boom") as &'static str }),
            )
            .layer(CatchPanicLayer::custom(panic_problem));
        let response = app
            .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["type"], "urn:boomerang:problem:internal");
    }
}
