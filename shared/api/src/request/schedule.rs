//! `POST /v1/schedules`: a schedule's own fields beside a task's, read into the engine's
//! [`NewSchedule`].

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::choice;
use super::json::{from_value, parse_json};
use super::refused::Refused;
use super::task::TaskRequest;
use super::template::Templates;
use super::text::{DurationText, TimeText};
use boomerang_core::domain::{CatchUp, FieldPath, Recurrence};
use boomerang_core::engine::NewSchedule;

/// The fields of `POST /v1/schedules` that are the schedule's own; the others are a task's.
pub const SCHEDULE_FIELDS: [&str; 6] = [
    "cron", "every", "timezone", "start_at", "end_at", "catch_up",
];

/// A task's fields a schedule does not take: its occurrences give each task its time.
pub const NOT_ON_A_SCHEDULE: [&str; 6] = [
    "delay",
    "fire_at",
    "hold",
    "idempotency_key",
    "on_key",
    "max_delay",
];

/// A schedule's own fields in `POST /v1/schedules`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFields {
    /// A cron pattern: five fields (minute hour day month weekday), or six with seconds
    /// first; `L`, `#`, `W`, names and `@daily`-style nicknames are understood. Not with
    /// `every`.
    #[schema(example = "0 9 * * MON-FRI")]
    pub cron: Option<String>,
    /// A fixed interval instead of `cron` (at least 1s), counted from `start_at`.
    #[schema(value_type = Option<String>, example = "15m")]
    pub every: Option<DurationText>,
    /// The IANA time zone `cron` is read in (default `UTC`).
    #[schema(example = "Europe/Paris")]
    pub timezone: Option<String>,
    /// No occurrence before this (RFC 3339; default now).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub start_at: Option<TimeText>,
    /// No occurrence after this (RFC 3339).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub end_at: Option<TimeText>,
    /// `one` (default): an occurrence missed while the server was down fires once, late;
    /// `none`: it is skipped. Either way the schedule goes on from the next slot.
    #[serde(default, with = "choice")]
    #[schema(value_type = Option<String>, pattern = "^(one|none)$")]
    pub catch_up: Option<CatchUp>,
}

/// `POST /v1/schedules`: the schedule's own fields, and a task's (as `POST /v1/tasks` takes
/// them, without its time, hold or keys of registration).
pub fn parse_schedule(body: &[u8]) -> Result<ScheduleDraft, Refused> {
    let mut object: serde_json::Map<String, serde_json::Value> = parse_json(body)?;
    let mut own = serde_json::Map::new();
    for field in SCHEDULE_FIELDS {
        if let Some(v) = object.remove(field) {
            own.insert(field.to_string(), v);
        }
    }
    let own: ScheduleFields = from_value(serde_json::Value::Object(own), FieldPath::root())?;
    for field in NOT_ON_A_SCHEDULE {
        if object.get(field).is_some_and(|v| !v.is_null()) {
            return Err(Refused::invalid(
                field,
                "not on a schedule: its occurrences give each task its time",
            ));
        }
    }
    let task: TaskRequest = from_value(serde_json::Value::Object(object), FieldPath::root())?;
    Ok(ScheduleDraft { own, task })
}

/// A schedule's body as read: its own fields, and the task each occurrence registers.
#[derive(Clone, Debug)]
pub struct ScheduleDraft {
    own: ScheduleFields,
    pub task: TaskRequest,
}

impl ScheduleDraft {
    /// The schedule, its task with its template (as the template is now: the schedule
    /// keeps the task it makes).
    pub fn new_schedule(self, templates: &Templates) -> Result<NewSchedule, Refused> {
        let ScheduleDraft { own, task } = self;
        let recurrence = match (own.cron, own.every) {
            (Some(_), Some(_)) => {
                return Err(Refused::invalid(
                    "every",
                    "give either `cron` or `every`, not both",
                ))
            }
            (None, None) => return Err(Refused::invalid("cron", "give `cron` or `every`")),
            (Some(cron), None) => {
                Recurrence::cron(&cron, own.timezone.as_deref().unwrap_or("UTC"))?
            }
            (None, Some(every)) => {
                if own.timezone.is_some() {
                    return Err(Refused::invalid("timezone", "only with `cron`"));
                }
                Recurrence::every(every.value())?
            }
        };
        Ok(NewSchedule {
            recurrence,
            start_at: own.start_at.map(|t| t.value()),
            end_at: own.end_at.map(|t| t.value()),
            catch_up: own.catch_up.unwrap_or(CatchUp::One),
            task: templates.apply(task)?.new_task(None)?,
        })
    }
}
