//! `/v1/policies`: a tenant's named retry policies. A task names one with
//! `"retry": "payments"`; the policy named `default` replaces the built-in default.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde::Serialize;

use super::problem::Problem;
use super::task_request;
use super::views::RetryView;
use crate::domain::{PolicyName, RetryPolicy, TenantId};
use crate::engine::{Engine, EngineError};

pub fn routes() -> Router<Arc<Engine>> {
    Router::new().route("/policies", get(list_policies)).route(
        "/policies/{name}",
        get(get_policy).put(put_policy).delete(delete_policy),
    )
}

#[derive(Debug, Serialize)]
pub struct PolicyView {
    pub name: String,
    pub retry: RetryView,
}

impl PolicyView {
    fn new(name: &PolicyName, policy: &RetryPolicy) -> Self {
        Self {
            name: name.to_string(),
            retry: RetryView::new(policy),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PoliciesView {
    pub policies: Vec<PolicyView>,
}

fn name_of(raw: String) -> Result<PolicyName, Problem> {
    PolicyName::parse(raw).map_err(|e| Problem::invalid("name", e.to_string()))
}

/// A missing policy, in the terms of policies (not tasks).
fn not_found(e: EngineError) -> Problem {
    match e {
        EngineError::NotFound => Problem::not_found("no such policy"),
        other => other.into(),
    }
}

/// `PUT /v1/policies/{name}` with a retry object, as a task's `retry` takes it.
async fn put_policy(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<PolicyView>, Problem> {
    let name = name_of(name)?;
    let body = super::read_body(&headers, body).await?;
    let policy = task_request::parse_policy(&body)?;
    engine.put_policy(&tenant, &name, &policy).await?;
    Ok(Json(PolicyView::new(&name, &policy)))
}

async fn get_policy(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Path(name): Path<String>,
) -> Result<Json<PolicyView>, Problem> {
    let name = PolicyName::parse(name).map_err(|_| Problem::not_found("no such policy"))?;
    let policy = engine.policy(&tenant, &name).await.map_err(not_found)?;
    Ok(Json(PolicyView::new(&name, &policy)))
}

async fn delete_policy(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    Path(name): Path<String>,
) -> Result<StatusCode, Problem> {
    let name = PolicyName::parse(name).map_err(|_| Problem::not_found("no such policy"))?;
    engine
        .delete_policy(&tenant, &name)
        .await
        .map_err(not_found)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list_policies(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<PoliciesView>, Problem> {
    let policies = engine.policies(&tenant).await?;
    Ok(Json(PoliciesView {
        policies: policies
            .iter()
            .map(|(name, policy)| PolicyView::new(name, policy))
            .collect(),
    }))
}
