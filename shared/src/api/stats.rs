//! `GET /v1/stats`: a tenant's figures, for the console's counts and live panel.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::problem::Problem;
use crate::domain::{Status, TenantId};
use crate::engine::{Engine, Stats};
use crate::metrics::DeliveryWindow;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new().routes(routes!(stats))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StatsView {
    /// Tasks by state, every state named; `null` where the store cannot count them
    /// cheaply (DynamoDB, on AWS).
    #[schema(example = json!({"held": 0, "scheduled": 12, "delivering": 1, "succeeded": 340,
                              "failed": 2, "canceled": 5}))]
    pub counts: Option<BTreeMap<String, u64>>,
    /// The last hour of attempts, minute by minute, oldest first; `null` where the server
    /// keeps no such window (the Lambdas: CloudWatch has these figures on AWS).
    pub deliveries: Option<DeliveryWindow>,
}

impl StatsView {
    fn new(stats: Stats) -> Self {
        let counts = stats.counts.map(|counts| {
            Status::ALL
                .iter()
                .map(|status| {
                    let n = counts
                        .iter()
                        .filter(|(s, _)| s == status)
                        .map(|(_, n)| n)
                        .sum();
                    (status.as_str().to_string(), n)
                })
                .collect()
        });
        Self {
            counts,
            deliveries: stats.deliveries,
        }
    }
}

/// Your tasks by state, and the last hour of attempts.
///
/// What the console's counts and live panel show. The hour is kept in the server's
/// memory: it starts again when the server restarts.
#[utoipa::path(get, path = "/stats", tag = "tasks", operation_id = "stats",
    responses((status = 200, description = "The figures", body = StatsView)))]
async fn stats(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<StatsView>, Problem> {
    Ok(Json(StatsView::new(engine.stats(&tenant).await?)))
}
