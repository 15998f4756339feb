//! End-to-end: trace context across the delay, on both backends. A task registered with a
//! W3C `traceparent` (and `tracestate`) reaches its receiver in the caller's trace, each
//! attempt naming its own span as the parent; the server exports (over OTLP/HTTP, to a
//! collector in the test) a registration span under the caller's span and one span per
//! attempt under the registration's, with the attempt's status. A malformed `traceparent`
//! is ignored and never fails a registration; without a collector configured nothing is
//! exported.

use std::collections::BTreeSet;
use std::time::Duration;

use boomerang_e2e::otlp::{collected_spans, CollectedSpan};
use boomerang_e2e::{
    callback, header, on_every_backend, schedule, wait_for, Backend, Callback, Received, Receiver,
    Reply, Server, ServerOptions,
};
use reqwest::Method;

on_every_backend!(
    a_traced_task_carries_the_callers_trace_to_each_attempt_and_its_spans_are_exported
);

const WAIT: Duration = Duration::from_secs(60);
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// Registers a task calling `url` (failing once, retried after a second) with the given
/// trace headers; answers its id.
async fn register(server: &Server, url: String, trace: &[(&str, &str)]) -> String {
    let task = callback(url).retry(schedule(&["1s"]));
    let mut request = server.request(Method::POST, "/v1/tasks").json(&task);
    for (name, value) in trace {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(
        response.status(),
        201,
        "registered whatever its trace headers"
    );
    let body: serde_json::Value = response.json().await.unwrap();
    body["id"].as_str().unwrap().to_string()
}

/// The `traceparent` a call carried, as (trace id, parent span id).
fn parent_of(call: &Received) -> (String, String) {
    let value = header(call, "traceparent");
    let parts: Vec<&str> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "a version-00 traceparent: {value:?}");
    assert_eq!(parts[0], "00");
    assert_eq!(parts[3], "01", "sampled, as the caller's");
    (parts[1].to_string(), parts[2].to_string())
}

async fn a_traced_task_carries_the_callers_trace_to_each_attempt_and_its_spans_are_exported(
    backend: Backend,
) {
    let collector = Receiver::always(200).await;
    // Each path fails its first call, then succeeds.
    let rx = Receiver::start(|_, before| Reply::status(if before == 0 { 500 } else { 200 })).await;
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url("")),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_string()),
        ("OTEL_SERVICE_NAME", "boomerang-e2e".to_string()),
    ];
    let server = Server::start(ServerOptions {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        ..ServerOptions::on(backend)
    });
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let traced = register(
        &server,
        rx.url("/traced"),
        &[("traceparent", &traceparent), ("tracestate", "vendor=abc")],
    )
    .await;
    // Malformed: ignored, as if none was sent.
    let bad = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
    register(&server, rx.url("/untraced"), &[("traceparent", bad)]).await;

    let calls = wait_for("two calls of each task", WAIT, || async {
        let calls = rx.received();
        let n = |path: &str| calls.iter().filter(|c| c.path == path).count();
        (n("/traced") >= 2 && n("/untraced") >= 2).then_some(calls)
    })
    .await;
    let traced_calls: Vec<&Received> = calls.iter().filter(|c| c.path == "/traced").collect();
    let parents: Vec<(String, String)> = traced_calls.iter().map(|c| parent_of(c)).collect();
    for (trace, parent) in &parents {
        assert_eq!(trace, TRACE_ID, "the caller's trace");
        assert_ne!(
            parent, CALLER_SPAN,
            "the attempt's own span, not the caller's"
        );
    }
    assert_ne!(parents[0].1, parents[1].1, "a span per attempt");
    for call in &traced_calls {
        assert_eq!(header(call, "tracestate"), "vendor=abc");
    }
    for call in calls.iter().filter(|c| c.path == "/untraced") {
        assert_eq!(header(call, "traceparent"), "", "no trace: no traceparent");
    }

    // The registration's span, under the caller's; the attempts', under it.
    let spans = wait_for("the task's three spans", WAIT, || async {
        let spans: Vec<CollectedSpan> = (collected_spans(&collector).into_iter())
            .filter(|s| s.trace_id == TRACE_ID)
            .collect();
        (spans.len() >= 3).then_some(spans)
    })
    .await;
    assert_eq!(spans.len(), 3, "{spans:#?}");
    let registration = spans
        .iter()
        .find(|s| s.name == "boomerang register")
        .unwrap();
    assert_eq!(registration.parent_span_id, CALLER_SPAN);
    assert_eq!(
        registration.attribute("boomerang.task.id"),
        Some(traced.as_str())
    );
    assert_eq!(registration.service, "boomerang-e2e");
    let attempts: Vec<&CollectedSpan> = (spans.iter())
        .filter(|s| s.name == "boomerang attempt")
        .collect();
    assert_eq!(attempts.len(), 2);
    let exported: BTreeSet<&str> = attempts.iter().map(|s| s.span_id.as_str()).collect();
    let sent: BTreeSet<&str> = parents.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(
        exported, sent,
        "the receiver's parent is the attempt's span"
    );
    for attempt in &attempts {
        assert_eq!(attempt.parent_span_id, registration.span_id);
        assert!(attempt.attribute("boomerang.lateness_ms").is_some());
    }
    let by_number = |n: &str| {
        (attempts.iter())
            .find(|s| s.attribute("boomerang.attempt") == Some(n))
            .unwrap()
    };
    let first = by_number("1");
    assert_eq!(first.attribute("http.response.status_code"), Some("500"));
    assert_eq!(first.status.0, 2, "an error: {first:?}");
    let second = by_number("2");
    assert_eq!(second.attribute("http.response.status_code"), Some("200"));
    assert_eq!(second.attribute("boomerang.outcome"), Some("succeeded"));
    // The untraced task made no span at all.
    let all = collected_spans(&collector);
    assert!(all.iter().all(|s| s.trace_id == TRACE_ID), "{all:#?}");
}

/// A server with no collector configured exports nothing, and still passes the trace on.
#[tokio::test]
async fn without_a_collector_nothing_is_exported_and_the_trace_still_reaches_the_receiver() {
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions::on(Backend::Embedded));
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    register(&server, rx.url("/t"), &[("traceparent", &traceparent)]).await;
    let call = wait_for("the call", WAIT, || async {
        rx.received().into_iter().next()
    })
    .await;
    assert_eq!(parent_of(&call).0, TRACE_ID);
    assert_eq!(header(&call, "tracestate"), "");
}
