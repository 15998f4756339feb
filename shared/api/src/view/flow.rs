//! What the API shows of a tenant's flows.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use boomerang_core::engine::FlowState;

/// One flow of the tenant, now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"key": "partner-api", "paused": false, "waiting": 120, "in_flight": 3}))]
pub struct FlowStateView {
    pub key: String,
    /// Its tasks wait until it is resumed.
    pub paused: bool,
    /// Tasks put off by its rate, its parallelism or its pause, and not yet due again.
    pub waiting: u64,
    /// Calls holding one of its parallelism slots.
    pub in_flight: u64,
}

impl From<FlowState> for FlowStateView {
    fn from(flow: FlowState) -> Self {
        Self {
            key: flow.key.to_string(),
            paused: flow.paused,
            waiting: flow.waiting,
            in_flight: flow.in_flight,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FlowsView {
    /// The flows that are paused, or have tasks waiting or calls in flight, by key.
    pub flows: Vec<FlowStateView>,
}
