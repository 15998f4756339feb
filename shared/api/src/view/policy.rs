//! What the API shows of a tenant's named policies.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::task::{FlowView, RetryView};
use boomerang_core::domain::{DefinitionName, Policy};

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PolicyView {
    pub name: String,
    pub retry: RetryView,
    /// The flow the policy's tasks share, unless a task gives its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowView>,
}

impl PolicyView {
    pub fn new(name: &DefinitionName, policy: &Policy) -> Self {
        Self {
            name: name.to_string(),
            retry: RetryView::new(&policy.retry),
            flow: policy.flow.as_ref().map(FlowView::new),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PoliciesView {
    pub policies: Vec<PolicyView>,
}
