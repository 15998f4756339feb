//! The registration request as clients send it, and its validation into a [`NewTask`].
//!
//! Every rule names the field it guards, so a client always learns what to fix.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::openapi::schema::{Array, ArrayBuilder, Object, ObjectBuilder, SchemaType, Type};
use utoipa::ToSchema;

use super::problem::Problem;
use boomerang_core::domain::invalid::within;
use boomerang_core::domain::limits::*;
use boomerang_core::domain::{
    AlertTarget, Backoff, BackoffKind, BusinessKey, CatchUp, FlowSpec, HoldSpec, Invalid,
    MaxAttempts, Notify, OnUnknown, Policy, PolicyName, Recurrence, RetryPolicy, SpecDraft,
    TaskSpec,
};
use boomerang_core::engine::{FireTime, NewSchedule, NewTask, RetrySource};

/// `headers` as the OpenAPI document shows it: at most [`MAX_HEADERS`] string values.
fn headers_schema() -> Object {
    string_map(MAX_HEADERS, None)
        .description(Some(format!(
            "Headers to send, at most {MAX_HEADERS}; values are never shown again"
        )))
        .build()
}

/// `metadata` as the OpenAPI document shows it.
fn metadata_schema() -> Object {
    string_map(MAX_METADATA_ENTRIES, Some(MAX_METADATA_KEY))
        .description(Some(format!(
            "Labels kept with the task and sent with its alerts (at most \
             {MAX_METADATA_ENTRIES}; keys 1–{MAX_METADATA_KEY} bytes, values up to {} KiB)",
            MAX_METADATA_VALUE / 1024
        )))
        .build()
}

/// `retry.permanent_statuses` as the OpenAPI document shows it.
fn permanent_statuses_schema() -> Array {
    let status = ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(*PERMANENT_STATUSES.start() as f64))
        .maximum(Some(*PERMANENT_STATUSES.end() as f64));
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(status)
        .description(Some(format!(
            "Response statuses ({}–{}) that fail the task at once, without retrying",
            PERMANENT_STATUSES.start(),
            PERMANENT_STATUSES.end()
        )))
        .examples([serde_json::json!([400, 401, 403, 404, 410])])
        .build()
}

/// An object of strings: at most `entries` of them, with names of at most `name_len`.
fn string_map(entries: usize, name_len: Option<usize>) -> ObjectBuilder {
    let mut names = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1));
    if let Some(len) = name_len {
        names = names.max_length(Some(len));
    }
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .additional_properties(Some(ObjectBuilder::new().schema_type(Type::String)))
        .max_properties(Some(entries))
        .property_names(Some(names))
}

/// A callback to register. Only `url` is required: by default it is called at once with
/// `POST`, no body, a 10 s timeout, and the default retry policy.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "url": "https://example.com/hooks/order-shipped",
    "delay": "90s",
    "body": {"order": 42},
    "headers": {"x-tenant": "acme"},
    "retry": {"schedule": ["30s", "2m", "10m"]},
    "key": "order-42",
    "metadata": {"source": "checkout"}
}))]
pub struct TaskRequest {
    /// Where to send the callback: an `https://` URL (`http://` and private addresses only
    /// with `serve --dev` or `--allow-cidr`).
    #[schema(value_type = String, required = true, min_length = 1, max_length = 2048,
             example = "https://example.com/hooks/order-shipped")]
    pub url: Option<String>,
    /// `POST` (the default), `PUT`, `PATCH`, `DELETE` or `GET`, in any case.
    #[schema(
        pattern = "^([Pp][Oo][Ss][Tt]|[Pp][Uu][Tt]|[Pp][Aa][Tt][Cc][Hh]|[Dd][Ee][Ll][Ee][Tt][Ee]|[Gg][Ee][Tt])$",
        example = "POST"
    )]
    pub method: Option<String>,
    /// Headers to send (at most 50). Values are stored but never shown again.
    /// `Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, `Upgrade`, `TE` and
    /// names starting `webhook-` or `boomerang-` are refused.
    #[schema(schema_with = headers_schema)]
    pub headers: Option<BTreeMap<String, String>>,
    /// The body to send (at most 256 KiB): a string is sent as it is (`text/plain`), any
    /// other JSON value as JSON (`application/json`), unless `headers` names a type.
    pub body: Option<serde_json::Value>,
    /// How long from now to call (0s to 365days); the default is now. Not with `fire_at`.
    #[schema(example = "90s")]
    pub delay: Option<String>,
    /// When to call (RFC 3339), within 365 days. Not with `delay`.
    #[schema(format = DateTime, example = "2030-01-01T09:00:00Z")]
    pub fire_at: Option<String>,
    /// How failed attempts are retried: a policy of its own, or the name of one of the
    /// tenant's policies (`"payments"`). The default makes 8 attempts, waiting 30s, 1m,
    /// 3m, 30m, 30m, 30m and 1h between them.
    pub retry: Option<RetryField>,
    /// How long one attempt may take (1s to 60s; default 10s).
    #[schema(example = "10s")]
    pub timeout: Option<String>,
    /// An attempt succeeds only if the response body contains this text (at most 4 KiB).
    #[schema(max_length = 4096)]
    pub expect_body: Option<String>,
    /// Labels kept with the task and sent with its alerts (at most 50; keys 1–64 bytes,
    /// values up to 1 KiB).
    #[schema(schema_with = metadata_schema)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Registers the task at most once: a repeat with the same key and request answers the
    /// task registered first (200). Same as the `Idempotency-Key` header.
    #[schema(min_length = 1, max_length = 255, example = "order-42-reminder")]
    pub idempotency_key: Option<String>,
    /// The caller's own id for the task (not unique): tasks are listed, canceled and
    /// released by it. 1–255 bytes, no control characters.
    #[schema(min_length = 1, max_length = 255, example = "order-42")]
    pub key: Option<String>,
    /// Where this task's failures are reported (an alert is itself a task).
    pub on_failure: Option<AlertRequest>,
    /// `final` (default): report the final failure only; `every`: every failed attempt.
    #[schema(value_type = Option<crate::openapi::enums::Notify>)]
    pub notify: Option<String>,
    /// Register the task held: it is not called until released (or a check says so).
    pub hold: Option<HoldRequest>,
    /// Limits shared with the tenant's other tasks of the same flow key: at most
    /// `parallelism` in flight, at most `rate` started per `period`. Tasks over a limit
    /// wait; none is refused.
    pub flow: Option<FlowRequest>,
    /// `replace`: a task registered before under the same `key` with `replace`, none of
    /// whose attempts has begun, is replaced by this one (its body, headers and fire time;
    /// answered 200 with that task) instead of adding one. Once an attempt of it has
    /// begun, this registration makes a new task. Needs `key`; not in a batch.
    #[schema(pattern = "^replace$", example = "replace")]
    pub on_key: Option<String>,
    /// With `on_key: replace`: the replaced task fires at most this long after the first
    /// registration it replaced (1s to 365days), however often it is replaced.
    #[schema(example = "2m")]
    pub max_delay: Option<String>,
}

/// `flow`: the flow key whose limits the task shares.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"key": "partner-api", "rate": 50, "period": "1s", "parallelism": 3}))]
pub struct FlowRequest {
    /// The flow's name (per tenant): 1–255 bytes, no control characters.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255,
             example = "partner-api")]
    pub key: Option<String>,
    /// The most tasks of the flow started per `period` (1–100000).
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 100000, example = 50)]
    pub rate: Option<i64>,
    /// The window `rate` counts in (1s to 24h; default 1s).
    #[schema(example = "1s")]
    pub period: Option<String>,
    /// The most tasks of the flow in flight at once (1–1000).
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 1000, example = 3)]
    pub parallelism: Option<i64>,
}

/// `hold`: register the task held until the caller releases it (or a check decides).
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldRequest {
    /// How long the task may stay held (1s to 24h) before its `check_url` is asked, or,
    /// without one, `on_unknown` applies.
    #[schema(value_type = String, required = true, example = "5m")]
    pub timeout: Option<String>,
    /// Asked, signed, whether to release or cancel the task once the hold times out.
    /// It answers `200 {"decision": "release"}` or `{"decision": "cancel"}`; 404 and 410
    /// mean cancel.
    #[schema(
        min_length = 1,
        max_length = 2048,
        example = "https://example.com/orders/42/committed"
    )]
    pub check_url: Option<String>,
    /// What happens when nobody decides: `cancel` (default) or `release`.
    #[schema(value_type = Option<crate::openapi::enums::OnUnknown>)]
    pub on_unknown: Option<String>,
    /// How many times the check URL is asked (1–100; default 20).
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub max_checks: Option<i64>,
}

/// `on_failure`: where this task's failures are reported.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertRequest {
    #[schema(value_type = String, required = true, min_length = 1, max_length = 2048,
             example = "https://example.com/hooks/boomerang-alerts")]
    pub url: Option<String>,
    #[schema(schema_with = headers_schema)]
    pub headers: Option<BTreeMap<String, String>>,
}

/// A named policy: a retry policy, and optionally the flow its tasks share.
#[derive(Debug, Default, Serialize, ToSchema)]
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
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"backoff": "exponential", "interval": "30s", "max_interval": "1h", "max_attempts": 10}))]
pub struct RetryRequest {
    /// The waits before each retry (1–100 of them, each 1s to 7days).
    #[schema(min_items = 1, max_items = 100, example = json!(["30s", "2m", "10m"]))]
    pub schedule: Option<Vec<String>>,
    /// `fixed`, `linear` or `exponential`, with `interval`. Not with `schedule`.
    #[schema(value_type = Option<String>, pattern = "^(fixed|linear|exponential)$")]
    pub backoff: Option<String>,
    /// The first wait (1s to 7days).
    pub interval: Option<String>,
    /// The longest wait (1s to 7days; default 1h, or `interval` if longer).
    pub max_interval: Option<String>,
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
    pub max_duration: Option<String>,
    /// Each wait is moved by up to this fraction of itself, at random (0 to 0.5).
    #[schema(minimum = 0.0, maximum = 0.5)]
    pub jitter: Option<f64>,
    /// Response statuses (300–599) that fail the task at once, without retrying.
    #[schema(schema_with = permanent_statuses_schema)]
    pub permanent_statuses: Option<Vec<i64>>,
}

/// A task's `retry`: a policy of its own, or the name of one of the tenant's policies.
#[derive(Debug, Serialize, ToSchema)]
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

/// A batch registration: `{"tasks": [ … ]}`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// 1 to 100 tasks, each as `POST /v1/tasks` takes it.
    #[schema(min_items = 1, max_items = 100)]
    pub tasks: Vec<TaskRequest>,
}

/// Parses the JSON body; the error names the field that could not be read. Anything but
/// whitespace after the JSON value is refused (400).
pub fn parse(body: &[u8]) -> Result<TaskRequest, Problem> {
    parse_json(body)
}

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

/// `POST /v1/schedules`: the schedule's own fields, and a task's (as `POST /v1/tasks` takes
/// them, without its time, hold or keys of registration).
pub fn parse_schedule(body: &[u8]) -> Result<NewSchedule, Problem> {
    let mut object: serde_json::Map<String, serde_json::Value> = parse_json(body)?;
    let mut own = serde_json::Map::new();
    for field in SCHEDULE_FIELDS {
        if let Some(v) = object.remove(field) {
            own.insert(field.to_string(), v);
        }
    }
    let own: ScheduleFields = from_value(serde_json::Value::Object(own), "")?;
    for field in NOT_ON_A_SCHEDULE {
        if object.get(field).is_some_and(|v| !v.is_null()) {
            return Err(Problem::invalid(
                field,
                "not on a schedule: its occurrences give each task its time",
            ));
        }
    }
    let task: TaskRequest = from_value(serde_json::Value::Object(object), "")?;
    let recurrence = match (own.cron, own.every) {
        (Some(_), Some(_)) => {
            return Err(Problem::invalid(
                "every",
                "give either `cron` or `every`, not both",
            ))
        }
        (None, None) => return Err(Problem::invalid("cron", "give `cron` or `every`")),
        (Some(cron), None) => {
            Recurrence::cron(&cron, own.timezone.as_deref().unwrap_or("UTC")).map_err(invalid)?
        }
        (None, Some(every)) => {
            if own.timezone.is_some() {
                return Err(Problem::invalid("timezone", "only with `cron`"));
            }
            Recurrence::every(duration("every", &every)?).map_err(invalid)?
        }
    };
    let catch_up = match own.catch_up.as_deref() {
        None => CatchUp::One,
        Some(c) => CatchUp::parse(c)
            .ok_or_else(|| Problem::invalid("catch_up", "must be `one` or `none`"))?,
    };
    Ok(NewSchedule {
        recurrence,
        start_at: own.start_at.map(|t| instant("start_at", &t)).transpose()?,
        end_at: own.end_at.map(|t| instant("end_at", &t)).transpose()?,
        catch_up,
        task: task.validate(None)?,
    })
}

/// A schedule's own fields in `POST /v1/schedules`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFields {
    /// A cron pattern: five fields (minute hour day month weekday), or six with seconds
    /// first; `L`, `#`, `W`, names and `@daily`-style nicknames are understood. Not with
    /// `every`.
    #[schema(example = "0 9 * * MON-FRI")]
    pub cron: Option<String>,
    /// A fixed interval instead of `cron` (at least 1s), counted from `start_at`.
    #[schema(example = "15m")]
    pub every: Option<String>,
    /// The IANA time zone `cron` is read in (default `UTC`).
    #[schema(example = "Europe/Paris")]
    pub timezone: Option<String>,
    /// No occurrence before this (RFC 3339; default now).
    #[schema(format = DateTime)]
    pub start_at: Option<String>,
    /// No occurrence after this (RFC 3339).
    #[schema(format = DateTime)]
    pub end_at: Option<String>,
    /// `one` (default): an occurrence missed while the server was down fires once, late;
    /// `none`: it is skipped. Either way the schedule goes on from the next slot.
    #[schema(pattern = "^(one|none)$")]
    pub catch_up: Option<String>,
}

fn instant(field: &'static str, raw: &str) -> Result<DateTime<Utc>, Problem> {
    DateTime::parse_from_rfc3339(raw.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            Problem::invalid(
                field,
                "must be an RFC 3339 time such as 2030-01-01T12:00:00Z",
            )
        })
}

/// A named policy (the body of `PUT /v1/policies/{name}`): a retry policy's fields, as a
/// task's `retry` takes them, and optionally the `flow` its tasks share. Problems name the
/// field within it (`max_attempts`, `flow.rate`).
pub fn parse_policy(body: &[u8]) -> Result<Policy, Problem> {
    let mut fields: serde_json::Map<String, serde_json::Value> = parse_json(body)?;
    let flow = match fields.remove("flow") {
        None | Some(serde_json::Value::Null) => None,
        Some(flow) => Some(from_value::<FlowRequest>(flow, "flow")?.validate()?),
    };
    let retry = from_value::<RetryRequest>(serde_json::Value::Object(fields), "")?
        .validate()
        .map_err(|mut problem| {
            let unprefixed = |s: &str| s.strip_prefix("retry.").unwrap_or(s).to_string();
            problem.field = problem.field.as_deref().map(unprefixed);
            problem.detail = unprefixed(&problem.detail);
            problem
        })?;
    Ok(Policy { retry, flow })
}

/// Reads a part of a body already parsed; a problem names its field under `under`.
fn from_value<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    under: &str,
) -> Result<T, Problem> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = match (under, e.path().to_string()) {
            ("", p) if p == "." => "body".to_string(),
            (under, p) if p == "." => under.to_string(),
            ("", p) => p,
            (under, p) => format!("{under}.{p}"),
        };
        Problem::invalid(field, strip_position(&e.inner().to_string()))
    })
}

/// [`parse`] for a batch; fields are named from the top (`tasks[3].delay`).
pub fn parse_batch(body: &[u8]) -> Result<BatchRequest, Problem> {
    parse_json(body)
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Problem> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let request = deserialize(&mut de, body)?;
    de.end()
        .map_err(|e| Problem::malformed(format!("unexpected data after the JSON value: {e}")))?;
    Ok(request)
}

fn deserialize<T: serde::de::DeserializeOwned>(
    de: &mut serde_json::Deserializer<serde_json::de::SliceRead<'_>>,
    body: &[u8],
) -> Result<T, Problem> {
    serde_path_to_error::deserialize(de).map_err(|e| {
        let inner = e.inner();
        // serde_json reports some shape errors in well-formed JSON as syntax errors: an
        // object field sent as a longer array ends in "trailing characters". Only JSON
        // that does not parse is malformed (400); the rest names its field (422).
        let well_formed = || serde_json::from_slice::<serde_json::Value>(body).is_ok();
        if (inner.is_syntax() || inner.is_eof()) && !well_formed() {
            return Problem::malformed(inner.to_string());
        }
        // The path includes an unknown field's own name (`retry.bogus`).
        let field = match e.path().to_string() {
            p if p == "." => "body".to_string(),
            p => p,
        };
        let message = inner.to_string();
        Problem::invalid(field, strip_position(&message))
    })
}

/// serde_json appends " at line 1 column 42"; the field name says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

impl TaskRequest {
    /// Validates the request; `header_key` is the `Idempotency-Key` header, if sent. The
    /// request's shape and its durations are read here; the rules of a task are the
    /// domain's ([`TaskSpec::new`]).
    pub fn validate(self, header_key: Option<&str>) -> Result<NewTask, Problem> {
        if self.on_key.is_some() {
            return Err(Problem::invalid(
                "on_key",
                "not taken here (a batch, a schedule): register the task alone",
            ));
        }
        if self.max_delay.is_some() {
            return Err(Problem::invalid("max_delay", "only with `on_key: replace`"));
        }
        let idempotency_key = idempotency_key(header_key, self.idempotency_key.as_deref())?;
        let request_hash = self.digest();
        let (body, content_type) = body(self.body)?;
        let timeout = self.timeout.map(|t| duration("timeout", &t)).transpose()?;
        let (retry, retry_from) = match self.retry {
            None => (RetryPolicy::default(), RetrySource::Default),
            Some(RetryField::Inline(r)) => (r.validate()?, RetrySource::Given),
            Some(RetryField::Named(name)) => {
                let name = PolicyName::parse(name)
                    .map_err(|e| Problem::invalid("retry", e.to_string()))?;
                (RetryPolicy::default(), RetrySource::Named(name))
            }
        };
        let key = self.key.map(business_key).transpose()?;
        let on_failure = self.on_failure.map(AlertRequest::validate).transpose()?;
        let hold = self.hold.map(HoldRequest::validate).transpose()?;
        let flow = self.flow.map(FlowRequest::validate).transpose()?;
        let notify = match self.notify.as_deref() {
            None => Notify::Final,
            Some(n) => Notify::parse(n)
                .ok_or_else(|| Problem::invalid("notify", "must be `final` or `every`"))?,
        };
        let spec = TaskSpec::new(SpecDraft {
            url: self.url.unwrap_or_default(),
            method: self.method,
            headers: self.headers.unwrap_or_default().into_iter().collect(),
            body,
            content_type,
            timeout,
            expect_body: self.expect_body,
            retry,
            metadata: self.metadata.unwrap_or_default(),
            key,
            on_failure,
            notify,
            hold,
            flow,
        })
        .map_err(invalid)?;
        Ok(NewTask {
            retry_from,
            spec,
            when: fire_time(self.delay, self.fire_at)?,
            idempotency_key,
            request_hash,
        })
    }

    /// Takes `on_key` and `max_delay` out of a single registration: `Some(max_delay)` for
    /// `on_key: replace`, `None` for an ordinary one. Refuses what cannot go with them.
    pub fn take_replace(
        &mut self,
        header_key: Option<&str>,
    ) -> Result<Option<Option<Duration>>, Problem> {
        let (on_key, max_delay) = (self.on_key.take(), self.max_delay.take());
        match on_key.as_deref() {
            None if max_delay.is_some() => {
                Err(Problem::invalid("max_delay", "only with `on_key: replace`"))
            }
            None => Ok(None),
            Some("replace") => {
                if self.key.is_none() {
                    return Err(Problem::invalid(
                        "key",
                        "`on_key: replace` replaces the task of a key: give `key`",
                    ));
                }
                if header_key.is_some() || self.idempotency_key.is_some() {
                    return Err(Problem::invalid(
                        "idempotency_key",
                        "not with `on_key: replace` (a repeat replaces the task again)",
                    ));
                }
                if self.hold.is_some() {
                    return Err(Problem::invalid("hold", "not with `on_key: replace`"));
                }
                let max = max_delay
                    .map(|d| bounded("max_delay", &d, MIN_STEP, MAX_SCHEDULE_AHEAD))
                    .transpose()?;
                Ok(Some(max))
            }
            Some(_) => Err(Problem::invalid("on_key", "must be `replace`")),
        }
    }

    /// A digest of the request without its idempotency key. Object keys are sorted by the
    /// JSON model, so the same request always gives the same digest.
    fn digest(&self) -> String {
        let canonical = serde_json::json!({
            "url": self.url, "method": self.method, "headers": self.headers, "body": self.body,
            "delay": self.delay, "fire_at": self.fire_at, "retry": self.retry,
            "timeout": self.timeout, "expect_body": self.expect_body, "metadata": self.metadata,
            "key": self.key, "on_failure": self.on_failure, "notify": self.notify,
            "hold": self.hold, "flow": self.flow,
        });
        let bytes = serde_json::to_vec(&canonical).unwrap_or_default();
        format!("{:x}", Sha256::digest(bytes))
    }
}

impl AlertRequest {
    fn validate(self) -> Result<AlertTarget, Problem> {
        let headers = self.headers.unwrap_or_default().into_iter().collect();
        AlertTarget::new(self.url.unwrap_or_default(), headers)
            .map_err(|e| invalid(e.under("on_failure")))
    }
}

impl FlowRequest {
    fn validate(self) -> Result<FlowSpec, Problem> {
        let Some(key) = self.key else {
            return Err(Problem::invalid("flow.key", "is required"));
        };
        let period = (self.period)
            .map(|p| duration("flow.period", &p))
            .transpose()?;
        FlowSpec::new(&key, self.rate, period, self.parallelism).map_err(invalid)
    }
}

impl HoldRequest {
    fn validate(self) -> Result<HoldSpec, Problem> {
        let timeout = match self.timeout {
            Some(t) => duration("hold.timeout", &t)?,
            None => return Err(Problem::invalid("hold.timeout", "is required")),
        };
        let on_unknown = match self.on_unknown.as_deref() {
            None => OnUnknown::Cancel,
            Some(s) => OnUnknown::parse(s).ok_or_else(|| {
                Problem::invalid("hold.on_unknown", "must be `cancel` or `release`")
            })?,
        };
        HoldSpec::new(timeout, self.check_url, on_unknown, self.max_checks)
            .map_err(|e| invalid(e.under("hold")))
    }
}

impl RetryRequest {
    /// The policy the request describes: its durations read here, its rules checked by
    /// [`RetryPolicy::new`].
    fn validate(self) -> Result<RetryPolicy, Problem> {
        let durations = |field: &str, raw: Option<String>| {
            raw.map(|d| duration(&format!("retry.{field}"), &d))
                .transpose()
        };
        let backoff = match (self.schedule, self.backoff.as_deref()) {
            (Some(_), Some(_)) => {
                return Err(Problem::invalid(
                    "retry",
                    "give either `schedule` or `backoff`, not both",
                ))
            }
            (Some(steps), None) => {
                let steps = steps
                    .iter()
                    .enumerate()
                    .map(|(i, s)| duration(&format!("retry.schedule[{i}]"), s))
                    .collect::<Result<Vec<_>, _>>()?;
                Backoff::schedule(steps)
            }
            (None, Some(kind)) => {
                let kind = BackoffKind::parse(kind).map_err(|e| invalid(e.under("retry")))?;
                let Some(interval) = durations("interval", self.interval)? else {
                    return Err(Problem::invalid(
                        "retry.interval",
                        "is required with `backoff`",
                    ));
                };
                Backoff::curve(
                    kind,
                    interval,
                    durations("max_interval", self.max_interval)?,
                )
            }
            (None, None) => {
                if self.interval.is_some() || self.max_interval.is_some() {
                    return Err(Problem::invalid(
                        "retry.backoff",
                        "is required with `interval` and `max_interval`",
                    ));
                }
                Ok(RetryPolicy::default().backoff().clone())
            }
        }
        .map_err(|e| invalid(e.under("retry")))?;
        let max_attempts = match self.max_attempts {
            None => MaxAttempts::Default,
            Some(None) => MaxAttempts::Unlimited,
            Some(Some(n)) => MaxAttempts::Limit(n),
        };
        RetryPolicy::new(
            backoff,
            max_attempts,
            durations("max_duration", self.max_duration)?,
            self.jitter.unwrap_or(0.0),
            &self.permanent_statuses.unwrap_or_default(),
        )
        .map_err(|e| invalid(e.under("retry")))
    }
}

/// The domain's refusal as the API answers it: 422, naming the field.
pub(crate) fn invalid(e: Invalid) -> Problem {
    Problem::invalid(e.field, e.detail)
}

/// A humantime duration within `[min, max]`. Every duration a request carries is read
/// here or checked by the domain, so none can overflow the sums the engine makes with it.
fn bounded(field: &str, raw: &str, min: Duration, max: Duration) -> Result<Duration, Problem> {
    within(field, duration(field, raw)?, min, max).map_err(invalid)
}

fn duration(field: &str, raw: &str) -> Result<Duration, Problem> {
    humantime::parse_duration(raw.trim()).map_err(|_| {
        Problem::invalid(
            field,
            format!("`{raw}` is not a duration; use a positive value like `30s`, `5m` or `1h`"),
        )
    })
}

fn fire_time(delay: Option<String>, fire_at: Option<String>) -> Result<FireTime, Problem> {
    match (delay, fire_at) {
        (Some(_), Some(_)) => Err(Problem::invalid(
            "fire_at",
            "give either `delay` or `fire_at`, not both",
        )),
        (Some(d), None) => Ok(FireTime::After(bounded(
            "delay",
            &d,
            Duration::ZERO,
            MAX_SCHEDULE_AHEAD,
        )?)),
        (None, Some(at)) => DateTime::parse_from_rfc3339(at.trim())
            .map(|t| FireTime::At(t.with_timezone(&Utc)))
            .map_err(|_| {
                Problem::invalid(
                    "fire_at",
                    "must be an RFC 3339 time such as 2030-01-01T12:00:00Z",
                )
            }),
        (None, None) => Ok(FireTime::Now),
    }
}

/// The body to send, and the content type it implies when the client gives none.
fn body(raw: Option<serde_json::Value>) -> Result<(String, Option<&'static str>), Problem> {
    let (body, kind) = match raw {
        None | Some(serde_json::Value::Null) => (String::new(), None),
        Some(serde_json::Value::String(s)) => (s, Some("text/plain; charset=utf-8")),
        Some(json) => (json.to_string(), Some("application/json")),
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(Problem::too_large(
            "body",
            format!("body: must be at most {} KiB", MAX_BODY_BYTES / 1024),
        ));
    }
    Ok((body, kind))
}

/// A task's business key (also the `key` of a list or a cancel).
pub fn business_key(given: String) -> Result<BusinessKey, Problem> {
    BusinessKey::parse(given).map_err(|e| Problem::invalid("key", e.to_string()))
}

fn idempotency_key(header: Option<&str>, field: Option<&str>) -> Result<Option<String>, Problem> {
    let key = match (header, field) {
        (Some(h), Some(f)) if h != f => {
            return Err(Problem::invalid(
                "idempotency_key",
                "differs from the Idempotency-Key header",
            ))
        }
        (Some(k), _) | (None, Some(k)) => k,
        (None, None) => return Ok(None),
    };
    if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY {
        return Err(Problem::invalid(
            "idempotency_key",
            format!("must be 1 to {MAX_IDEMPOTENCY_KEY} characters"),
        ));
    }
    // Alerts are registered under `boomerang-alert:…` keys (see `Task::alert_idempotency_key`).
    if key.starts_with(RESERVED_KEY_PREFIX) {
        return Err(Problem::invalid(
            "idempotency_key",
            format!("keys starting with `{RESERVED_KEY_PREFIX}` are reserved"),
        ));
    }
    Ok(Some(key.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(json: &str) -> Option<String> {
        match parse(json.as_bytes()).and_then(|r| r.validate(None)) {
            Ok(_) => None,
            Err(p) => Some(p.field.unwrap_or_else(|| format!("<{}>", p.status))),
        }
    }

    #[test]
    fn each_rule_names_its_field() {
        let cases = [
            (r#"{"url":"https://x.io","bogus":1}"#, "bogus"),
            (
                r#"{"url":"https://x.io","retry":{"bogus":1}}"#,
                "retry.bogus",
            ),
            (r#"{}"#, "url"),
            (r#"{"url":5}"#, "url"),
            // Well-formed, in the wrong shape: not a 400 for malformed JSON.
            (
                r#"{"url":"https://x.io","hold":[null,null,null,0,null]}"#,
                "hold",
            ),
            (
                r#"{"url":"https://x.io","on_failure":[1,2,3]}"#,
                "on_failure[0]",
            ),
            (r#"{"url":"https://x.io","delay":"-5s"}"#, "delay"),
            (r#"{"url":"https://x.io","delay":"300000y"}"#, "delay"),
            (r#"{"url":"https://x.io","delay":"366days"}"#, "delay"),
            (
                r#"{"url":"https://x.io","delay":"99999999999999999999999s"}"#,
                "delay",
            ),
            (
                r#"{"url":"https://x.io","retry":{"max_duration":"300000y"}}"#,
                "retry.max_duration",
            ),
            (
                r#"{"url":"https://x.io","retry":{"backoff":"exponential","interval":"1s","max_interval":"300000y"}}"#,
                "retry.max_interval",
            ),
            (
                r#"{"url":"https://x.io","retry":{"backoff":"fixed","interval":"300000y"}}"#,
                "retry.interval",
            ),
            (r#"{"url":"https://x.io","timeout":"300000y"}"#, "timeout"),
            (
                r#"{"url":"https://x.io","retry":{"max_attempts":18446744073709551616}}"#,
                "retry.max_attempts",
            ),
            (
                r#"{"url":"https://x.io","retry":{"permanent_statuses":[-1]}}"#,
                "retry.permanent_statuses[0]",
            ),
            (r#"{"url":"https://x.io","delay":"soon"}"#, "delay"),
            (
                r#"{"url":"https://x.io","delay":"1s","fire_at":"2030-01-01T00:00:00Z"}"#,
                "fire_at",
            ),
            (r#"{"url":"https://x.io","fire_at":"tomorrow"}"#, "fire_at"),
            (r#"{"url":"https://x.io","timeout":"0s"}"#, "timeout"),
            (
                r#"{"url":"https://x.io","retry":{"max_attempts":null}}"#,
                "retry.max_duration",
            ),
            (
                r#"{"url":"https://x.io","retry":{"max_attempts":null,"max_duration":"31d"}}"#,
                "retry.max_duration",
            ),
            (r#"{"url":"https://x.io","timeout":"61s"}"#, "timeout"),
            (
                r#"{"url":"https://x.io","retry":{"max_attempts":0}}"#,
                "retry.max_attempts",
            ),
            (
                r#"{"url":"https://x.io","retry":{"max_attempts":1001}}"#,
                "retry.max_attempts",
            ),
            (
                r#"{"url":"https://x.io","retry":{"schedule":[]}}"#,
                "retry.schedule",
            ),
            (
                r#"{"url":"https://x.io","retry":{"schedule":["1s","8d"]}}"#,
                "retry.schedule[1]",
            ),
            (
                r#"{"url":"https://x.io","retry":{"schedule":["500ms"]}}"#,
                "retry.schedule[0]",
            ),
            (
                r#"{"url":"https://x.io","retry":{"jitter":0.6}}"#,
                "retry.jitter",
            ),
            (
                r#"{"url":"https://x.io","retry":{"backoff":"fixed"}}"#,
                "retry.interval",
            ),
            (
                r#"{"url":"https://x.io","retry":{"backoff":"cubic","interval":"1s"}}"#,
                "retry.backoff",
            ),
            (
                r#"{"url":"https://x.io","retry":{"backoff":"linear","interval":"1m","max_interval":"1s"}}"#,
                "retry.max_interval",
            ),
            (
                r#"{"url":"https://x.io","headers":{"Host":"evil"}}"#,
                "headers.Host",
            ),
            (
                r#"{"url":"https://x.io","headers":{"webhook-id":"x"}}"#,
                "headers.webhook-id",
            ),
            (
                r#"{"url":"https://x.io","headers":{"Transfer-Encoding":"chunked"}}"#,
                "headers.Transfer-Encoding",
            ),
            (r#"{"url":"https://x.io","method":"TRACE"}"#, "method"),
            (
                r#"{"url":"https://x.io","idempotency_key":"boomerang-alert:x"}"#,
                "idempotency_key",
            ),
            (
                r#"{"url":"https://x.io","on_failure":{}}"#,
                "on_failure.url",
            ),
            (
                r#"{"url":"https://x.io","on_failure":{"url":" "}}"#,
                "on_failure.url",
            ),
            (
                r#"{"url":"https://x.io","on_failure":{"url":"https://a.io","bogus":1}}"#,
                "on_failure.bogus",
            ),
            (
                r#"{"url":"https://x.io","on_failure":{"url":"https://a.io","headers":{"Host":"h"}}}"#,
                "on_failure.headers.Host",
            ),
            (
                r#"{"url":"https://x.io","on_failure":{"url":"https://a.io","headers":{"X":"a\nb"}}}"#,
                "on_failure.headers.X",
            ),
            (
                r#"{"url":"https://x.io","on_failure":"https://a.io"}"#,
                "on_failure",
            ),
            (r#"{"url":"https://x.io","notify":"sometimes"}"#, "notify"),
            (r#"{"url":"https://x.io","notify":1}"#, "notify"),
        ];
        for (json, field) in cases {
            assert_eq!(field_of(json).as_deref(), Some(field), "{json}");
        }
        let schedule = format!(
            r#"{{"url":"https://x.io","retry":{{"schedule":[{}]}}}}"#,
            vec![r#""1s""#; 101].join(",")
        );
        assert_eq!(field_of(&schedule).as_deref(), Some("retry.schedule"));
        let key = format!(
            r#"{{"url":"https://x.io","idempotency_key":"{}"}}"#,
            "k".repeat(256)
        );
        assert_eq!(field_of(&key).as_deref(), Some("idempotency_key"));
        assert_eq!(field_of("{nope").as_deref(), Some("<400>"));
        assert_eq!(
            field_of(r#"{"url":"https://x.io"} xyz"#).as_deref(),
            Some("<400>")
        );
        assert_eq!(
            field_of(r#"{"url":"https://x.io"}{}"#).as_deref(),
            Some("<400>")
        );
        assert_eq!(
            field_of("{\"url\":\"https://x.io\"} \n\t"),
            None,
            "whitespace is fine"
        );
        let deep = format!(
            "{{\"url\":\"https://x.io\",\"body\":{}{}}}",
            "[".repeat(5000),
            "]".repeat(5000)
        );
        assert_eq!(
            field_of(&deep).as_deref(),
            Some("<400>"),
            "nesting beyond serde_json's limit"
        );
    }

    #[test]
    fn a_full_request_validates_into_a_spec() {
        let json = r#"{"url":"https://x.io/h","method":"put","headers":{"X-A":"1"},
            "body":{"k":[1,2]},"delay":"90s",
            "retry":{"backoff":"exponential","interval":"10s","max_interval":"5m","max_attempts":5,
                     "jitter":0.2,"permanent_statuses":[404]},
            "timeout":"5s","expect_body":"ok","metadata":{"order":"42"}}"#;
        let new = parse(json.as_bytes())
            .unwrap()
            .validate(Some("key-1"))
            .unwrap();
        assert_eq!(new.spec.request.method, "PUT");
        assert_eq!(new.spec.request.body, r#"{"k":[1,2]}"#);
        assert!(new
            .spec
            .request
            .headers
            .contains(&("content-type".into(), "application/json".into())));
        assert_eq!(new.when, FireTime::After(Duration::from_secs(90)));
        assert_eq!(new.spec.retry.max_attempts(), Some(5));
        assert_eq!(new.spec.retry.permanent_statuses(), [404]);
        assert_eq!(new.idempotency_key.as_deref(), Some("key-1"));
    }

    #[test]
    fn max_attempts_null_retries_until_max_duration() {
        let policy = |retry: &str| {
            parse(format!(r#"{{"url":"https://x.io","retry":{retry}}}"#).as_bytes())
                .unwrap()
                .validate(None)
                .map(|n| n.spec.retry)
        };
        let unlimited = policy(r#"{"max_attempts":null,"max_duration":"30d"}"#).unwrap();
        assert_eq!(unlimited.max_attempts(), None);
        assert_eq!(
            unlimited.max_duration(),
            Some(Duration::from_secs(30 * 24 * 3600))
        );
        assert_eq!(
            policy(r#"{"max_attempts":1000}"#).unwrap().max_attempts(),
            Some(1000)
        );
        // Absent is the default count, not "unlimited"; and the two differ as requests.
        assert_eq!(policy("{}").unwrap().max_attempts(), Some(8));
        let absent = parse(br#"{"url":"https://x.io","retry":{}}"#).unwrap();
        let null = parse(br#"{"url":"https://x.io","retry":{"max_attempts":null}}"#).unwrap();
        assert_ne!(absent.digest(), null.digest());
    }

    #[test]
    fn a_policy_body_names_its_own_fields() {
        let problem =
            parse_policy(br#"{"backoff":"fixed","interval":"99999999999999999999d"}"#).unwrap_err();
        assert_eq!(problem.field.as_deref(), Some("interval"));
        assert!(
            problem.detail.starts_with("interval: "),
            "{}",
            problem.detail
        );
        let policy = parse_policy(br#"{"schedule":["1s","5s"]}"#).unwrap();
        assert_eq!((policy.retry.max_attempts(), policy.flow), (Some(3), None));
        let field = |body: &str| parse_policy(body.as_bytes()).unwrap_err().field;
        assert_eq!(
            field(r#"{"flow":{"key":"k","rate":0}}"#).unwrap(),
            "flow.rate"
        );
        assert_eq!(
            field(r#"{"flow":{"key":"k","bogus":1}}"#).unwrap(),
            "flow.bogus"
        );
        assert_eq!(field(r#"{"flow":"k"}"#).unwrap(), "flow");
        assert_eq!(field(r#"{"flow":{"rate":5}}"#).unwrap(), "flow.key");
        assert_eq!(field(r#"{"bogus":1}"#).unwrap(), "bogus");
        assert_eq!(field(r#"[1]"#).unwrap(), "body");
        let with_flow = parse_policy(br#"{"flow":{"key":"k","parallelism":2}}"#).unwrap();
        assert_eq!(with_flow.flow.unwrap().parallelism(), Some(2));
    }

    #[test]
    fn digest_ignores_the_key_and_sees_every_other_change() {
        let a =
            parse(br#"{"url":"https://x.io","idempotency_key":"a","body":{"x":1,"y":2}}"#).unwrap();
        let b = parse(br#"{"body":{"y":2,"x":1},"url":"https://x.io"}"#).unwrap();
        let c = parse(br#"{"url":"https://x.io","body":{"x":1,"y":3}}"#).unwrap();
        assert_eq!(a.digest(), b.digest());
        assert_ne!(a.digest(), c.digest());
    }
}
