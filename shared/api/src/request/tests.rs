use std::time::Duration;

use super::*;
use crate::problem::Problem;
use boomerang_core::engine::FireTime;

fn field_of(json: &str) -> Option<String> {
    match parse(json.as_bytes()).and_then(|r| r.new_task(None)) {
        Ok(_) => None,
        Err(refused) => {
            let p = Problem::from(refused);
            Some(p.field.unwrap_or_else(|| format!("<{}>", p.status)))
        }
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
        (r#"{"url":"https://x.io","headers":{"":"x"}}"#, "headers"),
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
        .new_task(Some("key-1"))
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
            .new_task(None)
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
    let problem = Problem::from(
        parse_policy(br#"{"backoff":"fixed","interval":"99999999999999999999d"}"#).unwrap_err(),
    );
    assert_eq!(problem.field.as_deref(), Some("interval"));
    assert!(
        problem.detail.starts_with("interval: "),
        "{}",
        problem.detail
    );
    // A detail quotes the client's text whole, whatever it holds.
    let quoted = Problem::from(parse_policy(br#"{"schedule":["1 at line 2"]}"#).unwrap_err());
    assert_eq!(
        quoted.detail,
        "schedule[0]: `1 at line 2` is not a duration; use a positive value like `30s`, `5m` or `1h`"
    );
    let policy = parse_policy(br#"{"schedule":["1s","5s"]}"#).unwrap();
    assert_eq!((policy.retry.max_attempts(), policy.flow), (Some(3), None));
    let field = |body: &str| Problem::from(parse_policy(body.as_bytes()).unwrap_err()).field;
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
    let a = parse(br#"{"url":"https://x.io","idempotency_key":"a","body":{"x":1,"y":2}}"#).unwrap();
    let b = parse(br#"{"body":{"y":2,"x":1},"url":"https://x.io"}"#).unwrap();
    let c = parse(br#"{"url":"https://x.io","body":{"x":1,"y":3}}"#).unwrap();
    assert_eq!(a.digest(), b.digest());
    assert_ne!(a.digest(), c.digest());
}

/// Tasks stored before the request types were typed keep their digests: a repeat of their
/// registration under the same idempotency key is still the same request.
#[test]
fn the_digest_is_the_one_stored_tasks_were_registered_with() {
    use sha2::{Digest, Sha256};
    let json = r#"{"url":"https://x.io/h","method":"put","headers":{"X-A":"1"},
        "body":{"k":[1,2]},"delay":" 90s","timeout":"5s","expect_body":"ok",
        "retry":{"backoff":"exponential","interval":"10s","max_attempts":null,
                 "max_duration":"2d","permanent_statuses":[404]},
        "metadata":{"order":"42"},"key":"o-42","idempotency_key":"k",
        "on_failure":{"url":"https://a.io"},"notify":"every",
        "hold":{"timeout":"5m","on_unknown":"release"},
        "flow":{"key":"f","rate":5,"period":"1s"}}"#;
    let raw: serde_json::Value = serde_json::from_str(json).unwrap();
    let field = |name: &str| raw.get(name).cloned().unwrap_or(serde_json::Value::Null);
    let before = serde_json::json!({
        "url": field("url"), "method": field("method"), "headers": field("headers"),
        "body": field("body"), "delay": field("delay"), "fire_at": field("fire_at"),
        "retry": field("retry"), "timeout": field("timeout"),
        "expect_body": field("expect_body"), "metadata": field("metadata"),
        "key": field("key"), "on_failure": field("on_failure"), "notify": field("notify"),
        "hold": field("hold"), "flow": field("flow"),
    });
    let mut before = before;
    // Absent fields of the parts were written as null then, as now.
    before["on_failure"]["headers"] = serde_json::Value::Null;
    before["hold"]["check_url"] = serde_json::Value::Null;
    before["hold"]["max_checks"] = serde_json::Value::Null;
    before["flow"]["parallelism"] = serde_json::Value::Null;
    for absent in ["schedule", "max_interval", "jitter"] {
        before["retry"][absent] = serde_json::Value::Null;
    }
    let expected = format!("{:x}", Sha256::digest(serde_json::to_vec(&before).unwrap()));
    assert_eq!(parse(json.as_bytes()).unwrap().digest(), expected);
    // The same digest, as the registrations stored before wrote it.
    assert_eq!(
        expected,
        "5fe26fa42210cbc6a5139f5fe3181e6c9172c730ac75e75df26fc89b25ecb42b"
    );
}

#[test]
fn a_replacement_keeps_the_rules_of_a_replacement() {
    use boomerang_core::engine::Submission;
    let field = |json: &str, header: Option<&str>| {
        let refused = parse(json.as_bytes())
            .and_then(|r| r.submission(header))
            .unwrap_err();
        Problem::from(refused).field.unwrap()
    };
    let replace = r#""url":"https://x.io","on_key":"replace""#;
    assert_eq!(field(&format!("{{{replace}}}"), None), "key");
    let keyed = format!(r#"{replace},"key":"k""#);
    assert_eq!(
        field(&format!("{{{keyed}}}"), Some("i-1")),
        "idempotency_key"
    );
    assert_eq!(
        field(&format!(r#"{{{keyed},"idempotency_key":"i-1"}}"#), None),
        "idempotency_key"
    );
    assert_eq!(
        field(&format!(r#"{{{keyed},"hold":{{"timeout":"5m"}}}}"#), None),
        "hold"
    );
    assert_eq!(
        field(&format!(r#"{{{keyed},"max_delay":"0s"}}"#), None),
        "max_delay"
    );
    assert_eq!(
        field(&format!(r#"{{{keyed},"max_delay":"366days"}}"#), None),
        "max_delay"
    );
    assert_eq!(
        field(r#"{"url":"https://x.io","max_delay":"1m"}"#, None),
        "max_delay"
    );
    let ok = parse(format!(r#"{{{keyed},"max_delay":"2m"}}"#).as_bytes())
        .unwrap()
        .submission(None)
        .unwrap();
    assert!(matches!(
        ok,
        Submission::Replace(r) if r.max_delay() == Some(Duration::from_secs(120))
    ));
    let plain = parse(br#"{"url":"https://x.io"}"#)
        .unwrap()
        .submission(None);
    assert!(matches!(plain, Ok(Submission::Add(_))));
}

#[test]
fn a_body_that_is_not_an_object_is_refused_whatever_it_would_fill() {
    for body in [
        "[null, null]",
        "  [\"https://x.io\"]",
        "42",
        "\"x\"",
        "null",
    ] {
        let refused = parse_template(body.as_bytes()).map(|_| ()).unwrap_err();
        let problem = Problem::from(refused);
        assert_eq!(
            (problem.status, problem.field.as_deref()),
            (422, Some("body")),
            "{body}"
        );
    }
    assert_eq!(field_of("[1"), Some("<400>".into()), "not JSON at all");
    assert_eq!(field_of("[null]"), Some("body".into()));
}

#[test]
fn a_bulk_filter_and_its_intervals_are_objects_and_refusals_keep_their_path() {
    let field_of =
        |json: &str| match parse_json::<BulkRequest>(json.as_bytes()).and_then(|r| r.order()) {
            Ok(_) => None,
            Err(refused) => Problem::from(refused).field,
        };
    let cases = [
        (
            r#"{"action":"retry","filter":{"registered":[null,null]}}"#,
            "filter.registered",
        ),
        (r#"{"action":"retry","filter":[null,null,null]}"#, "filter"),
        (
            r#"{"action":"retry","filter":{"registered":{"after":"yesterday"}}}"#,
            "filter.registered.after",
        ),
        (
            r#"{"action":"retry","filter":{"ended":{"bogus":1}}}"#,
            "filter.ended.bogus",
        ),
    ];
    for (json, field) in cases {
        assert_eq!(field_of(json).as_deref(), Some(field), "{json}");
    }
    let fine = r#"{"action":"retry","filter":{"registered":null,"ended":{"after":"2030-01-01T00:00:00Z"}}}"#;
    assert_eq!(field_of(fine), None);
    // A destination is a URL with a scheme, host and port that are ones.
    for bad in [
        "ftp://a.com",
        "://",
        "http://[::1",
        "http://a:99999",
        "hooks.example.com",
    ] {
        let json = format!(r#"{{"action":"retry","filter":{{"destination":"{bad}"}}}}"#);
        assert_eq!(
            field_of(&json).as_deref(),
            Some("filter.destination"),
            "{bad}"
        );
    }
    for good in [
        "https://a.com",
        "http://a.com:8080/with/path?q=1",
        "http://[::1]:9000",
    ] {
        let json = format!(r#"{{"action":"retry","filter":{{"destination":"{good}"}}}}"#);
        assert_eq!(field_of(&json), None, "{good}");
    }
}
