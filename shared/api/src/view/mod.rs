//! What the API answers with: views of tasks, bulk jobs, schedules, policies, templates,
//! flows, signing secrets and figures.

mod breaker;
mod bulk;
mod flow;
mod keys;
mod order;
mod policy;
mod schedule;
mod signing_secret;
mod stats;
mod task;
mod template;

pub use breaker::{BreakerSettingsView, BreakerView, BreakersView};
pub use bulk::{BulkJobView, BulkJobsView, BulkPreviewView, ProgressView};
pub use flow::{FlowStateView, FlowsView};
pub use keys::{
    BatchItemView, BatchView, KeyCancelView, KeyReleaseView, KeyedStatusView, PageView,
};
pub use order::{OrderHeadView, OrderKeyView, OrderKeysView};
pub use policy::{PoliciesView, PolicyView};
pub use schedule::{ScheduleListView, ScheduleView};
pub use signing_secret::{SigningSecretView, SigningSecretsView};
pub use stats::{DeliveryWindowView, DestinationView, MinuteView, StatsView};
pub use task::{
    AlertView, AttemptView, CheckView, FlowView, HoldView, OrderView, RetryView, TaskView,
    BODY_PREVIEW_CHARS,
};
pub use template::{TemplateView, TemplatesView};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What `/healthz` and `/readyz` answer.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: String,
}
