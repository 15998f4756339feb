//! `PUT /v1/templates/{name}`: a task template, and how a registration takes one. A
//! template holds request settings; a task that names it (or any task, for the template
//! named `default`) takes each setting it does not give itself. The template is laid under
//! the request before the request is read, so every rule of a task applies to the result,
//! and a refusal names the task's field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::choice;
use super::flow::FlowRequest;
use super::json::{from_value, parse_json};
use super::refused::Refused;
use super::retry::RetryField;
use super::task::{AlertRequest, TaskRequest};
use super::text::DurationText;
use crate::schema::{enums, headers_schema};
use boomerang_core::domain::limits::MAX_URL_LEN;
use boomerang_core::domain::{DefinitionName, FieldPath, Notify, Template};
use boomerang_core::engine::{NewTask, Submission};

/// A task template: the settings its tasks take unless they give their own. Tasks
/// registered after a change take the template as changed; those registered before keep
/// what they were registered with.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "url_base": "https://example.com/hooks",
    "headers": {"x-team": "billing"},
    "timeout": "5s",
    "expect_body": "success",
    "retry": "payments",
    "on_failure": {"url": "https://example.com/hooks/boomerang-alerts"}
}))]
pub struct TemplateRequest {
    /// What a task's relative `url` (`/orders/42`) is appended to. Not with `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 2048,
        example = "https://example.com/hooks"
    )]
    pub url_base: Option<String>,
    /// The URL of a task that gives none. Not with `url_base`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 2048)]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Headers every task sends; a task's header of the same name (in any case) wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = headers_schema)]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "5s")]
    pub timeout: Option<DurationText>,
    /// The tenant's rule for what a successful receiver answers (`"success"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4096)]
    pub expect_body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryField>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<AlertRequest>,
    #[serde(default, with = "choice", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<enums::Notify>)]
    pub notify: Option<Notify>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_success: Option<AlertRequest>,
}

/// `PUT /v1/templates/{name}`'s body, checked as a task would be: a field a task could not
/// take is refused here, named as the template's.
pub fn parse_template(body: &[u8]) -> Result<Template, Refused> {
    let template: TemplateRequest = parse_json(body)?;
    template.check()?;
    let doc = serde_json::to_value(&template).map_err(|e| Refused::Malformed(e.to_string()))?;
    match doc {
        serde_json::Value::Object(fields) => Ok(Template(fields)),
        _ => Err(Refused::Malformed("a template is a JSON object".into())),
    }
}

impl TemplateRequest {
    /// A stored template, as it was checked when it was put.
    pub fn stored(template: &Template) -> Result<Self, Refused> {
        from_value(
            serde_json::Value::Object(template.0.clone()),
            FieldPath::from("template"),
        )
    }

    /// Every field as a task would take it: the template applied to a task that gives
    /// only a URL must make a task.
    fn check(&self) -> Result<(), Refused> {
        // A task's own URL is checked at its registration; a template's, here: no task
        // could take one that is not an absolute http(s) URL of at most MAX_URL_LEN bytes.
        if let Some(url) = &self.url {
            if !is_http_url(url) || url.len() > MAX_URL_LEN {
                return Err(Refused::invalid(
                    "url",
                    format!("must be an absolute http(s) URL of at most {MAX_URL_LEN} bytes"),
                ));
            }
        }
        if let Some(base) = &self.url_base {
            if self.url.is_some() {
                return Err(Refused::invalid(
                    "url",
                    "give either `url` or `url_base`, not both",
                ));
            }
            let absolute = base.starts_with("https://") || base.starts_with("http://");
            if !absolute || base.len() > MAX_URL_LEN {
                return Err(Refused::invalid(
                    "url_base",
                    format!("must be an absolute http(s) URL of at most {MAX_URL_LEN} bytes"),
                ));
            }
        }
        // The task gives the URL only where the template does not.
        let url = match (&self.url, &self.url_base) {
            (Some(_), _) => None,
            (None, Some(_)) => Some("/".into()),
            (None, None) => Some("https://template.invalid/".into()),
        };
        let trial = TaskRequest {
            url,
            ..TaskRequest::default()
        };
        trial
            .under_template(self.clone())
            .new_task(None)
            .map(|_| ())
    }
}

impl TaskRequest {
    /// This request with `template` laid under it: each field it leaves out is the
    /// template's; headers are merged (the task's win); a relative `url` is appended to
    /// the template's `url_base`.
    pub fn under_template(mut self, t: TemplateRequest) -> Self {
        self.url = match (self.url, t.url, t.url_base) {
            (Some(url), _, Some(base)) if is_relative(&url) => Some(join(&base, &url)),
            (Some(url), _, _) => Some(url),
            (None, url, _) => url,
        };
        self.headers = merge_headers(t.headers, self.headers);
        self.method = self.method.or(t.method);
        self.timeout = self.timeout.or(t.timeout);
        self.expect_body = self.expect_body.or(t.expect_body);
        self.retry = self.retry.or(t.retry);
        self.flow = self.flow.or(t.flow);
        self.on_failure = self.on_failure.or(t.on_failure);
        self.notify = self.notify.or(t.notify);
        self.on_success = self.on_success.or(t.on_success);
        self
    }
}

/// The templates a registration may use: those it names, and the tenant's `default`,
/// as found (a name with no template is refused where a task names it).
#[derive(Clone, Debug, Default)]
pub struct Templates {
    found: BTreeMap<DefinitionName, Option<TemplateRequest>>,
}

impl Templates {
    /// The name a task's `template` field gives, or `default`.
    pub fn name_for(task: &TaskRequest) -> Result<DefinitionName, Refused> {
        match &task.template {
            None => Ok(DefinitionName::default_name()),
            Some(name) => DefinitionName::parse(name.as_str())
                .map_err(|e| Refused::invalid("template", e.to_string())),
        }
    }

    /// Notes what the store holds under `name` (`None`: nothing).
    pub fn insert(&mut self, name: DefinitionName, template: Option<TemplateRequest>) {
        self.found.insert(name, template);
    }

    /// `task` with its template laid under it; a task naming a template that is not
    /// there is refused (a missing `default` is no template).
    pub fn apply(&self, task: TaskRequest) -> Result<Templated, Refused> {
        let name = Self::name_for(&task)?;
        let sent_digest = task.digest();
        let task = match (self.found.get(&name).cloned().flatten(), &task.template) {
            (Some(template), _) => task.under_template(template),
            (None, None) => task,
            (None, Some(_)) => {
                return Err(Refused::invalid(
                    "template",
                    format!("no template named `{name}` (PUT /v1/templates/{name})"),
                ))
            }
        };
        Ok(Templated { task, sent_digest })
    }
}

/// A request with its template laid under it, read as a request sent alone would be,
/// but compared with an earlier one under the same idempotency key as the client sent
/// it (a changed template does not make a repeat a different request).
pub struct Templated {
    task: TaskRequest,
    sent_digest: String,
}

impl Templated {
    /// See [`TaskRequest::submission`].
    pub fn submission(self, header_key: Option<&str>) -> Result<Submission, Refused> {
        self.task.submission_as(header_key, self.sent_digest)
    }

    /// See [`TaskRequest::new_task`].
    pub fn new_task(self, header_key: Option<&str>) -> Result<NewTask, Refused> {
        self.task.new_task_as(header_key, self.sent_digest)
    }
}

/// A URL with no scheme (`/orders/42`, `orders/42?next=https://x`): the part of a URL a
/// template's base completes.
fn is_relative(url: &str) -> bool {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    !scheme.is_some_and(|s| {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// An absolute `http` or `https` URL with a host, and a port (if any) that is one: what
/// names a destination. The scheme in any case.
pub(crate) fn is_http_url(text: &str) -> bool {
    let parsed = url::Url::parse(text).ok();
    parsed.is_some_and(|url| {
        matches!(url.scheme(), "http" | "https")
            && url.host_str().is_some_and(|host| !host.is_empty())
            && !text.contains(char::is_whitespace)
    })
}

fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// The template's headers, then the task's, a task's header replacing the template's of
/// the same name in any case.
fn merge_headers(
    template: Option<BTreeMap<String, String>>,
    task: Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    let Some(mut merged) = template else {
        return task;
    };
    for (name, value) in task.unwrap_or_default() {
        merged.retain(|n, _| !n.eq_ignore_ascii_case(&name));
        merged.insert(name, value);
    }
    Some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(json: serde_json::Value) -> TemplateRequest {
        serde_json::from_value(json).unwrap()
    }

    fn task(json: serde_json::Value) -> TaskRequest {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_relative_url_joins_the_base_and_an_absolute_one_ignores_it() {
        let base = template(serde_json::json!({"url_base": "https://x.example/hooks/"}));
        let joined = task(serde_json::json!({"url": "/orders/42"})).under_template(base.clone());
        assert_eq!(
            joined.url.as_deref(),
            Some("https://x.example/hooks/orders/42")
        );
        let own =
            task(serde_json::json!({"url": "https://y.example/a"})).under_template(base.clone());
        assert_eq!(own.url.as_deref(), Some("https://y.example/a"));
        let query =
            task(serde_json::json!({"url": "/cb?next=https://z.example"})).under_template(base);
        assert_eq!(
            query.url.as_deref(),
            Some("https://x.example/hooks/cb?next=https://z.example")
        );
        let given = template(serde_json::json!({"url": "https://z.example/b"}));
        let taken = TaskRequest::default().under_template(given);
        assert_eq!(taken.url.as_deref(), Some("https://z.example/b"));
    }

    #[test]
    fn a_tasks_header_replaces_the_templates_of_the_same_name_in_any_case() {
        let t = template(serde_json::json!({"headers": {"X-Env": "prod", "X-Team": "a"}}));
        let merged = task(serde_json::json!({"headers": {"x-env": "test"}})).under_template(t);
        let headers: Vec<_> = merged.headers.unwrap().into_iter().collect();
        assert_eq!(
            headers,
            [
                ("X-Team".into(), "a".into()),
                ("x-env".into(), "test".into())
            ]
        );
    }

    #[test]
    fn a_missing_default_is_no_template_and_a_missing_name_is_refused() {
        let templates = Templates::default();
        let plain = task(serde_json::json!({"url": "https://x.example/"}));
        assert!(templates.apply(plain.clone()).is_ok());
        let named = TaskRequest {
            template: Some("nope".into()),
            ..plain
        };
        match templates.apply(named) {
            Err(Refused::Invalid(e)) => assert_eq!(e.field.to_string(), "template"),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_templates_url_is_one_a_task_could_take() {
        let field = |json: &str| match parse_template(json.as_bytes()) {
            Ok(_) => None,
            Err(Refused::Invalid(e)) => Some(e.field.to_string()),
            Err(other) => panic!("{other:?}"),
        };
        let long = format!(
            r#"{{"url": "https://a.example/{}"}}"#,
            "x".repeat(MAX_URL_LEN)
        );
        for bad in [r#"{"url": "'F"}"#, r#"{"url": "ftp://a.example"}"#, &long] {
            assert_eq!(field(bad).as_deref(), Some("url"), "{bad}");
        }
        assert_eq!(field(r#"{"url": "https://a.example/hook"}"#), None);
    }

    #[test]
    fn a_repeat_is_compared_as_sent_whatever_the_template_became() {
        let sent = task(serde_json::json!({"url": "/a", "template": "t"}));
        let mut templates = Templates::default();
        let name = DefinitionName::parse("t").unwrap();
        templates.insert(
            name.clone(),
            Some(template(
                serde_json::json!({"url_base": "https://x.example"}),
            )),
        );
        let first = templates
            .apply(sent.clone())
            .unwrap()
            .new_task(None)
            .unwrap();
        templates.insert(
            name,
            Some(template(
                serde_json::json!({"url_base": "https://y.example"}),
            )),
        );
        let again = templates
            .apply(sent.clone())
            .unwrap()
            .new_task(None)
            .unwrap();
        assert_eq!(first.request_hash, sent.digest());
        assert_eq!(first.request_hash, again.request_hash);
        assert_ne!(first.spec.request.url, again.spec.request.url);
    }
}
