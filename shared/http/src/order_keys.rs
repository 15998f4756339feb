//! `/v1/order-keys`: the tenant's order keys, each with the task whose turn it is and how
//! many wait behind it. A key exists as soon as a task names it: there is nothing to
//! create.

use std::sync::Arc;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{key_segment, QueryParams};
use super::openapi::{BadQuery, Invalid};
use super::problem::{ApiError, Problem};
use boomerang_api::view::{OrderKeyView, OrderKeysView};
use boomerang_core::domain::{OrderKey, TenantId};
use boomerang_core::engine::Engine;
use boomerang_core::ports::ORDER_KEYS_LISTED;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(list_order_keys))
        .routes(routes!(get_order_key))
}

/// How many keys a page holds unless asked.
const DEFAULT_LIMIT: usize = 50;

fn order_key(field: &str, text: String) -> Result<OrderKey, ApiError> {
    OrderKey::parse(text).map_err(|e| Problem::invalid(field, e.to_string()).into())
}

/// A page of keys.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct KeysQuery {
    /// The keys after this one (the previous page's `next_cursor`).
    #[param(min_length = 1, max_length = 255)]
    after: Option<String>,
    /// 1–100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<String>,
}

/// An order key in a path, percent-encoded as needed (`customer%2F42` for `customer/42`).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
struct KeyPath {
    /// The key: 1–255 bytes, no control characters.
    #[param(min_length = 1, max_length = 255, example = "order-42")]
    key: String,
}

impl<S: Send + Sync> FromRequestParts<S> for KeyPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let key = key_segment(parts, state).await?;
        Ok(KeyPath { key })
    }
}

/// Your order keys, in key order, each with its head (the task whose turn it is: `blocked`
/// when it failed for good and holds the key) and its backlog.
#[utoipa::path(get, path = "/order-keys", tag = "order-keys", operation_id = "list_order_keys",
    params(KeysQuery),
    responses(
        (status = 200, description = "A page of keys", body = OrderKeysView),
        (status = 400, response = BadQuery),
        (status = 422, response = Invalid),
    ))]
async fn list_order_keys(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    QueryParams(query): QueryParams<KeysQuery>,
) -> Result<Json<OrderKeysView>, ApiError> {
    let after = query.after.map(|a| order_key("after", a)).transpose()?;
    let limit = match query.limit {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=ORDER_KEYS_LISTED).contains(n))
            .ok_or_else(|| Problem::invalid("limit", "must be a whole number from 1 to 100"))?,
    };
    let lines = engine.order_lines(&tenant, after.as_ref(), limit).await?;
    let next_cursor = (lines.len() == limit)
        .then(|| lines.last().map(|l| l.key.to_string()))
        .flatten();
    Ok(Json(OrderKeysView {
        keys: lines.into_iter().map(OrderKeyView::from).collect(),
        next_cursor,
    }))
}

/// One order key (a key no task holds a place in has no head and a backlog of 0).
#[utoipa::path(get, path = "/order-keys/{key}", tag = "order-keys", operation_id = "get_order_key",
    params(KeyPath),
    responses(
        (status = 200, description = "The key", body = OrderKeyView),
        (status = 422, response = Invalid),
    ))]
async fn get_order_key(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    path: KeyPath,
) -> Result<Json<OrderKeyView>, ApiError> {
    let key = order_key("key", path.key)?;
    let line = engine.order_line(&tenant, &key).await?;
    Ok(Json(OrderKeyView::from(line)))
}
