//! The HTTP API: one axum Router for the local server and, through `lambda_http`, the API
//! Lambda.

pub mod holds;
pub mod policies;
pub mod problem;
pub mod task_request;
pub mod views;

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use tower_http::catch_panic::CatchPanicLayer;

use crate::domain::{BusinessKey, Status, TaskId, TenantId};
use crate::engine::{Engine, MAX_BATCH};
use crate::ports::ListQuery;
use problem::Problem;
use views::{KeyCancelView, PageView, TaskView};

/// Requests larger than this are refused before they are parsed.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
pub const DEFAULT_PAGE: u32 = 20;
pub const MAX_PAGE: u32 = 100;

pub fn router(engine: Arc<Engine>) -> Router {
    routes(engine).layer(CatchPanicLayer::custom(panic_problem))
}

fn routes(engine: Arc<Engine>) -> Router {
    let v1 = Router::new()
        .route(
            "/tasks",
            post(create_task).get(list_tasks).delete(cancel_by_key),
        )
        .route("/tasks/batch", post(create_tasks))
        .route("/tasks/{id}", get(get_task).delete(cancel_task))
        .route("/tasks/{id}/retry", post(retry_task))
        .merge(policies::routes())
        .merge(holds::routes())
        .route_layer(middleware::from_fn_with_state(engine.clone(), authenticate));
    let metrics = Router::new()
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(engine.clone(), authenticate));
    Router::new()
        .route(
            "/healthz",
            get(|| async { Json(serde_json::json!({"status": "ok"})) }),
        )
        .nest("/v1", v1)
        .merge(metrics)
        .fallback(|| async { Problem::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async { Problem::method_not_allowed() })
        .with_state(engine)
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

/// `GET /metrics`: Prometheus text exposition, where the server keeps metrics (the local
/// server; the Lambdas print metric lines instead and answer 404).
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

/// `POST /v1/tasks/batch`: up to [`MAX_BATCH`] registrations in one request. Every task is
/// checked before any is stored: one bad task refuses the batch with a problem naming it
/// (`tasks[3].delay`). Then each is stored as `POST /v1/tasks` would; the answer holds one
/// result per task, in order: its status (201, 200 for an idempotent repeat, or a
/// problem's) and the task or the problem.
async fn create_tasks(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
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
    let items: Vec<serde_json::Value> = results
        .into_iter()
        .map(|result| match result {
            Ok(r) => serde_json::json!({
                "status": if r.created { 201 } else { 200 },
                "task": TaskView::new(&r.task, Some(&[])),
            }),
            Err(e) => {
                let problem = Problem::from(e);
                serde_json::json!({"status": problem.status, "problem": problem})
            }
        })
        .collect();
    Ok(Json(serde_json::json!({ "tasks": items })).into_response())
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

fn task_id(raw: &str) -> Result<TaskId, Problem> {
    raw.parse()
        .map_err(|_| Problem::not_found("no such task (ids are 26-character ULIDs)"))
}

async fn get_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, Problem> {
    let details = engine.get(&tenant, &task_id(&id)?).await?;
    Ok(Json(TaskView::new(&details.task, Some(&details.attempts))))
}

async fn list_tasks(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<PageView>, Problem> {
    let status = params
        .get("status")
        .map(|s| {
            Status::parse(s).ok_or_else(|| {
                let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
                Problem::invalid("status", format!("must be one of {}", all.join(", ")))
            })
        })
        .transpose()?;
    let limit = match params.get("limit") {
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
        .get("cursor")
        .map(|c| {
            c.parse::<TaskId>()
                .map_err(|_| Problem::invalid("cursor", "is not a cursor from a previous page"))
        })
        .transpose()?;
    let key = params
        .get("key")
        .map(|k| task_request::business_key(k.clone()))
        .transpose()?;
    let query = ListQuery {
        status,
        key,
        limit,
        cursor,
    };
    let page = engine.list(&tenant, &query).await?;
    Ok(Json(PageView::new(&page)))
}

async fn cancel_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, Problem> {
    let task = engine.cancel(&tenant, &task_id(&id)?).await?;
    Ok(Json(TaskView::new(&task, None)))
}

/// `DELETE /v1/tasks?key=…`: cancels the tenant's `scheduled` tasks with that business key.
async fn cancel_by_key(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<KeyCancelView>, Problem> {
    let key = key_param(&params, "cancel one task with DELETE /v1/tasks/{id}")?;
    let outcome = engine.cancel_by_key(&tenant, &key).await?;
    Ok(Json(KeyCancelView::new(&key, &outcome)))
}

/// The `key` query parameter of an action by business key; `one` says how to act on
/// one task instead.
fn key_param(params: &HashMap<String, String>, one: &str) -> Result<BusinessKey, Problem> {
    match params.get("key") {
        Some(k) => Ok(task_request::business_key(k.clone())?),
        None => Err(Problem::invalid("key", format!("is required ({one})"))),
    }
}

async fn retry_task(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, Problem> {
    let task = engine.retry(&tenant, &task_id(&id)?).await?;
    Ok(Json(TaskView::new(&task, None)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[tokio::test]
    async fn a_panicking_handler_answers_a_500_problem_instead_of_dropping_the_connection() {
        let app = Router::new()
            .route("/boom", get(|| async { panic!("boom") as &'static str }))
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
