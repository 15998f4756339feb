//! `/v1/templates`: a tenant's task templates. A task names one with
//! `"template": "billing"` and takes each setting it does not give itself; the template
//! named `default` applies to every task that names none. Registrations find the
//! templates they use here ([`templates_for`]).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::JsonBody;
use super::openapi::{Invalid, Malformed, NotFound, TooLarge};
use super::policies::{existing_name, name_of, NamePath};
use super::problem::ApiError;
use boomerang_api::request::{TaskRequest, TemplateRequest, Templates};
use boomerang_api::view::{TemplateView, TemplatesView};
use boomerang_core::domain::{DefinitionName, Template, TenantId};
use boomerang_core::engine::{Engine, EngineError};
use boomerang_core::ports::{DefinitionKind, StoreError};

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(list_templates))
        .routes(routes!(get_template, put_template, delete_template))
}

/// The templates `tasks` use (each its named one, or the `default`), read once each.
pub async fn templates_for<'a>(
    engine: &Engine,
    tenant: &TenantId,
    tasks: impl IntoIterator<Item = &'a TaskRequest>,
) -> Result<Templates, ApiError> {
    let mut templates = Templates::default();
    let mut names: Vec<DefinitionName> = tasks
        .into_iter()
        .filter_map(|task| Templates::name_for(task).ok())
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        let found = engine.find_definition::<Template>(tenant, &name).await?;
        // A stored template was checked when it was put: one that no longer reads is the
        // store's fault, not the request's.
        let found = found
            .as_ref()
            .map(TemplateRequest::stored)
            .transpose()
            .map_err(|e| {
                EngineError::Store(StoreError::Corrupt(
                    format!("template `{name}`: {e}").into(),
                ))
            })?;
        templates.insert(name, found);
    }
    Ok(templates)
}

/// Create or replace a task template.
///
/// Each field is a task's field of the same name (`url_base` aside), checked as a task's
/// is. Tasks registered after this take it; tasks registered before keep what they were
/// registered with.
#[utoipa::path(put, path = "/templates/{name}", tag = "templates", operation_id = "put_template",
    params(NamePath),
    request_body = TemplateRequest,
    responses(
        (status = 200, description = "The template as stored", body = TemplateView),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn put_template(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    NamePath { name }: NamePath,
    JsonBody(template): JsonBody<Template>,
) -> Result<Json<TemplateView>, ApiError> {
    let name = name_of(name)?;
    engine.put_template(&tenant, &name, &template).await?;
    Ok(Json(TemplateView::new(&name, &template)))
}

/// A task template.
#[utoipa::path(get, path = "/templates/{name}", tag = "templates", operation_id = "get_template",
    params(NamePath),
    responses(
        (status = 200, description = "The template", body = TemplateView),
        (status = 404, response = NotFound),
    ))]
async fn get_template(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    NamePath { name }: NamePath,
) -> Result<Json<TemplateView>, ApiError> {
    let name = existing_name(name, DefinitionKind::Template)?;
    let template = engine.definition(&tenant, &name).await?;
    Ok(Json(TemplateView::new(&name, &template)))
}

/// Delete a task template. Tasks registered with it keep its settings; a task that names
/// it afterwards is refused.
#[utoipa::path(delete, path = "/templates/{name}", tag = "templates", operation_id = "delete_template",
    params(NamePath),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, response = NotFound),
    ))]
async fn delete_template(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    NamePath { name }: NamePath,
) -> Result<StatusCode, ApiError> {
    let name = existing_name(name, DefinitionKind::Template)?;
    engine.delete_definition::<Template>(&tenant, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The tenant's task templates.
#[utoipa::path(get, path = "/templates", tag = "templates", operation_id = "list_templates",
    responses((status = 200, description = "The templates, by name", body = TemplatesView)))]
async fn list_templates(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<TemplatesView>, ApiError> {
    let templates = engine.definitions::<Template>(&tenant).await?;
    Ok(Json(TemplatesView {
        templates: templates
            .iter()
            .map(|(name, template)| TemplateView::new(name, template))
            .collect(),
    }))
}
