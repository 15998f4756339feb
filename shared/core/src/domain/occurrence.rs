//! The slot of a schedule a task fills.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::ScheduleId;

/// The occurrence a task is: its schedule, and the slot it fills.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Occurrence {
    pub schedule: ScheduleId,
    pub at: DateTime<Utc>,
}

impl Occurrence {
    /// The idempotency key of this slot's task: an occurrence is registered at most once,
    /// however many workers come to register it.
    pub fn idempotency_key(&self) -> String {
        format!("schedule:{}:{}", self.schedule, self.at.timestamp_millis())
    }
}
