//! What the handlers share to read a request: the body as a request type, a task id in
//! the path, a query string. Each turns what axum would refuse in plain text into a problem, so that every
//! refusal has a problem body.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::{header, HeaderMap};
use serde::Deserialize;
use utoipa::IntoParams;

use super::problem::{ApiError, Problem};
use boomerang_api::request::{business_key, RequestBody};
use boomerang_core::domain::limits::MAX_REQUEST_BYTES;
use boomerang_core::domain::{BusinessKey, TaskId, TraceParent};

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

/// A request body read as `T` ([`RequestBody`]): one over the size limit is refused from
/// its declared length before any of it is read, and one that does not read as `T` is a
/// problem naming the field that broke it. The body is read as JSON whatever its declared
/// type: `curl -d` says form-urlencoded.
pub(crate) struct JsonBody<T>(pub T);

impl<T: RequestBody, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        let bytes = read_body(&parts.headers, body).await?;
        Ok(JsonBody(T::parse(&bytes)?))
    }
}

/// The task id of a path. Anything that is not a task id names no task: 404, like an id
/// nobody registered.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct TaskPath {
    /// The task's id, a ULID (`01JD2W9Q5Z4T8M3X6V7B0C1N2P`).
    #[param(value_type = String, min_length = 26, max_length = 26)]
    pub id: TaskId,
}

impl<S: Send + Sync> FromRequestParts<S> for TaskPath {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .ok()
            .and_then(|Path(raw)| raw.parse().ok())
            .map(|id| TaskPath { id })
            .ok_or_else(|| {
                ApiError(Problem::not_found(
                    "no such task (ids are 26-character ULIDs)",
                ))
            })
    }
}

/// The query of an action by business key.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct KeyParams {
    /// The business key of the tasks to act on.
    #[param(required = true, min_length = 1, max_length = 255)]
    pub key: Option<String>,
}

/// The `key` of an action by business key; `one` says how to act on one task instead.
pub(crate) fn key_param(params: KeyParams, one: &str) -> Result<BusinessKey, ApiError> {
    match params.key {
        Some(k) => Ok(business_key(k)?),
        None => Err(Problem::invalid("key", format!("is required ({one})")).into()),
    }
}

/// The query string as `T`. One that cannot be read (a parameter given twice) is a 400
/// problem naming it, not axum's plain-text rejection.
pub(crate) struct QueryParams<T>(pub T);

impl<T, S> FromRequestParts<S> for QueryParams<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, ApiError> {
        Query::<T>::try_from_uri(&parts.uri)
            .map(|Query(params)| QueryParams(params))
            .map_err(|e| ApiError(Problem::bad_query(e.body_text())))
    }
}

/// The caller's trace context (W3C `traceparent` and `tracestate`), if it sent a valid one.
/// Two `traceparent` headers are as none; several `tracestate` headers are one list.
pub(crate) fn caller_trace(headers: &HeaderMap) -> Option<TraceParent> {
    let mut parents = headers.get_all("traceparent").iter();
    let (Some(parent), None) = (parents.next(), parents.next()) else {
        return None;
    };
    let states: Vec<&str> = (headers.get_all("tracestate").iter())
        .filter_map(|v| v.to_str().ok())
        .collect();
    let state = (!states.is_empty()).then(|| states.join(","));
    TraceParent::from_headers(parent.to_str().ok(), state.as_deref())
}

/// A key (a flow's, an order key's) as its path segment holds it. A segment that is not
/// UTF-8 is refused as a key that breaks the rules (`422` naming `key`), not with axum's
/// plain text.
pub(crate) async fn key_segment<S: Send + Sync>(
    parts: &mut axum::http::request::Parts,
    state: &S,
) -> Result<String, ApiError> {
    match Path::<String>::from_request_parts(parts, state).await {
        Ok(Path(key)) => Ok(key),
        Err(_) => Err(Problem::invalid("key", "must be UTF-8").into()),
    }
}
