//! RFC 9457 problem details: every error the API returns, as `application/problem+json`.
//! The field at fault is a [`FieldPath`] until here, where it is written out once.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use boomerang_core::domain::{FieldPath, Invalid, SecretRefusal};
use boomerang_core::engine::EngineError;
use boomerang_core::log_limit::LogLimit;

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
    fn new(status: u16, kind: &'static str, title: &'static str, detail: String) -> Self {
        Self {
            kind: Cow::Borrowed(kind),
            title: Cow::Borrowed(title),
            status,
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
                429,
                "urn:boomerang:problem:too-many-requests",
                "Over a limit of yours; try again later",
                detail.into(),
            )
        }
    }

    /// A field whose value breaks a rule (422).
    pub fn invalid(field: impl Into<FieldPath>, detail: impl Into<String>) -> Self {
        let field = field.into().to_string();
        let detail = format!("{field}: {}", detail.into());
        Self {
            field: Some(field),
            ..Self::new(
                422,
                "urn:boomerang:problem:invalid-field",
                "A field is invalid",
                detail,
            )
        }
    }

    /// The body is not JSON at all (400).
    pub fn malformed(detail: impl Into<String>) -> Self {
        Self::new(
            400,
            "urn:boomerang:problem:malformed-json",
            "The request body is not valid JSON",
            detail.into(),
        )
    }

    /// The query string cannot be read (a parameter given twice) (400).
    pub fn bad_query(detail: impl Into<String>) -> Self {
        Self::new(
            400,
            "urn:boomerang:problem:malformed-query",
            "The query string cannot be read",
            detail.into(),
        )
    }

    pub fn too_large(field: impl Into<FieldPath>, detail: impl Into<String>) -> Self {
        Self {
            field: Some(field.into().to_string()),
            ..Self::new(
                413,
                "urn:boomerang:problem:too-large",
                "The request is too large",
                detail.into(),
            )
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(
            401,
            "urn:boomerang:problem:unauthorized",
            "Missing or invalid API key",
            "send `Authorization: Bearer <api key>`".into(),
        )
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(
            404,
            "urn:boomerang:problem:not-found",
            "Not found",
            detail.into(),
        )
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "urn:boomerang:problem:method-not-allowed",
            "Method not allowed",
            "this path does not accept that method".into(),
        )
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(
            409,
            "urn:boomerang:problem:conflict",
            "The resource is not in a state that allows this",
            detail.into(),
        )
    }

    pub fn idempotency_mismatch() -> Self {
        Self {
            field: Some("idempotency_key".into()),
            ..Self::new(
                422,
                "urn:boomerang:problem:idempotency-key-reused",
                "Idempotency key reused with a different request",
                "this idempotency key was already used with a different request body".into(),
            )
        }
    }

    /// Something went wrong that the client cannot fix (500).
    pub fn internal() -> Self {
        Self::new(
            500,
            "urn:boomerang:problem:internal",
            "Internal error",
            "the server failed to handle this request".into(),
        )
    }

    /// Something the server needs cannot be reached now (503): nothing was done, and
    /// `Retry-After` says to send the request again in a second (a store failing over, a
    /// pool with no free connection).
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self {
            retry_after: Some(1),
            ..Self::new(
                503,
                "urn:boomerang:problem:unavailable",
                "Temporarily unavailable; retry the request",
                detail.into(),
            )
        }
    }
}

impl Problem {
    /// The problem `e` makes of one part of a larger request (`tasks[3]`): a field's
    /// refusal is placed under the part; any other problem names the part itself.
    pub fn of_part(e: EngineError, part: FieldPath) -> Problem {
        match e {
            EngineError::Invalid(refused) => refused.under(part).into(),
            EngineError::IdempotencyMismatch => Problem::idempotency_mismatch()
                .naming(FieldPath::from("idempotency_key").under(part)),
            other => Problem::from(other).naming(part),
        }
    }

    /// This problem, about `field` (its detail says so first, as every field's does).
    fn naming(self, field: FieldPath) -> Problem {
        let field = field.to_string();
        Problem {
            detail: format!("{field}: {}", self.detail),
            field: Some(field),
            ..self
        }
    }
}

/// The domain's refusal as the API answers it: 422, naming the field.
impl From<Invalid> for Problem {
    fn from(e: Invalid) -> Self {
        Problem::invalid(e.field, e.detail)
    }
}

impl From<EngineError> for Problem {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound(missing) => Problem::not_found(format!("no such {missing}")),
            EngineError::Conflict(why) => Problem::conflict(why.to_string()),
            EngineError::ScheduleConflict(why) => Problem::conflict(why.to_string()),
            EngineError::IdempotencyMismatch => Problem::idempotency_mismatch(),
            EngineError::Invalid(refused) => refused.into(),
            EngineError::Limited {
                detail,
                retry_after,
            } => Problem::too_many(detail, retry_after),
            EngineError::Secret(why) => match why {
                SecretRefusal::TooMany => Problem::conflict(why.to_string()),
                SecretRefusal::Unknown(_) => Problem::not_found(why.to_string()),
                SecretRefusal::OnlyOne(_) => Problem::invalid("id", why.to_string()),
            },
            EngineError::Fixed(why) => Problem::conflict(why),
            EngineError::NoTenant => Problem::unauthorized(),
            EngineError::Tenants(e) => {
                static LIMIT: LogLimit = LogLimit::per_second();
                if let Some(left_out) = LIMIT.admit() {
                    tracing::error!(error = %e, left_out, "tenant directory error");
                }
                Problem::unavailable("the tenant directory is unavailable")
            }
            EngineError::Store(e) => {
                static LIMIT: LogLimit = LogLimit::per_second();
                if let Some(left_out) = LIMIT.admit() {
                    tracing::error!(error = %e, left_out, "store error");
                }
                // Nothing was acknowledged, so the client may safely retry.
                Problem::unavailable("the task store is unavailable")
            }
            EngineError::Timer(e) => {
                static LIMIT: LogLimit = LogLimit::per_second();
                if let Some(left_out) = LIMIT.admit() {
                    tracing::error!(error = %e, left_out, "timer error");
                }
                Problem::unavailable("the timer is unavailable")
            }
        }
    }
}
