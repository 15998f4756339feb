//! What the suites and the engine's tests are built from: tenants, tasks, the store
//! capabilities a contract needs, and a backend that is always ready.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::domain::{AlertTarget, CallbackRequest, Notify, RetryPolicy, Task, TaskSpec, TenantId};
use crate::domain::{BreakerSettings, Policy, Template};
use crate::ports::{Breakers, BulkJobs, Definitions, OrderKeys, SweepIndex, TaskStore};

/// What the store contract exercises: every capability a store of either backend has.
pub trait ContractStore:
    TaskStore
    + SweepIndex
    + Definitions<Policy>
    + Definitions<Template>
    + Definitions<BreakerSettings>
    + Breakers
    + BulkJobs
    + OrderKeys
{
}

impl<S> ContractStore for S where
    S: TaskStore
        + SweepIndex
        + Definitions<Policy>
        + Definitions<Template>
        + Definitions<BreakerSettings>
        + Breakers
        + BulkJobs
        + OrderKeys
{
}

/// A fresh tenant id no other test uses.
pub fn unique_tenant(prefix: &str) -> TenantId {
    TenantId::parse(format!("{prefix}-{}", ulid::Ulid::new())).expect("a valid tenant id")
}

/// A bare spec: `POST url` with `body`, no headers, a 10 s timeout, `retry`, and nothing
/// else; tests set what they look at.
pub fn plain_spec(url: &str, body: &str, retry: RetryPolicy) -> TaskSpec {
    TaskSpec {
        request: CallbackRequest {
            url: url.into(),
            method: "POST".into(),
            headers: vec![],
            body: body.into(),
        },
        timeout: Duration::from_secs(10),
        expect_body: None,
        retry,
        metadata: Default::default(),
        key: None,
        on_failure: None,
        notify: Default::default(),
        on_success: None,
        alert_of: None,
        hold: None,
        flow: None,
        occurrence: None,
        order: None,
        trace: None,
    }
}

/// A scheduled task due at `fire_at`.
pub fn sample_task(tenant: &TenantId, key: Option<&str>, fire_at: DateTime<Utc>) -> Task {
    let mut spec = plain_spec(
        "https://example.com/hook",
        "{\"n\":1}",
        RetryPolicy::default(),
    );
    spec.request.headers = vec![("x-trace".into(), "1".into())];
    spec.metadata = [("order".to_string(), "42".to_string())].into();
    spec.on_failure = Some(AlertTarget {
        url: "https://example.com/alerts".into(),
        headers: vec![("x-team".into(), "payments".into())],
    });
    spec.notify = Notify::Every;
    let key = key.map(str::to_string);
    // The digest is only kept with an idempotency key (it is only ever compared then).
    let hash = if key.is_some() { "hash" } else { "" };
    Task::new_scheduled(tenant.clone(), spec, key, hash.into(), fire_at, fire_at)
}

/// `t` to the millisecond, as every store keeps times.
pub(super) fn millis(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).expect("in range")
}

/// A backend that is always ready: for the engine's unit tests.
pub struct AlwaysReady;

#[async_trait::async_trait]
impl crate::ports::Readiness for AlwaysReady {
    async fn failing(&self) -> Vec<crate::ports::Failing> {
        Vec::new()
    }
}
