//! What the API shows of a schedule.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use boomerang_core::domain::{Recurrence, Schedule, ScheduleId};

/// A schedule as the API shows it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScheduleView {
    #[schema(value_type = String)]
    pub id: ScheduleId,
    /// `active` or `paused`.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The interval of an `every` schedule, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<u64>,
    pub start_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_at: Option<DateTime<Utc>>,
    /// `one` or `none`.
    pub catch_up: String,
    /// When the next occurrence is due (none while paused or past the end).
    pub next_at: Option<DateTime<Utc>>,
    /// What each occurrence calls.
    pub url: String,
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ScheduleView {
    pub fn new(s: &Schedule, now: DateTime<Utc>) -> Self {
        let (cron, timezone, every_ms) = match &s.recurrence {
            Recurrence::Cron { pattern, timezone } => {
                (Some(pattern.clone()), Some(timezone.clone()), None)
            }
            Recurrence::Every { interval } => (None, None, Some(interval.as_millis() as u64)),
        };
        ScheduleView {
            id: s.id,
            state: s.state.as_str().into(),
            cron,
            timezone,
            every_ms,
            start_at: s.start_at,
            end_at: s.end_at,
            catch_up: s.catch_up.as_str().into(),
            next_at: s.next_at(now),
            url: s.spec.request.url.clone(),
            method: s.spec.request.method.clone(),
            key: s.spec.key.as_ref().map(|k| k.to_string()),
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScheduleListView {
    pub schedules: Vec<ScheduleView>,
    /// Send as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
