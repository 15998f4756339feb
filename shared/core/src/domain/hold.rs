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
use super::limits::{DEFAULT_MAX_CHECKS, MAX_CHECKS, MAX_HOLD, MIN_HOLD};

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

/// What a check's answer decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckDecision {
    Release,
    Cancel,
}

impl CheckDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckDecision::Release => "release",
            CheckDecision::Cancel => "cancel",
        }
    }
}

/// The record of one check, kept with the task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub number: u32,
    pub at: DateTime<Utc>,
    pub duration_ms: u64,
    pub status_code: Option<u16>,
    /// What the answer decided, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<CheckDecision>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
}
