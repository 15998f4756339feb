//! The API's problems (RFC 9457, `application/problem+json`) as HTTP answers.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

pub use boomerang_api::problem::Problem;

/// A problem on its way out as an answer: what every handler and extractor fails with.
/// Anything that becomes a problem (a refused request, an engine error) converts with `?`.
#[derive(Debug)]
pub struct ApiError(pub Problem);

impl<E: Into<Problem>> From<E> for ApiError {
    fn from(e: E) -> Self {
        ApiError(e.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let problem = self.0;
        let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::BAD_REQUEST);
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut res = (status, body).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(seconds) = problem.retry_after {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if status == StatusCode::UNAUTHORIZED {
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        res
    }
}
