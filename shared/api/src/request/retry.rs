//! A retry policy as a task's `retry` or a named policy's body writes it, read into the
//! domain's [`RetryPolicy`] (whose rules are its own: [`RetryPolicy::new`]).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::choice;
use super::flow::FlowRequest;
use super::json::{from_value, parse_json};
use super::refused::Refused;
use super::text::DurationText;
use crate::schema::permanent_statuses_schema;
use boomerang_core::domain::{
    Backoff, BackoffKind, FieldPath, Invalid, MaxAttempts, Policy, RetryPolicy,
};

/// A named policy: a retry policy, and optionally the flow its tasks share.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
#[schema(example = json!({"backoff": "exponential", "interval": "30s", "max_interval": "1h",
                          "max_attempts": 10,
                          "flow": {"key": "partner-api", "rate": 50, "parallelism": 3}}))]
pub struct PolicyRequest {
    #[serde(flatten)]
    pub retry: RetryRequest,
    /// The flow whose limits the policy's tasks share, unless a task gives its own `flow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowRequest>,
}

impl From<RetryRequest> for PolicyRequest {
    fn from(retry: RetryRequest) -> Self {
        Self { retry, flow: None }
    }
}

/// A retry policy: a fixed `schedule` of waits, or a `backoff` rule.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"backoff": "exponential", "interval": "30s", "max_interval": "1h", "max_attempts": 10}))]
pub struct RetryRequest {
    /// The waits before each retry (1–100 of them, each 1s to 7days).
    #[schema(value_type = Option<Vec<String>>, min_items = 1, max_items = 100,
             example = json!(["30s", "2m", "10m"]))]
    pub schedule: Option<Vec<DurationText>>,
    /// `fixed`, `linear` or `exponential`, with `interval`. Not with `schedule`.
    #[serde(default, with = "choice")]
    #[schema(value_type = Option<String>, pattern = "^(fixed|linear|exponential)$")]
    pub backoff: Option<BackoffKind>,
    /// The first wait (1s to 7days).
    #[schema(value_type = Option<String>)]
    pub interval: Option<DurationText>,
    /// The longest wait (1s to 7days; default 1h, or `interval` if longer).
    #[schema(value_type = Option<String>)]
    pub max_interval: Option<DurationText>,
    /// The most attempts (1–1000), the first included. Absent: the schedule's length plus
    /// one, or 8 with `backoff`; `null`: as many as fit in `max_duration`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub max_attempts: Option<Option<i64>>,
    /// Give up once this long has passed since the first attempt (1s to 365days; at most
    /// 30days when `max_attempts` is null, and then required).
    #[schema(value_type = Option<String>)]
    pub max_duration: Option<DurationText>,
    /// Each wait is moved by up to this fraction of itself, at random (0 to 0.5).
    #[schema(minimum = 0.0, maximum = 0.5)]
    pub jitter: Option<f64>,
    /// Response statuses (300–599) that fail the task at once, without retrying.
    #[schema(schema_with = permanent_statuses_schema)]
    pub permanent_statuses: Option<Vec<i64>>,
}

/// A task's `retry`: a policy of its own, or the name of one of the tenant's policies.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum RetryField {
    Named(String),
    Inline(RetryRequest),
}

/// By hand rather than `untagged`, so that an error inside the object keeps its path
/// (`retry.bogus`), and anything else is refused as `retry`.
impl<'de> Deserialize<'de> for RetryField {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RetryField;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a retry policy object, or the name of one of your policies")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<RetryField, E> {
                Ok(RetryField::Named(name.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RetryField, A::Error> {
                RetryRequest::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(RetryField::Inline)
            }
        }
        de.deserialize_any(Visitor)
    }
}

/// A field that is present (even as `null`) becomes `Some`; an absent one stays `None`
/// through `#[serde(default)]`.
fn present<'de, D, T>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

impl RetryRequest {
    /// The policy the request describes; a refusal names its field within the policy
    /// (`schedule[2]`; the policy itself when `schedule` and `backoff` are both given).
    pub fn policy(self) -> Result<RetryPolicy, Invalid> {
        let backoff = match (self.schedule, self.backoff) {
            (Some(_), Some(_)) => {
                return Err(Invalid::new(
                    FieldPath::root(),
                    "give either `schedule` or `backoff`, not both",
                ))
            }
            (Some(steps), None) => Backoff::schedule(steps.iter().map(|s| s.value()).collect()),
            (None, Some(kind)) => {
                let Some(interval) = self.interval else {
                    return Err(Invalid::new("interval", "is required with `backoff`"));
                };
                let max_interval = self.max_interval.map(|d| d.value());
                Backoff::curve(kind, interval.value(), max_interval)
            }
            (None, None) => {
                if self.interval.is_some() || self.max_interval.is_some() {
                    return Err(Invalid::new(
                        "backoff",
                        "is required with `interval` and `max_interval`",
                    ));
                }
                Ok(RetryPolicy::default().backoff().clone())
            }
        }?;
        let max_attempts = match self.max_attempts {
            None => MaxAttempts::Default,
            Some(None) => MaxAttempts::Unlimited,
            Some(Some(n)) => MaxAttempts::Limit(n),
        };
        RetryPolicy::new(
            backoff,
            max_attempts,
            self.max_duration.map(|d| d.value()),
            self.jitter.unwrap_or(0.0),
            &self.permanent_statuses.unwrap_or_default(),
        )
    }
}

/// A named policy (the body of `PUT /v1/policies/{name}`): a retry policy's fields, as a
/// task's `retry` takes them, and optionally the `flow` its tasks share. Refusals name the
/// field within it (`max_attempts`, `flow.rate`).
pub fn parse_policy(body: &[u8]) -> Result<Policy, Refused> {
    let mut fields: serde_json::Map<String, serde_json::Value> = parse_json(body)?;
    let flow = match fields.remove("flow") {
        None | Some(serde_json::Value::Null) => None,
        Some(flow) => Some(from_value::<FlowRequest>(flow, "flow".into())?.spec()?),
    };
    let retry = from_value::<RetryRequest>(serde_json::Value::Object(fields), FieldPath::root())?
        .policy()
        .map_err(|e| match e.field.is_root() {
            // The body is the policy: its own refusal is named as a task's would be.
            true => Invalid::new("retry", e.detail),
            false => e,
        })?;
    Ok(Policy { retry, flow })
}
