//! RFC 9457 problem details: every error the API returns, as `application/problem+json`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use boomerang_core::engine::EngineError;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// What kind of problem (`urn:boomerang:problem:invalid-field`); stable, for code.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: Cow<'static, str>,
    #[schema(value_type = String)]
    pub title: Cow<'static, str>,
    /// The response's HTTP status.
    pub status: u16,
    /// What happened, for people.
    pub detail: String,
    /// The request field at fault, as a path (`retry.schedule[2]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Sent as the `Retry-After` header (seconds), not in the body.
    #[serde(skip)]
    pub retry_after: Option<u64>,
}

impl Problem {
    fn new(status: StatusCode, kind: &'static str, title: &'static str, detail: String) -> Self {
        Self {
            kind: Cow::Borrowed(kind),
            title: Cow::Borrowed(title),
            status: status.as_u16(),
            detail,
            field: None,
            retry_after: None,
        }
    }

    /// Over one of the tenant's limits (429): nothing was done; `Retry-After` says when
    /// to try again.
    pub fn too_many(detail: impl Into<String>, retry_after: std::time::Duration) -> Self {
        let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        Self {
            retry_after: Some(seconds.max(1)),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "urn:boomerang:problem:too-many-requests",
                "Over a limit of yours; try again later",
                detail.into(),
            )
        }
    }

    /// A field whose value breaks a rule (422).
    pub fn invalid(field: impl Into<String>, detail: impl Into<String>) -> Self {
        let field = field.into();
        let detail = format!("{field}: {}", detail.into());
        Self {
            field: Some(field),
            ..Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "urn:boomerang:problem:invalid-field",
                "A field is invalid",
                detail,
            )
        }
    }

    /// The body is not JSON at all (400).
    pub fn malformed(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "urn:boomerang:problem:malformed-json",
            "The request body is not valid JSON",
            detail.into(),
        )
    }

    /// The query string cannot be read (a parameter given twice) (400).
    pub fn bad_query(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "urn:boomerang:problem:malformed-query",
            "The query string cannot be read",
            detail.into(),
        )
    }

    pub fn too_large(field: &str, detail: impl Into<String>) -> Self {
        Self {
            field: Some(field.to_string()),
            ..Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "urn:boomerang:problem:too-large",
                "The request is too large",
                detail.into(),
            )
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "urn:boomerang:problem:unauthorized",
            "Missing or invalid API key",
            "send `Authorization: Bearer <api key>`".into(),
        )
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "urn:boomerang:problem:not-found",
            "Not found",
            detail.into(),
        )
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "urn:boomerang:problem:method-not-allowed",
            "Method not allowed",
            "this path does not accept that method".into(),
        )
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "urn:boomerang:problem:conflict",
            "The task is not in a state that allows this",
            detail.into(),
        )
    }

    pub fn idempotency_mismatch() -> Self {
        Self {
            field: Some("idempotency_key".into()),
            ..Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "urn:boomerang:problem:idempotency-key-reused",
                "Idempotency key reused with a different request",
                "this idempotency key was already used with a different request body".into(),
            )
        }
    }

    /// Something went wrong that the client cannot fix (500).
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "urn:boomerang:problem:internal",
            "Internal error",
            "the server failed to handle this request".into(),
        )
    }

    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "urn:boomerang:problem:unavailable",
            "Temporarily unavailable; retry the request",
            detail.into(),
        )
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut res = (status, body).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(seconds) = self.retry_after {
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

impl Problem {
    /// The same problem about a part of a larger request: `tasks[3]` + `delay` is
    /// `tasks[3].delay`, in the field and in the detail.
    pub fn within(mut self, prefix: &str) -> Problem {
        let old = self.field.take();
        let field = match &old {
            Some(f) if f.starts_with('[') => format!("{prefix}{f}"),
            Some(f) => format!("{prefix}.{f}"),
            None => prefix.to_string(),
        };
        let rest = old
            .and_then(|f| {
                self.detail
                    .strip_prefix(&format!("{f}: "))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| self.detail.clone());
        self.detail = format!("{field}: {rest}");
        self.field = Some(field);
        self
    }
}

impl From<EngineError> for Problem {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound => Problem::not_found("no such task"),
            EngineError::Conflict(why) => Problem::conflict(why.to_string()),
            EngineError::ScheduleConflict(why) => Problem::conflict(why.to_string()),
            EngineError::IdempotencyMismatch => Problem::idempotency_mismatch(),
            EngineError::Invalid { field, detail } => Problem::invalid(field, detail),
            EngineError::Limited {
                detail,
                retry_after,
            } => Problem::too_many(detail, retry_after),
            EngineError::Store(e) => {
                tracing::error!(error = %e, "store error");
                // Nothing was acknowledged, so the client may safely retry.
                Problem::unavailable("the task store is unavailable")
            }
        }
    }
}
