//! The Lambda handlers fed the event shapes AWS sends: API Gateway HTTP API (v2) requests
//! into the API router, Scheduler input and SQS batches into the delivery handler.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use boomerang_api::request::RetryRequest;
use boomerang_api::view::StatsView;
use boomerang_api::view::{PageView, TaskView};
use boomerang_api::Problem;
use boomerang_aws::lambda::DeliveryEvent;
use boomerang_aws::AwsSettings;
use boomerang_core::clock::SystemClock;
use boomerang_core::domain::{Status, TaskId, TenantId};
use boomerang_core::ports::TaskStore;
use boomerang_e2e::aws::{fresh_moto_resources, moto_backend, sqs_event};
use boomerang_e2e::{callback, wait_for, Callback, Receiver};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tower::ServiceExt;

/// An API Gateway HTTP API (payload 2.0) event, as the API Lambda receives it.
fn http_api_event(
    method: &str,
    path: &str,
    query: &str,
    key: &str,
    body: Option<&Value>,
) -> String {
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {
            "authorization": format!("Bearer {key}"),
            "content-type": "application/json",
            "host": "abc123.execute-api.us-east-1.amazonaws.com",
            "user-agent": "curl/8.5.0"
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "curl/8.5.0"
            },
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": "$default",
            "stage": "$default",
            "time": "21/Nov/2026:10:00:00 +0000",
            "timeEpoch": 1795255200000u64
        },
        "body": body.map(|b| b.to_string()),
        "isBase64Encoded": false
    })
    .to_string()
}

/// Sends one API Gateway event through the router, as `lambda_http` does; returns the
/// status and the body.
async fn send(router: &axum::Router, event: String) -> (u16, Vec<u8>) {
    let request = lambda_http::request::from_str(&event).expect("a valid API Gateway event");
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, bytes.to_vec())
}

/// [`send`], reading the answer as the API's `T` (a view, or a problem).
async fn call<T: DeserializeOwned>(router: &axum::Router, event: String) -> (u16, T) {
    let (status, bytes) = send(router, event).await;
    let answer = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{status}: {}: {e}", String::from_utf8_lossy(&bytes)));
    (status, answer)
}

async fn register_via_api(router: &axum::Router, key: &str, url: &str) -> TaskId {
    let body = json!(callback(url).delay("1h"));
    let (status, task): (_, TaskView) = call(
        router,
        http_api_event("POST", "/v1/tasks", "", key, Some(&body)),
    )
    .await;
    assert_eq!(status, 201, "{task:?}");
    task.id
}

struct Setup {
    settings: AwsSettings,
    backend: boomerang_aws::AwsBackend,
    router: axum::Router,
}

async fn setup(what: &str) -> Setup {
    let settings = fresh_moto_resources(what).await;
    let backend = moto_backend(&settings, Arc::new(SystemClock));
    let router = boomerang_http::router(backend.engine.clone());
    Setup {
        settings,
        backend,
        router,
    }
}

impl Setup {
    /// Mints an API key for a new tenant.
    async fn key(&self, tenant: &str) -> boomerang_aws::tenants::MintedKey {
        self.backend
            .tenants
            .mint_key(&TenantId::parse(tenant).unwrap())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn api_gateway_events_reach_the_router_and_tenants_are_isolated() {
    let s = setup("apigw").await;
    let a = s.key("tenant-a").await;
    let b = s.key("tenant-b").await;
    let id = register_via_api(&s.router, &a.api_key, "https://example.com/hook").await;

    let (status, task): (_, TaskView) = call(
        &s.router,
        http_api_event("GET", &format!("/v1/tasks/{id}"), "", &a.api_key, None),
    )
    .await;
    assert_eq!((status, task.status), (200, Status::Scheduled));
    let (status, page): (_, PageView) = call(
        &s.router,
        http_api_event(
            "GET",
            "/v1/tasks",
            "status=scheduled&limit=5",
            &a.api_key,
            None,
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(page.tasks.len(), 1);

    // Tenant B sees nothing of A's, and cannot cancel it.
    let (status, _): (_, Problem) = call(
        &s.router,
        http_api_event("GET", &format!("/v1/tasks/{id}"), "", &b.api_key, None),
    )
    .await;
    assert_eq!(status, 404);
    let (_, page): (_, PageView) = call(
        &s.router,
        http_api_event("GET", "/v1/tasks", "", &b.api_key, None),
    )
    .await;
    assert!(page.tasks.is_empty());
    let (status, _): (_, Problem) = call(
        &s.router,
        http_api_event("DELETE", &format!("/v1/tasks/{id}"), "", &b.api_key, None),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _): (_, Problem) = call(
        &s.router,
        http_api_event("GET", "/v1/tasks", "", "bmr_not_a_key", None),
    )
    .await;
    assert_eq!(status, 401);

    let (status, task): (_, TaskView) = call(
        &s.router,
        http_api_event("DELETE", &format!("/v1/tasks/{id}"), "", &a.api_key, None),
    )
    .await;
    assert_eq!((status, task.status), (200, Status::Canceled));
    assert_ne!(a.secret, b.secret, "each tenant signs with its own secret");
}

#[tokio::test]
async fn bad_requests_through_api_gateway_get_problem_bodies() {
    let s = setup("apigw-bad").await;
    let a = s.key("tenant-a").await;
    let jittery = RetryRequest {
        jitter: Some(2.0),
        ..RetryRequest::default()
    };
    let body = json!(callback("https://example.com").retry(jittery));
    let (status, problem): (_, Problem) = call(
        &s.router,
        http_api_event("POST", "/v1/tasks", "", &a.api_key, Some(&body)),
    )
    .await;
    assert_eq!(
        (status, problem.field.as_deref()),
        (422, Some("retry.jitter"))
    );
}

/// The console, the OpenAPI document and the console's figures come through API Gateway
/// like the rest of the API: nothing is deployed besides the API function.
#[tokio::test]
async fn the_console_and_the_document_are_served_through_api_gateway() {
    let s = setup("apigw-console").await;
    let a = s.key("tenant-a").await;
    for (path, content_type, text) in [
        ("/console", "text/html", "<title>Boomerang console</title>"),
        ("/console/console.js", "text/javascript", "/v1/tasks"),
        ("/openapi.json", "application/json", "\"openapi\":\"3.1.0\""),
    ] {
        let request = lambda_http::request::from_str(&http_api_event("GET", path, "", "", None))
            .expect("a valid API Gateway event");
        let response = s.router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with(content_type),
            "{path}"
        );
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&body).contains(text), "{path}");
        if path.starts_with("/console") {
            let csp = headers["content-security-policy"].to_str().unwrap();
            assert!(csp.contains("connect-src 'self'"), "{csp}");
        }
    }
    // DynamoDB does not count by state, and a Lambda keeps no hour of attempts.
    let (status, stats): (_, StatsView) = call(
        &s.router,
        http_api_event("GET", "/v1/stats", "", &a.api_key, None),
    )
    .await;
    assert_eq!(status, 200, "{stats:?}");
    assert!(
        stats.counts.is_none() && stats.deliveries.is_none(),
        "{stats:?}"
    );
}

#[tokio::test]
async fn sqs_batches_report_only_transient_failures() {
    let s = setup("sqs-batch").await;
    let rx = Receiver::always(200).await;
    let a = s.key("tenant-a").await;
    let id = register_via_api(&s.router, &a.api_key, &rx.url("/batch")).await;
    // The attempt was registered an hour ahead; make it due now.
    let task = s
        .backend
        .store
        .get(&TenantId::parse("tenant-a").unwrap(), &id)
        .await
        .unwrap()
        .unwrap();
    let mut due = task.clone();
    due.version += 1;
    due.next_attempt_at = Some(chrono::Utc::now());
    s.backend.store.update(&due, task.version).await.unwrap();

    let event = sqs_event(&[
        (
            "m-ours",
            json!({"task_id": id, "attempt": 1, "tenant": "tenant-a"}).to_string(),
        ),
        (
            "m-foreign",
            r#"{"hello": "not a timer message"}"#.to_string(),
        ),
        (
            "m-unknown",
            json!({"task_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "attempt": 1, "tenant": "tenant-a"})
                .to_string(),
        ),
        ("m-garbage", "<xml/>".to_string()),
    ]);
    let DeliveryEvent::Queue(batch) = serde_json::from_value(event.clone()).unwrap() else {
        panic!("an SQS event is recognised as one");
    };
    let response = s.backend.delivery().queue(&batch, Some("req-5f1c")).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "nothing transient failed"
    );
    wait_for("the webhook call", Duration::from_secs(10), || async {
        (rx.count("/batch") == 1).then_some(())
    })
    .await;
    let (_, task): (_, TaskView) = call(
        &s.router,
        http_api_event("GET", &format!("/v1/tasks/{id}"), "", &a.api_key, None),
    )
    .await;
    assert_eq!(task.status, Status::Succeeded);
    assert_eq!(
        task.attempts.as_deref().unwrap()[0].worker.as_deref(),
        Some("req-5f1c"),
        "the invocation's request id"
    );

    // The same batch against a store that is down: our records fail (SQS will redeliver
    // them), the foreign ones are still acknowledged.
    let mut broken = s.settings.clone();
    broken.table = "no-such-table".into();
    let down = moto_backend(&broken, Arc::new(SystemClock));
    let batch: SqsEvent = serde_json::from_value(event).unwrap();
    let response = down.delivery().queue(&batch.into(), None).await;
    let mut failed: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    failed.sort();
    assert_eq!(failed, vec!["m-ours".to_string(), "m-unknown".to_string()]);
    let wire = serde_json::to_value(&response).unwrap();
    assert_eq!(
        wire.pointer("/batchItemFailures/0/itemIdentifier"),
        Some(&json!(failed[0])),
        "the field names AWS reads"
    );
}

#[tokio::test]
async fn scheduler_input_is_delivered_and_malformed_input_is_acknowledged() {
    let s = setup("sched-input").await;
    let input =
        json!({"task_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "attempt": 2, "tenant": "tenant-a"});
    let event = |value: Value| serde_json::from_value::<DeliveryEvent>(value).unwrap();
    assert!(matches!(event(input.clone()), DeliveryEvent::Scheduled(_)));
    s.backend
        .delivery()
        .handle(event(input.clone()), None)
        .await
        .expect("unknown task: acknowledged");
    for foreign in [json!({"unexpected": true}), json!("just a string")] {
        assert!(matches!(event(foreign.clone()), DeliveryEvent::Foreign(_)));
        s.backend
            .delivery()
            .handle(event(foreign), None)
            .await
            .expect("not ours: acknowledged");
    }

    let mut broken = s.settings.clone();
    broken.table = "no-such-table".into();
    let down = moto_backend(&broken, Arc::new(SystemClock));
    assert!(
        down.delivery().handle(event(input), None).await.is_err(),
        "transient: the invocation fails"
    );
}
