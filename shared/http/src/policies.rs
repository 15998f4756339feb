//! `/v1/policies`: a tenant's named policies. A task names one with `"retry": "payments"`;
//! the policy named `default` replaces the built-in default. A policy may carry a flow,
//! which its tasks share unless they give their own.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::{Extension, Json};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::JsonBody;
use super::openapi::{Invalid, Malformed, NotFound, TooLarge};
use super::problem::{ApiError, Problem};
use boomerang_api::request::PolicyRequest;
use boomerang_api::view::{PoliciesView, PolicyView};
use boomerang_core::domain::{DefinitionName, Policy, TenantId};
use boomerang_core::engine::{Engine, EngineError, Missing};
use boomerang_core::ports::DefinitionKind;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(list_policies))
        .routes(routes!(get_policy, put_policy, delete_policy))
}

/// A policy's name in a path, as sent: each handler checks it as a name.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct NamePath {
    /// 1 to 64 letters, digits, `.`, `_` or `-`; `default` replaces the built-in default.
    #[param(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9._-]+$",
        example = "payments"
    )]
    pub(crate) name: String,
}

impl<S: Send + Sync> FromRequestParts<S> for NamePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // A segment that is not UTF-8 is no policy name either: the handler refuses it as
        // it refuses any other (404 on a read, 422 on a write), not with axum's plain text.
        let name = match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(name)) => name,
            Err(_) => char::REPLACEMENT_CHARACTER.to_string(),
        };
        Ok(NamePath { name })
    }
}

pub(crate) fn name_of(raw: String) -> Result<DefinitionName, Problem> {
    DefinitionName::parse(raw).map_err(|e| Problem::invalid("name", e.to_string()))
}

/// A definition's name from a path where it must name one stored: a name that breaks the
/// rules names none (404, in the terms of its kind).
pub(crate) fn existing_name(raw: String, kind: DefinitionKind) -> Result<DefinitionName, Problem> {
    let missing = EngineError::NotFound(Missing::Definition(kind));
    DefinitionName::parse(raw).map_err(|_| missing.into())
}

/// Create or replace a named policy.
///
/// The body is a retry policy as a task's `retry` takes it, and optionally a `flow` as a
/// task's `flow` takes it. Tasks registered after this use it; tasks registered before
/// keep what they were registered with.
#[utoipa::path(put, path = "/policies/{name}", tag = "policies", operation_id = "put_policy",
    params(NamePath),
    request_body = PolicyRequest,
    responses(
        (status = 200, description = "The policy as stored", body = PolicyView),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn put_policy(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    NamePath { name }: NamePath,
    JsonBody(policy): JsonBody<Policy>,
) -> Result<Json<PolicyView>, ApiError> {
    let name = name_of(name)?;
    engine.put_policy(&tenant, &name, &policy).await?;
    Ok(Json(PolicyView::new(&name, &policy)))
}

/// A named policy.
#[utoipa::path(get, path = "/policies/{name}", tag = "policies", operation_id = "get_policy",
    params(NamePath),
    responses(
        (status = 200, description = "The policy", body = PolicyView),
        (status = 404, response = NotFound),
    ))]
async fn get_policy(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    NamePath { name }: NamePath,
) -> Result<Json<PolicyView>, ApiError> {
    let name = existing_name(name, DefinitionKind::Policy)?;
    let policy = engine.definition(&tenant, &name).await?;
    Ok(Json(PolicyView::new(&name, &policy)))
}

/// Delete a named policy. Tasks registered with it keep it.
#[utoipa::path(delete, path = "/policies/{name}", tag = "policies", operation_id = "delete_policy",
    params(NamePath),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, response = NotFound),
    ))]
async fn delete_policy(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    NamePath { name }: NamePath,
) -> Result<StatusCode, ApiError> {
    let name = existing_name(name, DefinitionKind::Policy)?;
    engine.delete_definition::<Policy>(&tenant, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The tenant's named policies.
#[utoipa::path(get, path = "/policies", tag = "policies", operation_id = "list_policies",
    responses((status = 200, description = "The policies, by name", body = PoliciesView)))]
async fn list_policies(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<PoliciesView>, ApiError> {
    let policies = engine.definitions::<Policy>(&tenant).await?;
    Ok(Json(PoliciesView {
        policies: policies
            .iter()
            .map(|(name, policy)| PolicyView::new(name, policy))
            .collect(),
    }))
}
