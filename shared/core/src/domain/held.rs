//! A held task's transitions: its release, its checks and what their answers decide
//! (the states are drawn in [`super::hold`]).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::hold::{CheckAnswer, CheckBody, CheckDecision, CheckRecord, OnUnknown};
use super::ids::Attempt;
use super::lifecycle::Refusal;
use super::task::{Status, Task, TaskSpec};
use super::time::checked_add;

/// How long a check call may take.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// The wait after each unanswered check: then every 5 minutes.
const CHECK_BACKOFF: [u64; 4] = [1, 5, 30, 60];
const CHECK_EVERY: u64 = 300;

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
            Some(checked_add(now, hold.timeout()).ok_or(Refusal::TimeOutOfRange("hold"))?);
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
    pub fn claim_check(&self, attempt: Attempt, now: DateTime<Utc>) -> Result<(), Refusal> {
        if self.status != Status::Held || attempt != Attempt::Check {
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
            CheckAnswer::Unknown(_) if hold.check_url().is_some() && made < hold.max_checks() => {
                let mut next = current.next_version(now);
                next.check_at = Some(
                    checked_add(now, check_backoff(made))
                        .ok_or(Refusal::TimeOutOfRange("check"))?,
                );
                next.timer_armed = false;
                return Ok(next);
            }
            CheckAnswer::Unknown(_) => hold.on_unknown(),
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
            CheckAnswer::Release => (Some(CheckDecision::Release), None),
            CheckAnswer::Cancel => (Some(CheckDecision::Cancel), None),
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
