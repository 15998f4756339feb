//! A task, its lifecycle state and the record of each attempt.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::alert::{AlertTarget, Notify};
use super::duration_ms;
use super::flow::FlowSpec;
use super::hold::{CheckRecord, HoldSpec};
use super::ids::{BusinessKey, TaskId, TenantId};
use super::occurrence::Occurrence;
use super::order::OrderSpec;
use super::retry_policy::RetryPolicy;
use super::trace::TaskTrace;

/// Where a task is in its lifecycle.
///
/// `scheduled → delivering → succeeded | scheduled (next attempt) | failed`, and
/// `scheduled → canceled`; a held task starts `held` and is released to `scheduled` or
/// canceled ([`super::hold`]). A `failed` task may be retried back to `scheduled`. The
/// transitions themselves are in [`super::lifecycle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Held,
    Scheduled,
    Delivering,
    Succeeded,
    Failed,
    Canceled,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Held,
        Status::Scheduled,
        Status::Delivering,
        Status::Succeeded,
        Status::Failed,
        Status::Canceled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Held => "held",
            Status::Scheduled => "scheduled",
            Status::Delivering => "delivering",
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Canceled => "canceled",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Succeeded | Status::Failed | Status::Canceled)
    }
}

/// The HTTP request a task makes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallbackRequest {
    pub url: String,
    pub method: String,
    /// In the order given; names are kept as the client spelled them.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// Everything the client asked for, fixed at registration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    pub request: CallbackRequest,
    #[serde(with = "duration_ms")]
    pub timeout: Duration,
    pub expect_body: Option<String>,
    pub retry: RetryPolicy,
    pub metadata: BTreeMap<String, String>,
    /// The caller's own id for the task, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<BusinessKey>,
    /// Where this task's failures are reported (else the tenant's or server's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<AlertTarget>,
    /// Which failures are reported.
    #[serde(default, skip_serializing_if = "Notify::is_final")]
    pub notify: Notify,
    /// Where this task's success is reported, if anywhere (no default applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_success: Option<AlertTarget>,
    /// Set on an alert: the task it reports on. An alert raises no alerts itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_of: Option<TaskId>,
    /// Registered held: delivered only once released ([`super::hold`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldSpec>,
    /// The flow whose limits the task shares ([`super::flow`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowSpec>,
    /// Set on a schedule's occurrence: its schedule and slot ([`super::schedule`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurrence: Option<Occurrence>,
    /// The key whose tasks are delivered one at a time in registration order, and this
    /// task's place in it ([`super::order`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderSpec>,
    /// The trace the task was registered in, if the caller sent one ([`super::trace`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TaskTrace>,
}

impl TaskSpec {
    /// A call Boomerang makes of its own accord (an alert, a held task's check): a `POST`
    /// of the JSON `body` to `url` with `headers`, and `content-type: application/json`
    /// unless they name a type; the default retry policy, and no key, metadata or alerts.
    pub fn json_post(
        url: String,
        mut headers: Vec<(String, String)>,
        body: String,
        timeout: Duration,
    ) -> TaskSpec {
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            headers.push(("content-type".into(), "application/json".into()));
        }
        TaskSpec {
            request: CallbackRequest {
                url,
                method: "POST".into(),
                headers,
                body,
            },
            timeout,
            expect_body: None,
            retry: RetryPolicy::default(),
            metadata: BTreeMap::new(),
            key: None,
            on_failure: None,
            notify: Notify::Final,
            on_success: None,
            alert_of: None,
            hold: None,
            flow: None,
            occurrence: None,
            order: None,
            trace: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: TaskId,
    pub tenant: TenantId,
    pub spec: TaskSpec,
    pub idempotency_key: Option<String>,
    /// Digest of the registration request, to tell a true repeat from a reused key.
    pub request_hash: String,
    pub status: Status,
    /// The current attempt number (1-based, counted over the task's whole life).
    pub attempt: u32,
    /// The first attempt number of the current round (1, or later after a retry).
    pub round_start: u32,
    pub round_started_at: DateTime<Utc>,
    /// When the current attempt is due; set while `scheduled` or `delivering`.
    #[serde(alias = "next_fire_at")]
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// While `delivering`: after this instant another worker may take the attempt over.
    pub lease_until: Option<DateTime<Utc>>,
    /// Incremented by every write; each transition is conditional on it.
    pub version: u64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_error: Option<String>,
    /// `failed` but its dead-letter record is not yet acknowledged; the sweeper retries it.
    #[serde(default)]
    pub dead_letter_pending: bool,
    /// A durable timer holds this task's pending work (set by the engine after it armed
    /// one). A store need not keep such a task where the sweep looks: the timer, or the
    /// message it became, is the custody of the work.
    #[serde(default)]
    pub timer_armed: bool,
    /// `failed`, and its final alert not yet registered; the sweeper retries it.
    #[serde(default)]
    pub alert_pending: bool,
    /// The alerts raised about this task, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<TaskId>,
    /// While `held`: when the hold times out, or the next check is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_at: Option<DateTime<Utc>>,
    /// The checks made while held, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckRecord>,
}

impl Task {
    /// A newly registered task, its first attempt due at `fire_at`.
    pub fn new_scheduled(
        tenant: TenantId,
        spec: TaskSpec,
        idempotency_key: Option<String>,
        request_hash: String,
        fire_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Task {
        Task {
            id: TaskId::new(),
            tenant,
            spec,
            idempotency_key,
            request_hash,
            status: Status::Scheduled,
            attempt: 1,
            round_start: 1,
            round_started_at: fire_at,
            next_attempt_at: Some(fire_at),
            lease_until: None,
            version: 1,
            created_at: now,
            updated_at: now,
            last_error: None,
            dead_letter_pending: false,
            timer_armed: false,
            alert_pending: false,
            alerts: Vec::new(),
            check_at: None,
            checks: Vec::new(),
        }
    }

    /// Nothing is left to hand over for this finished task (a dead letter, an alert):
    /// from then on retention may remove it.
    pub fn is_settled(&self) -> bool {
        self.status.is_terminal() && !self.dead_letter_pending && !self.alert_pending
    }

    /// Attempts already made in the current round, the one in flight included.
    pub fn attempts_in_round(&self) -> u32 {
        self.attempt + 1 - self.round_start
    }
}

/// What happened in one attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub task_id: TaskId,
    pub number: u32,
    pub scheduled_at: DateTime<Utc>,
    pub started_at: DateTime<Utc>,
    /// `started_at - scheduled_at`, in milliseconds (negative never happens: early fires re-arm).
    pub lateness_ms: i64,
    pub duration_ms: u64,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    /// At most 1 KiB of the response body.
    pub response_excerpt: Option<String>,
    pub outcome: AttemptOutcome,
    /// Which worker made the attempt: host and process id locally, the invocation's
    /// request id on Lambda.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    Succeeded,
    /// Failed; another attempt follows.
    Retrying,
    /// Failed, and the task failed with it (permanent status or policy exhausted).
    Failed,
}

/// The record an operator gets for a task that never succeeded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    pub task_id: TaskId,
    pub tenant: TenantId,
    pub url: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub failed_at: DateTime<Utc>,
}
