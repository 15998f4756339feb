//! The HTTP API: one axum Router for the local server and, through `lambda_http`, the API
//! Lambda.

pub mod breakers;
pub mod bulk;
pub mod console;
mod extract;
pub mod flows;
pub mod holds;
pub mod openapi;
pub mod order_keys;
pub mod policies;
pub mod problem;
pub mod schedules;
pub mod signing_secrets;
pub mod stats;
pub mod tasks;
pub mod templates;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use boomerang_api::view::Health;
use boomerang_core::engine::Engine;
use boomerang_core::log_limit::LogLimit;
use boomerang_core::ports::Failing;
use openapi::{NotFound, Unready};
use problem::{ApiError, Problem};

type Routes = OpenApiRouter<Arc<Engine>>;

pub fn router(engine: Arc<Engine>) -> Router {
    routes(engine).layer(CatchPanicLayer::custom(panic_problem))
}

/// [`router`] for the API Lambda: after each answer, the spans it made are sent before the
/// invocation ends (the process may be frozen until the next one).
pub fn lambda_router(engine: Arc<Engine>) -> Router {
    let flushing = engine.clone();
    router(engine).layer(middleware::map_response(move |response: Response| {
        let engine = flushing.clone();
        async move {
            // A blocking wait, off the runtime's threads (and none without spans).
            engine.flush_spans_off_thread().await;
            response
        }
    }))
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
        .fallback(|| async { ApiError(Problem::not_found("no such endpoint")) })
        .method_not_allowed_fallback(|| async { ApiError(Problem::method_not_allowed()) })
        .layer(Extension(openapi::Served::new(doc)))
        .with_state(engine)
}

/// The Router's routes, split by whether they take the API key, and the document made
/// from the same registrations.
struct SplitRoutes {
    public: Router<Arc<Engine>>,
    authenticated: Router<Arc<Engine>>,
}

/// Every route, gathered: each module registers its own through `routes!`, which
/// documents it too.
fn documented_routes() -> (SplitRoutes, utoipa::openapi::OpenApi) {
    let v1: Routes = OpenApiRouter::new()
        .merge(tasks::routes())
        .merge(bulk::routes())
        .merge(policies::routes())
        .merge(templates::routes())
        .merge(schedules::routes())
        .merge(flows::routes())
        .merge(order_keys::routes())
        .merge(breakers::routes())
        .merge(holds::routes())
        .merge(signing_secrets::routes())
        .merge(stats::routes());
    let authenticated: Routes = OpenApiRouter::new()
        .nest("/v1", v1)
        .routes(routes!(metrics));
    let public: Routes = OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
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

/// Whether the server is up (no key needed): its process answers. For a liveness check;
/// `/readyz` says whether it can take work.
#[utoipa::path(get, path = "/healthz", tag = "service", operation_id = "healthz",
    responses((status = 200, description = "The server is up", body = Health)))]
async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// Whether the server can take work now (no key needed): the store takes a write, the
/// data directory has room, the timer runs (on AWS: the table answers). For a load
/// balancer's health check: `503` while any check fails, naming it and what it found (the
/// error underneath is in the server's log).
#[utoipa::path(get, path = "/readyz", tag = "service", operation_id = "readyz",
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, response = Unready),
    ))]
async fn readyz(State(engine): State<Arc<Engine>>) -> Result<Json<Health>, ApiError> {
    let failing = engine.unready().await;
    if failing.is_empty() {
        return Ok(Json(Health {
            status: "ready".into(),
        }));
    }
    // Which checks failed, not why: no key is needed here (the log has the rest).
    let failing: Vec<String> = failing.iter().map(Failing::public).collect();
    Err(ApiError(Problem::unavailable(format!(
        "not ready: {}",
        failing.join("; ")
    ))))
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
    ApiError(Problem::internal()).into_response()
}

async fn authenticate(State(engine): State<Arc<Engine>>, mut req: Request, next: Next) -> Response {
    let key = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(key) = key.filter(|k| !k.is_empty()) else {
        return ApiError(Problem::unauthorized()).into_response();
    };
    match engine.authenticate(key).await {
        Ok(Some(tenant)) => {
            if let Err(over) = engine.admit_request(&tenant) {
                return ApiError::from(over).into_response();
            }
            req.extensions_mut().insert(tenant);
            next.run(req).await
        }
        Ok(None) => ApiError(Problem::unauthorized()).into_response(),
        Err(e) => {
            static LIMIT: LogLimit = LogLimit::per_second();
            if let Some(left_out) = LIMIT.admit() {
                tracing::error!(error = %e, left_out, "tenant lookup failed");
            }
            ApiError(Problem::unavailable("cannot check the API key right now")).into_response()
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
async fn metrics(State(engine): State<Arc<Engine>>) -> Result<Response, ApiError> {
    match engine.metrics_exposition().await? {
        Some(text) => Ok((
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response()),
        None => Err(Problem::not_found("this server keeps no metrics").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;
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
