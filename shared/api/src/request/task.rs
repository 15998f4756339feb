//! `POST /v1/tasks`: a callback to register, and its parts (`hold`, `flow`,
//! `on_failure`); read into the domain's [`Submission`] in one step.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::choice;
use super::flow::FlowRequest;
use super::refused::Refused;
use super::retry::RetryField;
use super::text::{Choice, DurationText, OnKey, TimeText};
use crate::schema::{enums, headers_schema, metadata_schema};
use boomerang_core::domain::limits::*;
use boomerang_core::domain::{
    AlertTarget, BusinessKey, DefinitionName, HoldSpec, Invalid, Notify, OnHeadFailure, OnUnknown,
    OrderKey, OrderSpec, RetryPolicy, SpecDraft, TaskSpec,
};
use boomerang_core::engine::{FireTime, NewTask, RetrySource, Submission};

/// A callback to register. Only `url` is required: by default it is called at once with
/// `POST`, no body, a 10 s timeout, and the default retry policy.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
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
    #[schema(value_type = Option<String>, example = "90s")]
    pub delay: Option<DurationText>,
    /// When to call (RFC 3339), within 365 days. Not with `delay`.
    #[schema(value_type = Option<String>, format = DateTime, example = "2030-01-01T09:00:00Z")]
    pub fire_at: Option<TimeText>,
    /// How failed attempts are retried: a policy of its own, or the name of one of the
    /// tenant's policies (`"payments"`). The default makes 8 attempts, waiting 30s, 1m,
    /// 3m, 30m, 30m, 30m and 1h between them.
    pub retry: Option<RetryField>,
    /// How long one attempt may take (1s to 60s; default 10s).
    #[schema(value_type = Option<String>, example = "10s")]
    pub timeout: Option<DurationText>,
    /// An attempt succeeds only if the response body is exactly this text (at most 4 KiB).
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
    /// `final` (default): report the final failure only; `every`: every failed attempt;
    /// `never`: no failure (the dead letter still records it).
    #[serde(default, with = "choice")]
    #[schema(value_type = Option<enums::Notify>)]
    pub notify: Option<Notify>,
    /// Where this task's success is reported: a signed `task.succeeded` notice once it
    /// ends `succeeded` (no default destination applies).
    // Left out of the request's digest when absent, so that a repeat of a registration
    // stored before the field existed still matches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_success: Option<AlertRequest>,
    /// Register the task held: it is not called until released (or a check says so).
    pub hold: Option<HoldRequest>,
    /// Limits shared with the tenant's other tasks of the same flow key: at most
    /// `parallelism` in flight, at most `rate` started per `period`. Tasks over a limit
    /// wait; none is refused.
    pub flow: Option<FlowRequest>,
    /// Tasks with the same `order_key` are delivered one at a time, in the order they were
    /// registered: a task waits while an earlier one of its key is held, scheduled,
    /// being delivered or retrying (1 to 255 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 255, example = "order-42")]
    pub order_key: Option<String>,
    /// With `order_key`, what the key does if this task fails for good: `block` (default)
    /// waits until it is retried or canceled; `skip` goes on without it.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "choice")]
    #[schema(value_type = Option<String>, pattern = "^(block|skip)$", example = "block")]
    pub order_on_failure: Option<OnHeadFailure>,
    /// A template of the tenant's (`PUT /v1/templates/{name}`) whose settings this task
    /// takes where it gives none; absent: the tenant's `default` template, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9._-]+$",
        example = "billing"
    )]
    pub template: Option<String>,
    /// `replace`: a task registered before under the same `key` with `replace`, none of
    /// whose attempts has begun, is replaced by this one (its body, headers and fire time;
    /// answered 200 with that task) instead of adding one. Once an attempt of it has
    /// begun, this registration makes a new task. Needs `key`; not in a batch.
    #[serde(default, with = "choice")]
    #[schema(value_type = Option<String>, pattern = "^replace$", example = "replace")]
    pub on_key: Option<OnKey>,
    /// With `on_key: replace`: the replaced task fires at most this long after the first
    /// registration it replaced (1s to 365days), however often it is replaced.
    #[schema(value_type = Option<String>, example = "2m")]
    pub max_delay: Option<DurationText>,
}

/// `hold`: register the task held until the caller releases it (or a check decides).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldRequest {
    /// How long the task may stay held (1s to 24h) before its `check_url` is asked, or,
    /// without one, `on_unknown` applies.
    #[schema(value_type = String, required = true, example = "5m")]
    pub timeout: Option<DurationText>,
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
    #[serde(default, with = "choice")]
    #[schema(value_type = Option<enums::OnUnknown>)]
    pub on_unknown: Option<OnUnknown>,
    /// How many times the check URL is asked (1–100; default 20).
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub max_checks: Option<i64>,
}

/// `on_failure` and `on_success`: where a task's failures, or its success, are reported.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertRequest {
    #[schema(value_type = String, required = true, min_length = 1, max_length = 2048,
             example = "https://example.com/hooks/boomerang-alerts")]
    pub url: Option<String>,
    #[schema(schema_with = headers_schema)]
    pub headers: Option<BTreeMap<String, String>>,
}

impl TaskRequest {
    /// The registration this request asks for: a task added, or (`on_key: replace`) the
    /// pending task of its key replaced. `header_key` is the `Idempotency-Key` header, if
    /// sent. The request's shape is read here; the rules of a task and of a replacement
    /// are the domain's ([`TaskSpec::new`], [`Submission::replacing`]).
    pub fn submission(self, header_key: Option<&str>) -> Result<Submission, Refused> {
        let digest = self.digest();
        self.submission_as(header_key, digest)
    }

    /// [`Self::submission`], the request's digest being `digest` (that of the request as
    /// sent, before a template was laid under it).
    pub(crate) fn submission_as(
        mut self,
        header_key: Option<&str>,
        digest: String,
    ) -> Result<Submission, Refused> {
        let (on_key, max_delay) = (self.on_key.take(), self.max_delay.take());
        match on_key {
            None if max_delay.is_some() => {
                Err(Refused::invalid("max_delay", "only with `on_key: replace`"))
            }
            None => Ok(Submission::Add(self.new_task_as(header_key, digest)?)),
            Some(OnKey::Replace) => {
                let task = self.new_task_as(header_key, digest)?;
                let max_delay = max_delay.map(|d| d.value());
                Ok(Submission::replacing(task, max_delay)?)
            }
        }
    }

    /// The task this request registers, where a task is registered alone in a larger
    /// whole (a batch, a schedule): `on_key` is refused.
    pub fn new_task(self, header_key: Option<&str>) -> Result<NewTask, Refused> {
        let digest = self.digest();
        self.new_task_as(header_key, digest)
    }

    /// [`Self::new_task`], the request's digest being `digest`.
    pub(crate) fn new_task_as(
        self,
        header_key: Option<&str>,
        request_hash: String,
    ) -> Result<NewTask, Refused> {
        if self.on_key.is_some() {
            return Err(Refused::invalid(
                "on_key",
                "not taken here (a batch, a schedule): register the task alone",
            ));
        }
        if self.max_delay.is_some() {
            return Err(Refused::invalid("max_delay", "only with `on_key: replace`"));
        }
        let idempotency_key = idempotency_key(header_key, self.idempotency_key.as_deref())?;
        let (body, content_type) = body(self.body)?;
        let (retry, retry_from) = match self.retry {
            None => (RetryPolicy::default(), RetrySource::Default),
            Some(RetryField::Inline(r)) => (
                r.policy().map_err(|e| e.under("retry"))?,
                RetrySource::Given,
            ),
            Some(RetryField::Named(name)) => {
                let name = DefinitionName::parse(name)
                    .map_err(|e| Refused::invalid("retry", e.to_string()))?;
                (RetryPolicy::default(), RetrySource::Named(name))
            }
        };
        let spec = TaskSpec::new(SpecDraft {
            url: self.url.unwrap_or_default(),
            method: self.method,
            headers: self.headers.unwrap_or_default().into_iter().collect(),
            body,
            content_type,
            timeout: self.timeout.map(|t| t.value()),
            expect_body: self.expect_body,
            retry,
            metadata: self.metadata.unwrap_or_default(),
            key: self.key.map(business_key).transpose()?,
            on_failure: (self.on_failure.map(|a| a.target("on_failure"))).transpose()?,
            notify: self.notify.unwrap_or_default(),
            on_success: (self.on_success.map(|a| a.target("on_success"))).transpose()?,
            hold: self.hold.map(HoldRequest::spec).transpose()?,
            flow: self.flow.map(FlowRequest::spec).transpose()?,
            order: order(self.order_key, self.order_on_failure)?,
        })?;
        Ok(NewTask {
            retry_from,
            spec,
            when: fire_time(self.delay, self.fire_at)?,
            idempotency_key,
            request_hash,
        })
    }

    /// A digest of the request as sent, without what only steers its registration (its
    /// idempotency key, `on_key`, `max_delay`): a repeat under the same idempotency key
    /// must be the same request. Objects are written with their keys sorted, so the same
    /// request always gives the same digest.
    pub(crate) fn digest(&self) -> String {
        let mut fields = match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(fields)) => fields,
            _ => serde_json::Map::new(),
        };
        for steering in ["idempotency_key", "on_key", "max_delay"] {
            fields.remove(steering);
        }
        let bytes = serde_json::to_vec(&fields).unwrap_or_default();
        format!("{:x}", Sha256::digest(bytes))
    }
}

impl AlertRequest {
    /// The destination this names, refused under `field` (`on_failure.url`).
    fn target(self, field: &str) -> Result<AlertTarget, Refused> {
        let headers = self.headers.unwrap_or_default().into_iter().collect();
        AlertTarget::new(self.url.unwrap_or_default(), headers).map_err(|e| e.under(field).into())
    }
}

impl HoldRequest {
    fn spec(self) -> Result<HoldSpec, Refused> {
        let Some(timeout) = self.timeout else {
            return Err(Refused::invalid("hold.timeout", "is required"));
        };
        let on_unknown = self.on_unknown.unwrap_or(OnUnknown::Cancel);
        HoldSpec::new(timeout.value(), self.check_url, on_unknown, self.max_checks)
            .map_err(|e| e.under("hold").into())
    }
}

/// When to call: `delay` from now, or `fire_at`, or now.
fn fire_time(delay: Option<DurationText>, fire_at: Option<TimeText>) -> Result<FireTime, Invalid> {
    use boomerang_core::domain::invalid::within;
    match (delay, fire_at) {
        (Some(_), Some(_)) => Err(Invalid::new(
            "fire_at",
            "give either `delay` or `fire_at`, not both",
        )),
        (Some(d), None) => {
            let delay = within(
                "delay",
                d.value(),
                std::time::Duration::ZERO,
                MAX_SCHEDULE_AHEAD,
            )?;
            Ok(FireTime::After(delay))
        }
        (None, Some(at)) => Ok(FireTime::At(at.value())),
        (None, None) => Ok(FireTime::Now),
    }
}

/// The body to send, and the content type it implies when the client gives none.
fn body(raw: Option<serde_json::Value>) -> Result<(String, Option<&'static str>), Refused> {
    let (body, kind) = match raw {
        None | Some(serde_json::Value::Null) => (String::new(), None),
        Some(serde_json::Value::String(s)) => (s, Some("text/plain; charset=utf-8")),
        Some(json) => (json.to_string(), Some("application/json")),
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(Refused::TooLarge(Invalid::new(
            "body",
            format!("must be at most {} KiB", MAX_BODY_BYTES / 1024),
        )));
    }
    Ok((body, kind))
}

/// A task's business key (also the `key` of a list or a cancel).
pub fn business_key(given: String) -> Result<BusinessKey, Invalid> {
    BusinessKey::parse(given).map_err(|e| Invalid::new("key", e.to_string()))
}

/// The registration's idempotency key, from the header or the field (the same if both).
fn idempotency_key(header: Option<&str>, field: Option<&str>) -> Result<Option<String>, Invalid> {
    let key = match (header, field) {
        (Some(h), Some(f)) if h != f => {
            return Err(Invalid::new(
                "idempotency_key",
                "differs from the Idempotency-Key header",
            ))
        }
        (Some(k), _) | (None, Some(k)) => k,
        (None, None) => return Ok(None),
    };
    if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY {
        return Err(Invalid::new(
            "idempotency_key",
            format!("must be 1 to {MAX_IDEMPOTENCY_KEY} characters"),
        ));
    }
    // Alerts are registered under `boomerang-alert:…` keys (see `Task::alert_idempotency_key`).
    if key.starts_with(RESERVED_KEY_PREFIX) {
        return Err(Invalid::new(
            "idempotency_key",
            format!("keys starting with `{RESERVED_KEY_PREFIX}` are reserved"),
        ));
    }
    Ok(Some(key.to_string()))
}

/// `order_key` and `order_on_failure`, read together.
fn order(
    key: Option<String>,
    on_failure: Option<OnHeadFailure>,
) -> Result<Option<OrderSpec>, Refused> {
    match (key, on_failure) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(Refused::invalid(
            "order_on_failure",
            "only with `order_key`",
        )),
        (Some(key), policy) => {
            let key =
                OrderKey::parse(key).map_err(|e| Refused::invalid("order_key", e.to_string()))?;
            Ok(Some(OrderSpec::new(key, policy.unwrap_or_default())))
        }
    }
}

impl Choice for OnHeadFailure {
    const ALL: &'static [Self] = &[OnHeadFailure::Block, OnHeadFailure::Skip];
    fn name(self) -> &'static str {
        self.as_str()
    }
}
