//! `POST /v1/tasks/bulk`: an action over every task a filter takes, previewed (`dry_run`)
//! or started as a job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::choice;
use super::object::{object, optional_object};
use super::refused::Refused;
use super::task::business_key;
use super::template::is_http_url;
use super::text::{Choice, TimeText};
use boomerang_core::domain::{
    Between, BulkAction, BulkPlan, ErrorClass, ScheduleId, Status, TaskFilter,
};

#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"action": "retry", "dry_run": true,
                          "filter": {"destination": "https://hooks.example.com",
                                     "ended": {"after": "2030-01-01T09:00:00Z"}}}))]
pub struct BulkRequest {
    /// `retry` (failed tasks: a new round of retries each), `cancel` (scheduled or held
    /// tasks) or `release` (held tasks).
    #[serde(default, with = "choice")]
    #[schema(value_type = String, required = true, example = "retry")]
    pub action: Option<BulkAction>,
    /// Which tasks; every part given must hold. An empty filter is refused unless `all`
    /// is true.
    #[serde(default, deserialize_with = "object")]
    pub filter: FilterRequest,
    /// Take every task of the action's states (the filter is empty on purpose).
    #[serde(default)]
    pub all: bool,
    /// Answer the count and a sample, changing nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Tasks acted on per second, at most (1–1000; default 100). The calls a retry or
    /// release brings about keep to the destination's limits besides.
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub per_second: Option<i64>,
}

/// Which tasks a bulk action takes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FilterRequest {
    /// Only tasks in these states (each one the action takes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statuses: Vec<String>,
    /// The task's business key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The task's URL, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The task's URL begins with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_prefix: Option<String>,
    /// A URL of the destination: tasks to the same scheme, host and port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_key: Option<String>,
    /// The id of the schedule whose occurrence the task is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Each of these metadata entries, exactly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Registered in this interval.
    #[serde(
        default,
        deserialize_with = "optional_object",
        skip_serializing_if = "Option::is_none"
    )]
    pub registered: Option<BetweenRequest>,
    /// Ended (failed) in this interval: `retry` only.
    #[serde(
        default,
        deserialize_with = "optional_object",
        skip_serializing_if = "Option::is_none"
    )]
    pub ended: Option<BetweenRequest>,
    /// The last attempt was answered with this HTTP status code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u16>, minimum = 100, maximum = 599)]
    pub last_status: Option<i64>,
    /// How the last attempt failed: `http`, `body_mismatch`, `timeout`, `transport` or
    /// `refused`.
    #[serde(default, with = "choice", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub error_class: Option<ErrorClass>,
}

/// An interval of time; either end may be left out (`after` is included, `before` not).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BetweenRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub after: Option<TimeText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub before: Option<TimeText>,
}

impl From<BetweenRequest> for Between {
    fn from(b: BetweenRequest) -> Self {
        Between {
            after: b.after.map(|t| t.value()),
            before: b.before.map(|t| t.value()),
        }
    }
}

/// A request read: the plan, and whether to preview it only.
pub struct BulkOrder {
    pub plan: BulkPlan,
    pub dry_run: bool,
}

impl BulkRequest {
    pub fn order(self) -> Result<BulkOrder, Refused> {
        let action = self
            .action
            .ok_or_else(|| Refused::invalid("action", BulkAction::must_be()))?;
        let filter = self.filter.filter()?;
        let per_second = match self.per_second {
            Some(n) => Some(
                u32::try_from(n)
                    .map_err(|_| Refused::invalid("per_second", "must be between 1 and 1000"))?,
            ),
            None => None,
        };
        Ok(BulkOrder {
            plan: BulkPlan::new(action, filter, per_second, self.all)?,
            dry_run: self.dry_run,
        })
    }
}

impl FilterRequest {
    fn filter(self) -> Result<TaskFilter, Refused> {
        let statuses = (self.statuses.iter().enumerate())
            .map(|(i, s)| {
                Status::parse(s).ok_or_else(|| {
                    let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
                    let detail = format!("must be one of {}", all.join(", "));
                    Refused::invalid(format!("filter.statuses[{i}]").as_str(), detail)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let key = (self.key.map(business_key).transpose())
            .map_err(|e| Refused::from(e).under("filter"))?;
        let schedule = (self.schedule.as_deref())
            .map(|s| s.parse::<ScheduleId>())
            .transpose()
            .map_err(|_| Refused::invalid("filter.schedule", "must be a schedule id"))?;
        let last_status = (self.last_status)
            .map(|n| {
                u16::try_from(n).map_err(|_| {
                    Refused::invalid(
                        "filter.last_status",
                        "must be an HTTP status code (100–599)",
                    )
                })
            })
            .transpose()?;
        // A destination is a URL's scheme, host and port: it must be a URL that has them.
        if (self.destination.as_deref()).is_some_and(|d| !is_http_url(d)) {
            return Err(Refused::invalid(
                "filter.destination",
                "must be an absolute http(s) URL with a host, like https://hooks.example.com",
            ));
        }
        let filter = TaskFilter {
            statuses,
            key,
            url: self.url,
            url_prefix: self.url_prefix,
            destination: self.destination,
            flow_key: self.flow_key,
            schedule,
            metadata: self.metadata,
            registered: self.registered.map(Between::from).unwrap_or_default(),
            ended: self.ended.map(Between::from).unwrap_or_default(),
            last_status,
            error_class: self.error_class,
        };
        filter.check()?;
        Ok(filter)
    }
}

impl Choice for BulkAction {
    const ALL: &'static [Self] = &[BulkAction::Retry, BulkAction::Cancel, BulkAction::Release];
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for ErrorClass {
    const ALL: &'static [Self] = &[
        ErrorClass::Http,
        ErrorClass::BodyMismatch,
        ErrorClass::Timeout,
        ErrorClass::Transport,
        ErrorClass::Refused,
    ];
    fn name(self) -> &'static str {
        match self {
            ErrorClass::Http => "http",
            ErrorClass::BodyMismatch => "body_mismatch",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Transport => "transport",
            ErrorClass::Refused => "refused",
        }
    }
}
