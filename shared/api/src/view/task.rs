//! What the API shows of a task. Header values are never echoed: they may hold secrets.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::schema::enums;
use boomerang_core::domain::{
    AttemptOutcome, AttemptRecord, Backoff, CheckRecord, FlowSpec, Notify, OnUnknown, RetryPolicy,
    ScheduleId, Status, Task, TaskId,
};

/// How much of a task's body its own view shows.
pub const BODY_PREVIEW_CHARS: usize = 200;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskView {
    #[schema(value_type = String)]
    pub id: TaskId,
    #[schema(value_type = enums::Status)]
    pub status: Status,
    pub url: String,
    pub method: String,
    pub header_names: Vec<String>,
    pub body_bytes: usize,
    /// The body's first 200 characters, in a task's own view (`GET /v1/tasks/{id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_preview: Option<String>,
    pub timeout: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_body: Option<String>,
    pub retry: RetryView,
    pub metadata: BTreeMap<String, String>,
    /// Set on a schedule's occurrence: its schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub schedule_id: Option<ScheduleId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The current (or last) attempt number.
    pub attempt: u32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_error: Option<String>,
    /// Where this task's failures are reported, if it names a destination itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<AlertView>,
    #[schema(value_type = enums::Notify)]
    pub notify: Notify,
    /// Where this task's success is reported, if it asks for that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_success: Option<AlertView>,
    /// On an alert: the task it reports on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub alert_of: Option<TaskId>,
    /// The alerts raised about this task, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<String>)]
    pub alerts: Vec<TaskId>,
    /// The task failed and its alert is not yet registered (it will be).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub alert_pending: bool,
    /// A held task's hold, as registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldView>,
    /// While held: when the hold times out, or the next check is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_at: Option<DateTime<Utc>>,
    /// The checks made while held, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckView>,
    /// The flow whose limits the task shares, as registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowView>,
    /// The key it is delivered in order with, and its place in that key's line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<AttemptView>>,
}

/// A task's order key: delivered one at a time, in registration order, with the tasks of
/// the same key.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OrderView {
    pub key: String,
    /// Its place in the key's line (places given later are greater).
    pub place: u64,
    /// `block` or `skip`: what the key does if this task fails for good.
    pub on_failure: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HoldView {
    pub timeout: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_url: Option<String>,
    #[schema(value_type = enums::OnUnknown)]
    pub on_unknown: OnUnknown,
    pub max_checks: u32,
}

/// A task's flow: its key and limits.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FlowView {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    pub period: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<u32>,
}

impl FlowView {
    pub fn new(flow: &FlowSpec) -> Self {
        Self {
            key: flow.key().to_string(),
            rate: flow.rate(),
            period: human(flow.period()),
            parallelism: flow.parallelism(),
        }
    }
}

/// An alert destination; like a task's, header values are not shown.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AlertView {
    pub url: String,
    pub header_names: Vec<String>,
}

impl AlertView {
    fn of(target: &boomerang_core::domain::AlertTarget) -> Self {
        Self {
            url: target.url.clone(),
            header_names: target.headers.iter().map(|(n, _)| n.clone()).collect(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RetryView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_interval: Option<String>,
    /// `null`: as many as fit in `max_duration`.
    pub max_attempts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<String>,
    pub jitter: f64,
    pub permanent_statuses: Vec<u16>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AttemptView {
    pub number: u32,
    pub scheduled_at: DateTime<Utc>,
    pub started_at: DateTime<Utc>,
    pub lateness_ms: i64,
    pub duration_ms: u64,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub response: Option<String>,
    #[schema(value_type = enums::AttemptOutcome)]
    pub outcome: AttemptOutcome,
    /// Which worker made the attempt (host and process id, or a Lambda request id).
    pub worker: Option<String>,
}

/// One check of a held task.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CheckView {
    pub number: u32,
    pub at: DateTime<Utc>,
    pub duration_ms: u64,
    pub status_code: Option<u16>,
    /// `release` or `cancel`, if the answer decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub(crate) fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

impl TaskView {
    pub fn new(task: &Task, attempts: Option<&[AttemptRecord]>) -> Self {
        let req = &task.spec.request;
        Self {
            id: task.id,
            status: task.status,
            url: req.url.clone(),
            method: req.method.clone(),
            header_names: req.headers.iter().map(|(n, _)| n.clone()).collect(),
            body_bytes: req.body.len(),
            body_preview: attempts
                .filter(|_| !req.body.is_empty())
                .map(|_| req.body.chars().take(BODY_PREVIEW_CHARS).collect()),
            timeout: human(task.spec.timeout),
            expect_body: task.spec.expect_body.clone(),
            retry: RetryView::new(&task.spec.retry),
            metadata: task.spec.metadata.clone(),
            schedule_id: task.spec.occurrence.as_ref().map(|o| o.schedule),
            key: task.spec.key.as_ref().map(|k| k.to_string()),
            idempotency_key: task.idempotency_key.clone(),
            attempt: task.attempt,
            next_attempt_at: task.next_attempt_at,
            created_at: task.created_at,
            updated_at: task.updated_at,
            last_error: task.last_error.clone(),
            on_failure: task.spec.on_failure.as_ref().map(AlertView::of),
            notify: task.spec.notify,
            on_success: task.spec.on_success.as_ref().map(AlertView::of),
            alert_of: task.spec.alert_of,
            alerts: task.alerts.clone(),
            alert_pending: task.alert_pending,
            hold: task.spec.hold.as_ref().map(|h| HoldView {
                timeout: human(h.timeout()),
                check_url: h.check_url().map(str::to_string),
                on_unknown: h.on_unknown(),
                max_checks: h.max_checks(),
            }),
            check_at: task.check_at,
            checks: task.checks.iter().map(CheckView::new).collect(),
            flow: task.spec.flow.as_ref().map(FlowView::new),
            order: task.spec.order.as_ref().map(|o| OrderView {
                key: o.key.to_string(),
                place: o.seq,
                on_failure: o.on_failure.as_str().into(),
            }),
            attempts: attempts.map(|a| a.iter().map(AttemptView::new).collect()),
        }
    }
}

impl RetryView {
    pub fn new(p: &RetryPolicy) -> Self {
        let (schedule, backoff, interval, max_interval) = match p.backoff() {
            Backoff::Schedule { steps } => (
                Some(steps.iter().copied().map(human).collect()),
                None,
                None,
                None,
            ),
            Backoff::Fixed { interval } => (
                None,
                Some("fixed".to_string()),
                Some(human(*interval)),
                None,
            ),
            Backoff::Linear {
                interval,
                max_interval,
            } => (
                None,
                Some("linear".to_string()),
                Some(human(*interval)),
                Some(human(*max_interval)),
            ),
            Backoff::Exponential {
                interval,
                max_interval,
            } => (
                None,
                Some("exponential".to_string()),
                Some(human(*interval)),
                Some(human(*max_interval)),
            ),
        };
        Self {
            schedule,
            backoff,
            interval,
            max_interval,
            max_attempts: p.max_attempts(),
            max_duration: p.max_duration().map(human),
            jitter: p.jitter(),
            permanent_statuses: p.permanent_statuses().to_vec(),
        }
    }
}

impl AttemptView {
    fn new(a: &AttemptRecord) -> Self {
        Self {
            number: a.number,
            scheduled_at: a.scheduled_at,
            started_at: a.started_at,
            lateness_ms: a.lateness_ms,
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            error: a.error.clone(),
            response: a.response_excerpt.clone(),
            outcome: a.outcome,
            worker: a.worker.clone(),
        }
    }
}

impl CheckView {
    fn new(c: &CheckRecord) -> Self {
        Self {
            number: c.number,
            at: c.at,
            duration_ms: c.duration_ms,
            status_code: c.status_code,
            decision: c.decision.map(|d| d.as_str().to_string()),
            error: c.error.clone(),
        }
    }
}
