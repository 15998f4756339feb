//! Held tasks: a callback bound to the caller's own transaction.
//!
//! A task registered with a `hold` is stored but not armed for delivery. The caller
//! releases it once its transaction committed, or cancels it on a rollback. If neither
//! comes before the hold's timeout, Boomerang asks the caller's check URL, with backoff,
//! and the answer decides; a caller that never answers gets `on_unknown`.
//!
//! ```text
//! held ──release / check "release" / on_unknown=release──▶ scheduled ─▶ (delivery)
//! held ──cancel / check "cancel", 404, 410 / on_unknown=cancel──▶ canceled
//! held ──check unanswered──▶ held (next check after 1 s, 5 s, 30 s, 1 min, then 5 min)
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::duration_ms;
use super::ids::TaskId;
use super::invalid::{within, Invalid};
use super::lifecycle::Refusal;
use super::limits::{DEFAULT_MAX_CHECKS, MAX_CHECKS, MAX_HOLD, MIN_HOLD};
use super::task::{Status, Task, TaskSpec};
use super::time::checked_add;

/// The attempt number a held task's check timers carry. Distinct from the first
/// delivery attempt's, so the two never share a timer (on AWS a long wait's schedule is
/// named after its attempt), and a check timer that fires after the release is stale.
pub const CHECK_ATTEMPT: u32 = 0;
/// How long a check call may take.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// The wait after each unanswered check: then every 5 minutes.
const CHECK_BACKOFF: [u64; 4] = [1, 5, 30, 60];
const CHECK_EVERY: u64 = 300;

/// What a held task waits for, fixed at registration: valid by construction
/// ([`HoldSpec::new`]); stored holds are read back as they were written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldSpec {
    /// How long the caller has to release or cancel before it is asked.
    #[serde(with = "duration_ms")]
    timeout: Duration,
    /// Where to ask; without one, `on_unknown` applies at the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    check_url: Option<String>,
    on_unknown: OnUnknown,
    max_checks: u32,
}

impl HoldSpec {
    /// A hold, if every rule holds; the refusal names the field (`timeout`, `check_url`,
    /// `max_checks`). `max_checks` defaults to [`DEFAULT_MAX_CHECKS`].
    pub fn new(
        timeout: Duration,
        check_url: Option<String>,
        on_unknown: OnUnknown,
        max_checks: Option<i64>,
    ) -> Result<Self, Invalid> {
        let timeout = within("timeout", timeout, MIN_HOLD, MAX_HOLD)?;
        if check_url.as_deref().is_some_and(|u| u.trim().is_empty()) {
            return Err(Invalid::new("check_url", "must not be empty"));
        }
        let max_checks = match max_checks {
            None => DEFAULT_MAX_CHECKS,
            Some(n) if (1..=i64::from(MAX_CHECKS)).contains(&n) => n as u32,
            Some(_) => {
                return Err(Invalid::new(
                    "max_checks",
                    format!("must be between 1 and {MAX_CHECKS}"),
                ))
            }
        };
        Ok(Self {
            timeout,
            check_url,
            on_unknown,
            max_checks,
        })
    }

    /// How long the caller has to release or cancel before it is asked.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Where to ask; without one, `on_unknown` applies at the timeout.
    pub fn check_url(&self) -> Option<&str> {
        self.check_url.as_deref()
    }

    pub fn on_unknown(&self) -> OnUnknown {
        self.on_unknown
    }

    pub fn max_checks(&self) -> u32 {
        self.max_checks
    }
}

/// What a check call sends the caller's check URL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckBody {
    pub task_id: TaskId,
    /// `null` when the task has no business key.
    pub key: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// The check's number (1-based).
    pub check: u32,
}

/// What happens to a held task whose fate nobody decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnUnknown {
    #[default]
    Cancel,
    Release,
}

impl OnUnknown {
    pub fn parse(s: &str) -> Option<OnUnknown> {
        match s {
            "cancel" => Some(OnUnknown::Cancel),
            "release" => Some(OnUnknown::Release),
            _ => None,
        }
    }
}

/// What one check call answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckAnswer {
    Release,
    Cancel,
    /// No decision: an error, a timeout, another status or body. Asked again later.
    Unknown(String),
}

/// The record of one check, kept with the task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecord {
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

/// The wait before check `n + 1` after `n` unanswered ones (n ≥ 1).
fn check_backoff(n: u32) -> Duration {
    let secs = CHECK_BACKOFF
        .get(n.saturating_sub(1) as usize)
        .copied()
        .unwrap_or(CHECK_EVERY);
    Duration::from_secs(secs)
}

impl Task {
    /// A newly registered held task: its first attempt due at `fire_at` once released,
    /// its first check at the hold's timeout.
    pub fn hold_from(mut self, now: DateTime<Utc>) -> Result<Task, Refusal> {
        let Some(hold) = &self.spec.hold else {
            return Ok(self);
        };
        self.status = Status::Held;
        self.check_at =
            Some(checked_add(now, hold.timeout).ok_or(Refusal::TimeOutOfRange("hold"))?);
        Ok(self)
    }

    /// Releases a held task for delivery, due at its fire time, or now if that passed.
    /// A task released before answers [`Refusal::Released`] (the caller's release was
    /// a repeat); a canceled one [`Refusal::Finished`].
    pub fn release(&self, now: DateTime<Utc>) -> Result<Task, Refusal> {
        match self.status {
            Status::Held => {}
            Status::Canceled => return Err(Refusal::Finished(Status::Canceled)),
            _ if self.spec.hold.is_some() => return Err(Refusal::Released(self.status)),
            other => return Err(Refusal::NotHeld(other)),
        }
        let due = self.next_attempt_at.unwrap_or(now).max(now);
        let mut next = self.next_version(now);
        next.status = Status::Scheduled;
        next.next_attempt_at = Some(due);
        next.round_started_at = due;
        next.check_at = None;
        next.timer_armed = false;
        Ok(next)
    }

    /// Takes a held task's due check (the timer for it fired).
    pub fn claim_check(&self, attempt: u32, now: DateTime<Utc>) -> Result<(), Refusal> {
        if self.status != Status::Held || attempt != CHECK_ATTEMPT {
            return Err(Refusal::StaleAttempt(attempt));
        }
        match self.check_at {
            Some(due) if due > now => Err(Refusal::NotDue(due)),
            _ => Ok(()),
        }
    }

    /// The held task after check `record` answered `answer` (or, without a check URL,
    /// after its timeout with [`CheckAnswer::Unknown`] and no record): released,
    /// canceled, or held until the next check; once `max_checks` went unanswered,
    /// `on_unknown` decides.
    pub fn after_check(
        &self,
        answer: &CheckAnswer,
        record: Option<CheckRecord>,
        now: DateTime<Utc>,
    ) -> Result<Task, Refusal> {
        let Some(hold) = self
            .spec
            .hold
            .as_ref()
            .filter(|_| self.status == Status::Held)
        else {
            return Err(Refusal::NotHeld(self.status));
        };
        let mut current = self.clone();
        current.checks.extend(record);
        let made = current.checks.len() as u32;
        let decided = match answer {
            CheckAnswer::Release => OnUnknown::Release,
            CheckAnswer::Cancel => OnUnknown::Cancel,
            CheckAnswer::Unknown(_) if hold.check_url.is_some() && made < hold.max_checks => {
                let mut next = current.next_version(now);
                next.check_at = Some(
                    checked_add(now, check_backoff(made))
                        .ok_or(Refusal::TimeOutOfRange("check"))?,
                );
                next.timer_armed = false;
                return Ok(next);
            }
            CheckAnswer::Unknown(_) => hold.on_unknown,
        };
        match decided {
            OnUnknown::Release => current.release(now),
            OnUnknown::Cancel => current.cancel(now),
        }
    }

    /// The next check's number (1-based).
    pub fn next_check(&self) -> u32 {
        self.checks.len() as u32 + 1
    }

    /// The check call to `url`: a `POST` of the task's id, key and metadata, and the
    /// check's number.
    pub fn check_spec(&self, url: String) -> TaskSpec {
        let body = CheckBody {
            task_id: self.id,
            key: self.spec.key.as_ref().map(|k| k.to_string()),
            metadata: self.spec.metadata.clone(),
            check: self.next_check(),
        };
        let body = serde_json::to_string(&body).unwrap_or_default();
        TaskSpec::json_post(url, Vec::new(), body, CHECK_TIMEOUT)
    }
}

impl CheckRecord {
    /// The record of check `number`, made at `at` and answered `answer` at `finished`.
    pub fn new(
        number: u32,
        at: DateTime<Utc>,
        finished: DateTime<Utc>,
        status_code: Option<u16>,
        answer: &CheckAnswer,
    ) -> CheckRecord {
        let (decision, error) = match answer {
            CheckAnswer::Release => (Some("release".to_string()), None),
            CheckAnswer::Cancel => (Some("cancel".to_string()), None),
            CheckAnswer::Unknown(e) => (None, Some(e.clone())),
        };
        CheckRecord {
            number,
            at,
            duration_ms: (finished - at).num_milliseconds().max(0) as u64,
            status_code,
            decision,
            error,
        }
    }
}

/// The caller's answer to a check call: `200 {"decision": "release" | "cancel"}`, or
/// `404`/`410` for a transaction that never committed.
pub fn judge_check(status: Option<u16>, body: Option<&str>, error: Option<&str>) -> CheckAnswer {
    if let Some(e) = error {
        return CheckAnswer::Unknown(e.to_string());
    }
    match status {
        Some(404 | 410) => CheckAnswer::Cancel,
        Some(200) => {
            let decision = body
                .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
                .and_then(|v| {
                    v.get("decision")
                        .and_then(|d| d.as_str())
                        .map(str::to_string)
                });
            match decision.as_deref() {
                Some("release") => CheckAnswer::Release,
                Some("cancel") => CheckAnswer::Cancel,
                _ => CheckAnswer::Unknown(
                    "HTTP 200 without {\"decision\": \"release\" | \"cancel\"}".into(),
                ),
            }
        }
        Some(code) => CheckAnswer::Unknown(format!("HTTP {code}")),
        None => CheckAnswer::Unknown("no response".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_is_checked_where_it_is_made() {
        let hold = |timeout, url: Option<&str>, checks| {
            HoldSpec::new(timeout, url.map(str::to_string), OnUnknown::Cancel, checks)
        };
        assert_eq!(
            hold(Duration::from_secs(0), None, None).unwrap_err().field,
            "timeout"
        );
        assert_eq!(
            hold(Duration::from_secs(90_000), None, None)
                .unwrap_err()
                .field,
            "timeout"
        );
        assert_eq!(
            hold(Duration::from_secs(60), Some(" "), None)
                .unwrap_err()
                .field,
            "check_url"
        );
        assert_eq!(
            hold(Duration::from_secs(60), None, Some(0))
                .unwrap_err()
                .field,
            "max_checks"
        );
        assert_eq!(
            hold(Duration::from_secs(60), None, Some(101))
                .unwrap_err()
                .field,
            "max_checks"
        );
        assert_eq!(
            hold(Duration::from_secs(60), None, None)
                .unwrap()
                .max_checks(),
            20
        );
    }

    #[test]
    fn check_answers_are_judged_as_documented() {
        let ok = |b: &str| judge_check(Some(200), Some(b), None);
        assert_eq!(ok(r#"{"decision":"release"}"#), CheckAnswer::Release);
        assert_eq!(ok(r#"{"decision":"cancel"}"#), CheckAnswer::Cancel);
        assert!(matches!(
            ok(r#"{"decision":"maybe"}"#),
            CheckAnswer::Unknown(_)
        ));
        assert!(matches!(ok("release"), CheckAnswer::Unknown(_)));
        assert_eq!(judge_check(Some(404), None, None), CheckAnswer::Cancel);
        assert_eq!(judge_check(Some(410), None, None), CheckAnswer::Cancel);
        assert!(matches!(
            judge_check(Some(500), None, None),
            CheckAnswer::Unknown(e) if e == "HTTP 500"
        ));
        assert!(matches!(
            judge_check(
                Some(200),
                Some(r#"{"decision":"release"}"#),
                Some("timeout")
            ),
            CheckAnswer::Unknown(_)
        ));
    }

    #[test]
    fn checks_back_off_then_settle_at_five_minutes() {
        let waits: Vec<u64> = (1..=7).map(|n| check_backoff(n).as_secs()).collect();
        assert_eq!(waits, vec![1, 5, 30, 60, 300, 300, 300]);
    }
}
