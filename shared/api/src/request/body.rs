//! The request types a whole body is read as, each with how it is read: most are a plain
//! JSON object ([`parse_json`]); a few check more than their shape as they are read.

use boomerang_core::domain::{Policy, Template};

use super::json::parse_json;
use super::refused::Refused;
use super::{
    parse_policy, parse_schedule, parse_template, BatchRequest, BreakerSettingsRequest,
    BulkRequest, DestinationRequest, RotationRequest, ScheduleDraft, TaskRequest,
};

/// A request type read from a whole body; a body that does not read as one is refused
/// at the field that broke it.
pub trait RequestBody: Sized {
    fn parse(body: &[u8]) -> Result<Self, Refused>;
}

/// Request types read as a plain JSON object.
macro_rules! json_bodies {
    ($($request:ty),* $(,)?) => {
        $(impl RequestBody for $request {
            fn parse(body: &[u8]) -> Result<Self, Refused> {
                parse_json(body)
            }
        })*
    };
}

json_bodies!(
    TaskRequest,
    BatchRequest,
    BulkRequest,
    BreakerSettingsRequest,
    DestinationRequest,
);

impl RequestBody for Policy {
    fn parse(body: &[u8]) -> Result<Self, Refused> {
        parse_policy(body)
    }
}

impl RequestBody for Template {
    fn parse(body: &[u8]) -> Result<Self, Refused> {
        parse_template(body)
    }
}

impl RequestBody for ScheduleDraft {
    fn parse(body: &[u8]) -> Result<Self, Refused> {
        parse_schedule(body)
    }
}

/// An empty body rotates with the defaults.
impl RequestBody for RotationRequest {
    fn parse(body: &[u8]) -> Result<Self, Refused> {
        match body.trim_ascii().is_empty() {
            true => Ok(RotationRequest::default()),
            false => parse_json(body),
        }
    }
}
