//! The request bodies the API takes, typed: durations, times and choices are read with the
//! body, so a bad one is refused at its path; each body becomes what the engine takes in
//! one step ([`TaskRequest::submission`], [`parse_schedule`], [`parse_policy`]).

mod batch;
mod body;
mod breaker;
mod bulk;
mod choice;
mod flow;
mod json;
mod object;
mod page;
mod refused;
mod retry;
mod schedule;
mod signing_secret;
mod task;
mod template;
mod text;

pub use batch::BatchRequest;
pub use body::RequestBody;
pub use breaker::{BreakerSettingsRequest, DestinationRequest};
pub use bulk::{BetweenRequest, BulkOrder, BulkRequest, FilterRequest};
pub use flow::FlowRequest;
pub use json::{from_value, parse_json};
pub use page::PageQuery;
pub use refused::Refused;
pub use retry::{parse_policy, PolicyRequest, RetryField, RetryRequest};
pub use schedule::{
    parse_schedule, ScheduleDraft, ScheduleFields, NOT_ON_A_SCHEDULE, SCHEDULE_FIELDS,
};
pub use signing_secret::RotationRequest;
pub use task::{business_key, AlertRequest, HoldRequest, TaskRequest};
pub use template::{parse_template, TemplateRequest, Templates};
pub use text::{Choice, DurationText, OnKey, TimeText};

/// `POST /v1/tasks`'s body.
pub fn parse(body: &[u8]) -> Result<TaskRequest, Refused> {
    parse_json(body)
}

#[cfg(test)]
mod tests;
