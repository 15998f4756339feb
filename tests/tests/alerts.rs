//! End-to-end: failure alerts from the real `boomerang serve` to real receivers on
//! loopback, on the embedded backend and on the AWS backend against the emulators.

use std::time::Duration;

use boomerang_e2e::{
    header, id_of, on_both_backends, status_codes, wait_for, Backend, Received, Receiver, Reply,
    Server, ServerOptions,
};
use boomerang_webhook::signing;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(40);

on_both_backends!(
    a_failed_task_raises_an_alert_that_fails_twice_then_arrives_signed,
    a_task_that_names_no_destination_alerts_the_default_for_every_failed_attempt,
);

/// Alerts retry fast: the tenant's `default` policy is theirs too.
async fn fast_default_policy(server: &Server) {
    let res = server
        .request(reqwest::Method::PUT, "/v1/policies/default")
        .json(&json!({"schedule": ["1s"], "max_attempts": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

fn verified(server: &Server, r: &Received) -> bool {
    signing::verify(
        &server.secret,
        &header(r, "webhook-id"),
        &header(r, "webhook-timestamp"),
        &header(r, "webhook-signature"),
        &r.body,
        chrono::Utc::now().timestamp(),
    )
    .is_ok()
}

fn json_of(r: &Received) -> Value {
    serde_json::from_slice(&r.body).expect("an alert is JSON")
}

/// Waits until the task lists `n` alerts; returns the task.
async fn with_alerts(server: &Server, id: &str, n: usize) -> Value {
    wait_for("the alerts to be linked", WAIT, || async {
        let task = server.task(id).await;
        let linked = task["alerts"].as_array().map_or(0, Vec::len);
        (linked == n).then_some(task)
    })
    .await
}

async fn a_failed_task_raises_an_alert_that_fails_twice_then_arrives_signed(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    fast_default_policy(&server).await;
    // The task's endpoint is down; the alert endpoint fails twice, then takes it.
    let rx = Receiver::start(|path, n| match path {
        "/alert" if n >= 2 => Reply::status(200),
        _ => Reply::status(500),
    })
    .await;
    let (status, task) = server
        .register(json!({
            "url": rx.url("/task"), "key": "order-7", "metadata": {"customer": "c-9"},
            "retry": {"max_attempts": 1},
            "on_failure": {"url": rx.url("/alert"), "headers": {"X-Alert-Token": "t0k"}}
        }))
        .await;
    assert_eq!(status, 201, "{task}");
    assert_eq!(task["on_failure"]["url"], rx.url("/alert"));
    assert_eq!(task["on_failure"]["header_names"], json!(["X-Alert-Token"]));
    assert_eq!(task["notify"], "final");
    let id = id_of(&task);
    server.wait_status(&id, "failed", WAIT).await;
    let failed = with_alerts(&server, &id, 1).await;
    let alert_id = failed["alerts"][0].as_str().unwrap().to_string();

    let alert = server.wait_status(&alert_id, "succeeded", WAIT).await;
    assert_eq!(alert["alert_of"], id, "linked both ways");
    assert!(alert.get("alerts").is_none());
    let codes = status_codes(&alert);
    assert_eq!(codes, vec![json!(500), json!(500), json!(200)]);

    let calls: Vec<Received> = rx
        .received()
        .into_iter()
        .filter(|r| r.path == "/alert")
        .collect();
    assert_eq!(calls.len(), 3);
    let last = &calls[2];
    assert!(verified(&server, last), "signed like every call");
    assert_eq!(header(last, "webhook-id"), alert_id);
    assert_eq!(header(last, "x-alert-token"), "t0k");
    assert_eq!(header(last, "content-type"), "application/json");
    let body = json_of(last);
    assert_eq!(body["type"], "task.failed");
    assert_eq!(body["task_id"], id);
    assert_eq!(body["key"], "order-7");
    assert_eq!(body["metadata"]["customer"], "c-9");
    assert_eq!(body["url"], rx.url("/task"));
    assert_eq!(body["attempt"], 1);
    assert_eq!(body["last_error"], "HTTP 500");
    assert_eq!(body["attempts"][0]["status_code"], 500);
    assert_eq!(body["attempts"][0]["outcome"], "failed");

    // The alert's troubles never touched its task, and nothing alerted about the alert.
    let task_now = server.task(&id).await;
    assert_eq!(task_now["status"], "failed");
    assert_eq!(task_now["alerts"], json!([alert_id]));
    assert_eq!(rx.count("/task"), 1);
}

async fn a_task_that_names_no_destination_alerts_the_default_for_every_failed_attempt(
    backend: Backend,
) {
    let rx = Receiver::always(200).await;
    let failing = Receiver::always(503).await;
    let mut options = ServerOptions::on(backend);
    options.alert_url = Some(rx.url("/server"));
    let server = Server::start(options);
    // On AWS the tenant's own default comes first; the embedded server has one tenant.
    let expected = match backend {
        Backend::Embedded => "/server",
        _ => {
            server.set_tenant_alert(&rx.url("/tenant"));
            "/tenant"
        }
    };
    let (status, task) = server
        .register(json!({
            "url": failing.url("/task"), "notify": "every",
            "retry": {"schedule": ["1s"], "max_attempts": 2}
        }))
        .await;
    assert_eq!(status, 201, "{task}");
    assert_eq!(task["notify"], "every");
    let id = id_of(&task);
    server.wait_status(&id, "failed", WAIT).await;
    with_alerts(&server, &id, 2).await;
    let calls = wait_for("both alerts to arrive", WAIT, || async {
        let got = rx.received();
        (got.len() == 2).then_some(got)
    })
    .await;
    let mut kinds: Vec<(String, Value)> = calls
        .iter()
        .map(|r| {
            assert_eq!(r.path, expected);
            assert!(verified(&server, r));
            let body = json_of(r);
            (body["type"].as_str().unwrap().to_string(), body)
        })
        .collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    let (failed, retrying) = (&kinds[0], &kinds[1]);
    assert_eq!(failed.0, "task.failed");
    assert_eq!(failed.1["attempt"], 2);
    assert_eq!(retrying.0, "task.retrying");
    assert_eq!(retrying.1["attempt"], 1);
    assert!(retrying.1["next_attempt_at"].is_string());
    if backend != Backend::Embedded {
        assert_eq!(header(&calls[0], "x-oncall"), "t1", "the tenant's header");
    }
}
