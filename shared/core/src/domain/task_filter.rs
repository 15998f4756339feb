//! Which of a tenant's tasks a bulk action takes: a filter over what a task holds (its
//! state, business key, URL, destination, flow, schedule, metadata, when it was
//! registered or ended, and how its last attempt went). Pure: a store lists candidates by
//! what it can index (state, key), and [`TaskFilter::matches`] decides the rest.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::destination::Destination;
use super::ids::BusinessKey;
use super::ids::ScheduleId;
use super::invalid::Invalid;
use super::limits::{MAX_FLOW_KEY, MAX_URL_LEN};
use super::spec_rules::check_metadata;
use super::task::{Status, Task};

/// How a task's last attempt failed, read from its last error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The receiver answered with a status that is not a success.
    Http,
    /// It answered 2xx with a body other than `expect_body`.
    BodyMismatch,
    /// No answer in time.
    Timeout,
    /// No answer: the connection failed (or another transport error).
    Transport,
    /// The server refused to call it (a forbidden address).
    Refused,
}

impl ErrorClass {
    /// The class of a last error as the delivery words it.
    pub fn of(error: &str) -> Self {
        if error.starts_with("destination refused") {
            ErrorClass::Refused
        } else if error.contains("did not match expect_body") {
            ErrorClass::BodyMismatch
        } else if error.starts_with("HTTP ") {
            ErrorClass::Http
        } else if error.contains("timed out") {
            ErrorClass::Timeout
        } else {
            ErrorClass::Transport
        }
    }
}

/// An interval of time, either end open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Between {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<DateTime<Utc>>,
}

impl Between {
    pub fn is_open(&self) -> bool {
        self.after.is_none() && self.before.is_none()
    }

    fn holds(&self, at: DateTime<Utc>) -> bool {
        self.after.is_none_or(|after| at >= after) && self.before.is_none_or(|before| at < before)
    }

    /// Refused under `field` when it ends before it begins.
    fn check(&self, field: &str) -> Result<(), Invalid> {
        match (self.after, self.before) {
            (Some(after), Some(before)) if before <= after => Err(Invalid::new(
                format!("{field}.before").as_str(),
                "must be later than `after`",
            )),
            _ => Ok(()),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskFilter {
    /// Tasks in one of these states (none: any state the action takes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statuses: Vec<Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<BusinessKey>,
    /// The task's URL exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The task's URL begins with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_prefix: Option<String>,
    /// The task's destination (scheme, host and port) is this URL's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleId>,
    /// Each of these metadata entries, exactly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Between::is_open")]
    pub registered: Between,
    /// When it ended (finished tasks only).
    #[serde(default, skip_serializing_if = "Between::is_open")]
    pub ended: Between,
    /// Its last attempt was answered with this status code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
}

impl TaskFilter {
    /// Whether it names nothing at all (every task of the states the action takes): a
    /// bulk action refuses such a filter unless asked for explicitly.
    pub fn is_empty(&self) -> bool {
        *self
            == TaskFilter {
                statuses: self.statuses.clone(),
                ..TaskFilter::default()
            }
            && self.statuses.is_empty()
    }

    /// Refuses a filter whose parts contradict themselves or are longer than what a task
    /// can hold (no task could match them, and a job keeps its filter), naming the part.
    pub fn check(&self) -> Result<(), Invalid> {
        for (field, text) in [
            ("filter.url", &self.url),
            ("filter.url_prefix", &self.url_prefix),
            ("filter.destination", &self.destination),
        ] {
            if text
                .as_ref()
                .is_some_and(|t| t.is_empty() || t.len() > MAX_URL_LEN)
            {
                return Err(Invalid::new(
                    field,
                    format!("must be 1 to {MAX_URL_LEN} bytes"),
                ));
            }
        }
        if (self.flow_key.as_ref()).is_some_and(|k| k.is_empty() || k.len() > MAX_FLOW_KEY) {
            return Err(Invalid::new(
                "filter.flow_key",
                format!("must be 1 to {MAX_FLOW_KEY} bytes"),
            ));
        }
        // A destination is a URL's scheme, host and port: text without a scheme names none.
        if (self.destination.as_ref()).is_some_and(|d| !d.contains("://")) {
            return Err(Invalid::new(
                "filter.destination",
                "must be a URL (its scheme, host and port count: https://hooks.example.com)",
            ));
        }
        check_metadata(&self.metadata).map_err(|e| e.under("filter"))?;
        if self.url.is_some() && self.url_prefix.is_some() {
            return Err(Invalid::new(
                "filter.url_prefix",
                "give either `url` or `url_prefix`, not both",
            ));
        }
        if let Some(code) = self.last_status {
            if !(100..=599).contains(&code) {
                return Err(Invalid::new(
                    "filter.last_status",
                    "must be an HTTP status code (100–599)",
                ));
            }
        }
        self.registered.check("filter.registered")?;
        self.ended.check("filter.ended")
    }

    /// Whether `task` is one the filter takes.
    pub fn matches(&self, task: &Task) -> bool {
        let url = task.spec.request.url.as_str();
        let last = task.last_error.as_deref();
        (self.statuses.is_empty() || self.statuses.contains(&task.status))
            && self
                .key
                .as_ref()
                .is_none_or(|k| task.spec.key.as_ref() == Some(k))
            && self.url.as_deref().is_none_or(|u| u == url)
            && self
                .url_prefix
                .as_deref()
                .is_none_or(|p| url.starts_with(p))
            && (self.destination.as_deref())
                .is_none_or(|d| Destination::of(d) == Destination::of(url))
            && (self.flow_key.as_deref()).is_none_or(|k| {
                task.spec
                    .flow
                    .as_ref()
                    .is_some_and(|f| f.key().as_str() == k)
            })
            && (self.schedule.as_ref()).is_none_or(|s| {
                task.spec
                    .occurrence
                    .as_ref()
                    .is_some_and(|o| o.schedule == *s)
            })
            && (self.metadata.iter()).all(|(k, v)| task.spec.metadata.get(k) == Some(v))
            && self.registered.holds(task.created_at)
            && (self.ended.is_open()
                || (task.status.is_terminal() && self.ended.holds(task.updated_at)))
            && self
                .last_status
                .is_none_or(|code| last.and_then(status_of) == Some(code))
            && self
                .error_class
                .is_none_or(|class| last.map(ErrorClass::of) == Some(class))
    }
}

/// The status code a last error names (`HTTP 503`, `HTTP 404 (permanent)`).
fn status_of(error: &str) -> Option<u16> {
    let rest = error.strip_prefix("HTTP ")?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests;
