//! Failure alerts: when a task's failure calls for one, and what the report says.
//!
//! An alert is an ordinary task underneath (same delivery, signing, retries and dead
//! letters). It is linked both ways: the alert names the task it reports on
//! ([`TaskSpec::alert_of`]), the task lists its alerts ([`Task::alerts`]). Alerts never
//! raise alerts of their own, and an alert's fate never changes its task.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::alert::{AlertTarget, Notify};
use super::ids::TaskId;
use super::lifecycle::Refusal;
use super::task::{AttemptOutcome, AttemptRecord, Status, Task, TaskSpec};

/// What an alert reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// The task ended `failed` with this attempt.
    Failed { attempt: u32 },
    /// This attempt failed; the next one is due then.
    Retrying {
        attempt: u32,
        next_attempt_at: DateTime<Utc>,
    },
    /// The task ended `succeeded` with this attempt (only to its own `on_success`).
    Succeeded { attempt: u32 },
}

impl Notice {
    pub fn attempt(&self) -> u32 {
        match self {
            Notice::Failed { attempt }
            | Notice::Retrying { attempt, .. }
            | Notice::Succeeded { attempt } => *attempt,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Notice::Failed { .. } => "task.failed",
            Notice::Retrying { .. } => "task.retrying",
            Notice::Succeeded { .. } => "task.succeeded",
        }
    }
}

/// How long an alert call may take.
pub const ALERT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most recent attempts an alert lists.
pub const ALERT_ATTEMPTS: usize = 20;

/// The JSON an alert sends.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct AlertBody {
    /// `task.failed`, `task.retrying` or `task.succeeded`.
    #[serde(rename = "type")]
    pub kind: String,
    pub task_id: TaskId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub url: String,
    pub method: String,
    /// The attempt the notice is about: the one that failed (or succeeded).
    pub attempt: u32,
    /// Only in a `task.retrying` notice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    /// The most recent attempts (at most [`ALERT_ATTEMPTS`]), oldest first.
    pub attempts: Vec<AlertAttempt>,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct AlertAttempt {
    pub number: u32,
    pub started_at: DateTime<Utc>,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub outcome: AttemptOutcome,
}

impl Task {
    /// Whether this task may raise alerts (an alert may not).
    pub fn alerts_enabled(&self) -> bool {
        self.spec.alert_of.is_none()
    }

    /// Whether this task's final failure is reported (unless it has nowhere to go).
    pub fn reports_failure(&self) -> bool {
        self.alerts_enabled() && self.spec.notify != Notify::Never
    }

    /// What alert the move from this claimed task to `next` (the task after its attempt)
    /// calls for, if any: the final failure unless `notify: never`, a retried attempt with
    /// `notify: every`, a success with `on_success`. Whether an alert about a failure is
    /// sent depends on there being a destination.
    pub fn notice(&self, next: &Task) -> Option<Notice> {
        if !self.alerts_enabled() {
            return None;
        }
        let attempt = self.attempt;
        match (next.status, next.next_attempt_at) {
            (Status::Failed, _) if self.reports_failure() => Some(Notice::Failed { attempt }),
            (Status::Scheduled, Some(at)) if self.spec.notify == Notify::Every => {
                Some(Notice::Retrying {
                    attempt,
                    next_attempt_at: at,
                })
            }
            (Status::Succeeded, _) if self.spec.on_success.is_some() => {
                Some(Notice::Succeeded { attempt })
            }
            _ => None,
        }
    }

    /// The final-failure alert this task still owes (it could not be registered when the
    /// task failed); the sweep registers it.
    pub fn owed_alert(&self) -> Option<Notice> {
        (self.status == Status::Failed && self.alert_pending).then_some(Notice::Failed {
            attempt: self.attempt,
        })
    }

    /// This task (as about to be written) with the alert registered for it; a final one
    /// is no longer owed.
    pub fn with_alert(mut self, alert: TaskId, notice: Notice) -> Task {
        if !self.alerts.contains(&alert) {
            self.alerts.push(alert);
        }
        if matches!(notice, Notice::Failed { .. }) {
            self.alert_pending = false;
        }
        self
    }

    /// The owed alert was registered (by the sweep), or turned out to have nowhere to go.
    pub fn alert_settled(
        &self,
        alert: Option<TaskId>,
        now: DateTime<Utc>,
    ) -> Result<Task, Refusal> {
        let Some(notice) = self.owed_alert() else {
            return Err(Refusal::NoAlertPending);
        };
        let mut next = self.next_version(now);
        next.alert_pending = false;
        Ok(match alert {
            Some(id) => next.with_alert(id, notice),
            None => next,
        })
    }

    /// The idempotency key of this task's alert for `notice`: a repeat of the same notice
    /// (a crash, the sweep) finds the alert already registered.
    pub fn alert_idempotency_key(&self, notice: Notice) -> String {
        let kind = match notice {
            Notice::Failed { .. } => "failed",
            Notice::Retrying { .. } => "retrying",
            Notice::Succeeded { .. } => "succeeded",
        };
        format!("boomerang-alert:{}:{}:{}", self.id, notice.attempt(), kind)
    }

    /// The summary an alert sends: the task, the failed attempt, and the most recent
    /// attempts (`attempts` in any order; repeats of a number keep the last).
    pub fn alert_body(
        &self,
        notice: Notice,
        attempts: &[AttemptRecord],
        now: DateTime<Utc>,
    ) -> AlertBody {
        let mut by_number: BTreeMap<u32, &AttemptRecord> = BTreeMap::new();
        for a in attempts {
            by_number.insert(a.number, a);
        }
        let recent = by_number.len().saturating_sub(ALERT_ATTEMPTS);
        AlertBody {
            kind: notice.kind().into(),
            task_id: self.id,
            key: self.spec.key.as_ref().map(|k| k.to_string()),
            metadata: self.spec.metadata.clone(),
            url: self.spec.request.url.clone(),
            method: self.spec.request.method.clone(),
            attempt: notice.attempt(),
            next_attempt_at: match notice {
                Notice::Retrying {
                    next_attempt_at, ..
                } => Some(next_attempt_at),
                Notice::Failed { .. } | Notice::Succeeded { .. } => None,
            },
            last_error: self.last_error.clone(),
            attempts: by_number
                .values()
                .skip(recent)
                .map(|a| AlertAttempt {
                    number: a.number,
                    started_at: a.started_at,
                    status_code: a.status_code,
                    error: a.error.clone(),
                    outcome: a.outcome,
                })
                .collect(),
            at: now,
        }
    }
}

/// The spec of an alert about task `of`: a signed JSON `POST` of `body` to `target`. Its
/// retry policy is resolved at registration like any task's (the tenant's default).
pub fn alert_spec(of: TaskId, target: &AlertTarget, body: &AlertBody) -> TaskSpec {
    TaskSpec {
        alert_of: Some(of),
        ..TaskSpec::json_post(
            target.url.clone(),
            target.headers.clone(),
            serde_json::to_string(body).unwrap_or_default(),
            ALERT_TIMEOUT,
        )
    }
}
