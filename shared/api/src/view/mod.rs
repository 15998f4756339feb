//! What the API answers with: views of tasks, schedules, policies, flows and figures.

mod flow;
mod keys;
mod policy;
mod schedule;
mod stats;
mod task;

pub use flow::{FlowStateView, FlowsView};
pub use keys::{
    BatchItemView, BatchView, KeyCancelView, KeyReleaseView, KeyedStatusView, PageView,
};
pub use policy::{PoliciesView, PolicyView};
pub use schedule::{ScheduleListView, ScheduleView};
pub use stats::{DeliveryWindowView, DestinationView, MinuteView, StatsView};
pub use task::{
    AlertView, AttemptView, CheckView, FlowView, HoldView, RetryView, TaskView, BODY_PREVIEW_CHARS,
};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What `/healthz` and `/readyz` answer.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: String,
}
