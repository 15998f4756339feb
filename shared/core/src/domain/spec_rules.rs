//! The rules of what a caller may ask for: a task's request, its headers, timeout,
//! metadata and alert destination. [`TaskSpec::new`] and [`AlertTarget::new`] apply them,
//! refusing with an [`Invalid`] that names the field.

use std::collections::BTreeMap;
use std::time::Duration;

use super::alert::{AlertTarget, Notify};
use super::flow::FlowSpec;
use super::hold::HoldSpec;
use super::ids::BusinessKey;
use super::invalid::{within, FieldPath, Invalid};
use super::limits::{
    DEFAULT_TIMEOUT, MAX_EXPECT_BODY, MAX_HEADERS, MAX_METADATA_ENTRIES, MAX_METADATA_KEY,
    MAX_METADATA_VALUE, MAX_TIMEOUT, METHODS, MIN_TIMEOUT, RESERVED_KEY_PREFIX,
};
use super::order::OrderSpec;
use super::retry_policy::RetryPolicy;
use super::task::{CallbackRequest, TaskSpec};

/// A task as a caller describes it, before the rules are checked ([`TaskSpec::new`]).
#[derive(Clone, Debug, Default)]
pub struct SpecDraft {
    pub url: String,
    /// `POST` when not given; any case.
    pub method: Option<String>,
    /// In the order given.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The content type the body implies, sent unless a header names one.
    pub content_type: Option<&'static str>,
    /// [`DEFAULT_TIMEOUT`] when not given.
    pub timeout: Option<Duration>,
    pub expect_body: Option<String>,
    pub retry: RetryPolicy,
    pub metadata: BTreeMap<String, String>,
    pub key: Option<BusinessKey>,
    pub on_failure: Option<AlertTarget>,
    pub notify: Notify,
    pub on_success: Option<AlertTarget>,
    pub hold: Option<HoldSpec>,
    pub flow: Option<FlowSpec>,
    /// The key it is delivered in order with (its place is given when it is stored).
    pub order: Option<OrderSpec>,
}

impl TaskSpec {
    /// The task a caller asked for, if every rule holds; the refusal names the field
    /// (`url`, `method`, `headers.<name>`, `timeout`, `expect_body`, `metadata.<key>`).
    /// The retry policy, the hold and the alert destination are valid by construction.
    pub fn new(draft: SpecDraft) -> Result<Self, Invalid> {
        if draft.url.trim().is_empty() {
            return Err(Invalid::new("url", "is required"));
        }
        let method = draft
            .method
            .unwrap_or_else(|| "POST".into())
            .to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(Invalid::new(
                "method",
                format!("must be one of {}", METHODS.join(", ")),
            ));
        }
        check_headers(&draft.headers).map_err(|e| e.under("headers"))?;
        let mut headers = draft.headers;
        let has_type = headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
        if let (false, Some(t)) = (has_type, draft.content_type) {
            headers.push(("content-type".into(), t.into()));
        }
        let timeout = within(
            "timeout",
            draft.timeout.unwrap_or(DEFAULT_TIMEOUT),
            MIN_TIMEOUT,
            MAX_TIMEOUT,
        )?;
        if draft
            .expect_body
            .as_ref()
            .is_some_and(|b| b.len() > MAX_EXPECT_BODY)
        {
            return Err(Invalid::new(
                "expect_body",
                format!("must be at most {MAX_EXPECT_BODY} bytes"),
            ));
        }
        check_metadata(&draft.metadata)?;
        Ok(TaskSpec {
            request: CallbackRequest {
                url: draft.url,
                method,
                headers,
                body: draft.body,
            },
            timeout,
            expect_body: draft.expect_body,
            retry: draft.retry,
            metadata: draft.metadata,
            key: draft.key,
            on_failure: draft.on_failure,
            notify: draft.notify,
            on_success: draft.on_success,
            alert_of: None,
            hold: draft.hold,
            flow: draft.flow,
            occurrence: None,
            order: draft.order,
            trace: None,
        })
    }
}

impl AlertTarget {
    /// An alert destination a caller gives, if its URL is there and its headers are
    /// allowed (`url`, `headers.<name>`).
    pub fn new(url: String, headers: Vec<(String, String)>) -> Result<Self, Invalid> {
        if url.trim().is_empty() {
            return Err(Invalid::new("url", "is required"));
        }
        check_headers(&headers).map_err(|e| e.under("headers"))?;
        Ok(Self { url, headers })
    }
}

/// Headers a caller may give a call: at most [`MAX_HEADERS`], none that Boomerang sets
/// itself, names and values as HTTP allows them. The refusal names the header (or nothing,
/// for too many).
fn check_headers(headers: &[(String, String)]) -> Result<(), Invalid> {
    if headers.len() > MAX_HEADERS {
        return Err(Invalid::new(
            FieldPath::root(),
            format!("at most {MAX_HEADERS} headers are allowed"),
        ));
    }
    for (name, value) in headers {
        // A header's name is one name, whatever it holds; an empty one is the headers'.
        let field = || match name.is_empty() {
            true => FieldPath::root(),
            false => FieldPath::root().name(name.as_str()),
        };
        if is_reserved_header(name) {
            return Err(Invalid::new(
                field(),
                "is set by Boomerang and cannot be given",
            ));
        }
        if !is_token(name) {
            return Err(Invalid::new(field(), "is not a valid header name"));
        }
        if !is_field_value(value) {
            return Err(Invalid::new(field(), "is not a valid header value"));
        }
    }
    Ok(())
}

/// Headers that Boomerang sets, or that the HTTP client derives from the request.
fn is_reserved_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "host" | "content-length" | "transfer-encoding" | "connection" | "upgrade" | "te"
    ) || n.starts_with("webhook-")
        || n.starts_with(RESERVED_KEY_PREFIX)
}

/// An HTTP token (RFC 9110 §5.6.2) of at most 64 KiB: a header name the HTTP client
/// accepts.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 1 << 16
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A header value a request may carry: no control character but the tab (so no line
/// break), which is what the HTTP client accepts.
fn is_field_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

pub(super) fn check_metadata(metadata: &BTreeMap<String, String>) -> Result<(), Invalid> {
    if metadata.len() > MAX_METADATA_ENTRIES {
        return Err(Invalid::new(
            "metadata",
            format!("at most {MAX_METADATA_ENTRIES} entries are allowed"),
        ));
    }
    // A key is one name, whatever it holds (`.`, `[`, or nothing at all).
    let field = |k: &str| FieldPath::from("metadata").name(k);
    for (k, v) in metadata {
        if k.is_empty() || k.len() > MAX_METADATA_KEY {
            return Err(Invalid::new(
                field(k),
                format!("keys must be 1 to {MAX_METADATA_KEY} bytes"),
            ));
        }
        if v.len() > MAX_METADATA_VALUE {
            return Err(Invalid::new(
                field(k),
                format!("values must be at most {MAX_METADATA_VALUE} bytes"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> SpecDraft {
        SpecDraft {
            url: "https://example.com/hook".into(),
            ..SpecDraft::default()
        }
    }

    #[test]
    fn every_rule_names_its_field() {
        let refused = |change: &dyn Fn(&mut SpecDraft)| {
            let mut d = draft();
            change(&mut d);
            TaskSpec::new(d).unwrap_err().field
        };
        let header = |name: &str, value: &str| vec![(name.to_string(), value.to_string())];
        assert_eq!(refused(&|d| d.url = " ".into()), "url");
        assert_eq!(refused(&|d| d.method = Some("TRACE".into())), "method");
        assert_eq!(
            refused(&|d| d.headers = header("Webhook-Id", "x")),
            "headers.Webhook-Id"
        );
        assert_eq!(refused(&|d| d.headers = header("a b", "x")), "headers.a b");
        assert_eq!(
            refused(&|d| d.headers = header("x-a", "1\r\n2")),
            "headers.x-a"
        );
        assert_eq!(
            refused(&|d| d.headers = (0..=MAX_HEADERS)
                .map(|i| (format!("x-{i}"), "v".into()))
                .collect()),
            "headers"
        );
        assert_eq!(refused(&|d| d.timeout = Some(Duration::ZERO)), "timeout");
        assert_eq!(
            refused(&|d| d.expect_body = Some("x".repeat(MAX_EXPECT_BODY + 1))),
            "expect_body"
        );
        assert_eq!(
            refused(&|d| d.metadata = [(String::new(), "v".to_string())].into()),
            "metadata."
        );
        let target = AlertTarget::new("https://ops.example.com".into(), header("Host", "x"));
        assert_eq!(
            target.unwrap_err().under("on_failure").field,
            "on_failure.headers.Host"
        );
    }

    #[test]
    fn a_valid_draft_gets_its_defaults() {
        let spec = TaskSpec::new(SpecDraft {
            method: Some("put".into()),
            content_type: Some("application/json"),
            ..draft()
        })
        .unwrap();
        assert_eq!(spec.request.method, "PUT");
        assert_eq!(spec.timeout, DEFAULT_TIMEOUT);
        assert_eq!(
            spec.request.headers,
            vec![("content-type".to_string(), "application/json".to_string())]
        );
    }
}
