//! A tenant's named policy: how its tasks are retried, and optionally the flow they share.
//! A task that uses the policy (by name, or the tenant's `default`) takes both; a flow the
//! task gives itself wins over the policy's.

use serde::{Deserialize, Serialize};

use super::flow::FlowSpec;
use super::retry_policy::RetryPolicy;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Stored as the retry policy's own fields, as policies were before they held a flow:
    /// a policy written then reads back with no flow.
    #[serde(flatten)]
    pub retry: RetryPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowSpec>,
}

impl Policy {
    /// A policy of retries only.
    pub fn retry(retry: RetryPolicy) -> Self {
        Self { retry, flow: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_stored_before_flows_reads_back_without_one() {
        let retry = RetryPolicy::default();
        let old = serde_json::to_string(&retry).unwrap();
        let read: Policy = serde_json::from_str(&old).unwrap();
        assert_eq!(read, Policy::retry(retry.clone()));

        let flow = FlowSpec::new("partner", Some(50), None, Some(3)).unwrap();
        let policy = Policy {
            retry,
            flow: Some(flow),
        };
        let json = serde_json::to_string(&policy).unwrap();
        assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), policy);
    }
}
