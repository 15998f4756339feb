//! Where a task's failures are reported, and which: what a task's spec says about
//! alerts. What an alert reports, and the task that carries it, are in
//! [`super::notice`].

use serde::{Deserialize, Serialize};

/// Where alerts go: a task's own `on_failure`, else its tenant's default, else the server's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertTarget {
    pub url: String,
    /// Sent with every alert, in this order (an alerting service's token, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
}

/// Which failures a task reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    /// Only the final failure (the task ends `failed`).
    #[default]
    Final,
    /// Every failed attempt: a "retrying" notice for each one that is retried, then the
    /// final one.
    Every,
    /// None, not even the final failure (its dead letter still records it).
    Never,
}

impl Notify {
    pub fn parse(s: &str) -> Option<Notify> {
        match s {
            "final" => Some(Notify::Final),
            "every" => Some(Notify::Every),
            "never" => Some(Notify::Never),
            _ => None,
        }
    }

    pub fn is_final(&self) -> bool {
        *self == Notify::Final
    }
}
