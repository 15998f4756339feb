//! `/v1/signing-secrets`: the secrets your deliveries are signed with, and their rotation
//! without downtime.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::{Extension, Json};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::JsonBody;
use super::openapi::{Conflict, Invalid, Malformed, NotFound, TooLarge};
use super::problem::{ApiError, Problem};
use boomerang_api::request::RotationRequest;
use boomerang_api::view::SigningSecretsView;
use boomerang_core::domain::{SecretId, TenantId};
use boomerang_core::engine::Engine;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(list_signing_secrets, rotate_signing_secret))
        .routes(routes!(retire_signing_secret))
}

/// A signing secret's id in a path.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
struct SecretPath {
    /// The secret's id (16 hexadecimal digits).
    #[param(value_type = String, example = "3f2a9c0d1e4b5a67")]
    id: SecretId,
}

impl<S: Send + Sync> FromRequestParts<S> for SecretPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let not_found = || Problem::not_found("no such signing secret");
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| not_found())?;
        let id = raw.parse().map_err(|_| not_found())?;
        Ok(SecretPath { id })
    }
}

/// Your signing secrets in force, newest first.
///
/// Every delivery (and alert) carries one Standard Webhooks signature from each, in one
/// `webhook-signature` header, so a receiver that knows any one of them accepts it.
#[utoipa::path(get, path = "/signing-secrets", tag = "signing-secrets", operation_id = "list_signing_secrets",
    responses((status = 200, description = "The secrets in force", body = SigningSecretsView)))]
async fn list_signing_secrets(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<SigningSecretsView>, ApiError> {
    let secrets = engine.signing_secrets(&tenant).await?;
    Ok(Json(SigningSecretsView::new(&secrets, engine.now())))
}

/// Rotate: add a new secret that signs every delivery from now on.
///
/// The secrets in force go on signing beside it for `grace_period` (default 24h), the time
/// your receivers have to switch to the new one; retire one sooner with `DELETE`. At most
/// 5 secrets are in force at once. The body may be left out.
#[utoipa::path(post, path = "/signing-secrets", tag = "signing-secrets", operation_id = "rotate_signing_secret",
    request_body(content = Option<RotationRequest>),
    responses(
        (status = 201, description = "The secrets in force, the new one first", body = SigningSecretsView),
        (status = 400, response = Malformed),
        (status = 409, response = Conflict),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn rotate_signing_secret(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    JsonBody(request): JsonBody<RotationRequest>,
) -> Result<(StatusCode, Json<SigningSecretsView>), ApiError> {
    let secrets = engine
        .rotate_signing_secret(&tenant, request.grace()?)
        .await?;
    let view = SigningSecretsView::new(&secrets, engine.now());
    Ok((StatusCode::CREATED, Json(view)))
}

/// Retire a secret: deliveries stop carrying its signature at once.
///
/// The only secret in force cannot be retired (rotate first).
#[utoipa::path(delete, path = "/signing-secrets/{id}", tag = "signing-secrets", operation_id = "retire_signing_secret",
    params(SecretPath),
    responses(
        (status = 200, description = "The secrets left in force", body = SigningSecretsView),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 422, response = Invalid),
    ))]
async fn retire_signing_secret(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    path: SecretPath,
) -> Result<Json<SigningSecretsView>, ApiError> {
    let secrets = engine.retire_signing_secret(&tenant, &path.id).await?;
    Ok(Json(SigningSecretsView::new(&secrets, engine.now())))
}
