//! The web console at `/console`: plain files (no build step) embedded in the binary and
//! served by the same Router, so it works under `boomerang serve` and behind API Gateway
//! alike. Its pages call this API only, on the same origin, with the key the user signs in
//! with; the Content-Security-Policy holds the browser to that as well.

use std::sync::Arc;

use axum::http::{header, HeaderValue, Uri};
use axum::response::{IntoResponse, Response};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::openapi::NotFound;
use super::problem::{ApiError, Problem};
use boomerang_core::engine::Engine;

const PAGE: &str = include_str!("../console/index.html");

/// The console's files other than its page: name, content type, contents.
const FILES: [(&str, &str, &str); 2] = [
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/console.js"),
    ),
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("../console/console.css"),
    ),
];

/// Same origin only: scripts, styles and API calls; no frames, no other hosts.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
    form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(page))
        .routes(routes!(file))
}

fn serve(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        // Small files: fetched again each time, so a new binary's console shows at once.
        (header::CACHE_CONTROL, "no-cache"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The console: sign in with an API key, then see and act on tasks.
#[utoipa::path(get, path = "/console", tag = "console", operation_id = "console",
    responses((status = 200, description = "The console's page",
               content_type = "text/html; charset=utf-8", body = String)))]
async fn page() -> Response {
    serve("text/html; charset=utf-8", PAGE)
}

/// A file of the console's, named in a path.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // read from the URI, so that no path is refused in plain text
struct FilePath {
    /// `console.js` or `console.css`.
    #[param(example = "console.js")]
    file: String,
}

/// The console's script or style sheet.
#[utoipa::path(get, path = "/console/{file}", tag = "console", operation_id = "console_file",
    params(FilePath),
    responses(
        (status = 200, description = "The file",
         content((String = "text/javascript; charset=utf-8"), (String = "text/css; charset=utf-8"))),
        (status = 404, response = NotFound),
    ))]
async fn file(uri: Uri) -> Result<Response, ApiError> {
    let name = uri.path().rsplit('/').next().unwrap_or_default();
    FILES
        .iter()
        .find(|(file, _, _)| *file == name)
        .map(|(_, content_type, body)| serve(content_type, body))
        .ok_or_else(|| ApiError(Problem::not_found("no such file in the console")))
}
