//! End-to-end: failure alerts from the real `boomerang serve` to real receivers on
//! loopback, on the embedded backend and on the AWS backend against the emulators.

use std::time::Duration;

use boomerang_api::request::{AlertRequest, RetryRequest};
use boomerang_api::view::TaskView;
use boomerang_core::domain::notice::AlertBody;
use boomerang_core::domain::{AttemptOutcome, Notify, Status, TaskId};
use boomerang_e2e::{
    callback, header, on_every_backend, schedule_max, status_codes, wait_for, Backend, Callback,
    Received, Receiver, Reply, Server, ServerOptions,
};

const WAIT: Duration = Duration::from_secs(40);

on_every_backend!(
    a_failed_task_raises_an_alert_that_fails_twice_then_arrives_signed,
    a_task_that_names_no_destination_alerts_the_default_for_every_failed_attempt,
    a_success_is_reported_to_on_success_and_notify_never_reports_no_failure,
);

/// Alerts retry fast: the tenant's `default` policy is theirs too.
async fn fast_default_policy(server: &Server) {
    let view = server
        .api()
        .put_policy("default", &schedule_max(&["1s"], 3).into())
        .await
        .unwrap();
    assert_eq!(view.name, "default");
}

fn alert_of(r: &Received) -> AlertBody {
    serde_json::from_slice(&r.body).expect("an alert is JSON")
}

/// Waits until the task lists `n` alerts; returns the task.
async fn with_alerts(server: &Server, id: &TaskId, n: usize) -> TaskView {
    wait_for("the alerts to be linked", WAIT, || async {
        let task = server.task(id).await;
        (task.alerts.len() == n).then_some(task)
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
    let once = RetryRequest {
        max_attempts: Some(Some(1)),
        ..RetryRequest::default()
    };
    let mut request = callback(rx.url("/task"))
        .key("order-7")
        .metadata("customer", "c-9")
        .retry(once);
    request.on_failure = Some(AlertRequest {
        url: Some(rx.url("/alert")),
        headers: Some([("X-Alert-Token".to_string(), "t0k".to_string())].into()),
    });
    let task = server.register(&request).await;
    let on_failure = task.on_failure.as_ref().unwrap();
    assert_eq!(on_failure.url, rx.url("/alert"));
    assert_eq!(on_failure.header_names, ["X-Alert-Token"]);
    assert_eq!(task.notify, Notify::Final);
    let id = task.id;
    server.wait_status(&id, Status::Failed, WAIT).await;
    let failed = with_alerts(&server, &id, 1).await;
    let alert_id = failed.alerts[0];

    let alert = server.wait_status(&alert_id, Status::Succeeded, WAIT).await;
    assert_eq!(alert.alert_of, Some(id), "linked both ways");
    assert!(alert.alerts.is_empty());
    assert_eq!(status_codes(&alert), vec![Some(500), Some(500), Some(200)]);

    let calls: Vec<Received> = rx
        .received()
        .into_iter()
        .filter(|r| r.path == "/alert")
        .collect();
    assert_eq!(calls.len(), 3);
    let last = &calls[2];
    assert!(server.signed(last), "signed like every call");
    assert_eq!(header(last, "webhook-id"), alert_id.to_string());
    assert_eq!(header(last, "x-alert-token"), "t0k");
    assert_eq!(header(last, "content-type"), "application/json");
    let body = alert_of(last);
    assert_eq!(body.kind, "task.failed");
    assert_eq!(body.task_id, id);
    assert_eq!(body.key.as_deref(), Some("order-7"));
    assert_eq!(
        body.metadata.get("customer").map(String::as_str),
        Some("c-9")
    );
    assert_eq!(body.url, rx.url("/task"));
    assert_eq!(body.attempt, 1);
    assert_eq!(body.last_error.as_deref(), Some("HTTP 500"));
    assert_eq!(body.attempts[0].status_code, Some(500));
    assert_eq!(body.attempts[0].outcome, AttemptOutcome::Failed);

    // The alert's troubles never touched its task, and nothing alerted about the alert.
    let task_now = server.task(&id).await;
    assert_eq!(task_now.status, Status::Failed);
    assert_eq!(task_now.alerts, vec![alert_id]);
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
    // On AWS the tenant's own default comes first; the embedded and PostgreSQL servers
    // have one tenant, configured by flags.
    let expected = match backend {
        Backend::Embedded | Backend::Postgres => "/server",
        _ => {
            server.set_tenant_alert(&rx.url("/tenant"));
            "/tenant"
        }
    };
    let task = server
        .register(
            &callback(failing.url("/task"))
                .notify("every")
                .retry(schedule_max(&["1s"], 2)),
        )
        .await;
    assert_eq!(task.notify, Notify::Every);
    let id = task.id;
    server.wait_status(&id, Status::Failed, WAIT).await;
    with_alerts(&server, &id, 2).await;
    let calls = wait_for("both alerts to arrive", WAIT, || async {
        let got = rx.received();
        (got.len() == 2).then_some(got)
    })
    .await;
    let mut kinds: Vec<AlertBody> = calls
        .iter()
        .map(|r| {
            assert_eq!(r.path, expected);
            assert!(server.signed(r));
            alert_of(r)
        })
        .collect();
    kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
    let (failed, retrying) = (&kinds[0], &kinds[1]);
    assert_eq!(failed.kind, "task.failed");
    assert_eq!(failed.attempt, 2);
    assert_eq!(retrying.kind, "task.retrying");
    assert_eq!(retrying.attempt, 1);
    assert!(retrying.next_attempt_at.is_some());
    if backend == Backend::Aws {
        assert_eq!(header(&calls[0], "x-oncall"), "t1", "the tenant's header");
    }
}

async fn a_success_is_reported_to_on_success_and_notify_never_reports_no_failure(backend: Backend) {
    let rx = Receiver::start(|path, _| match path {
        "/down" => Reply::status(500),
        _ => Reply::status(200),
    })
    .await;
    let mut options = ServerOptions::on(backend);
    options.alert_url = Some(rx.url("/server"));
    let server = Server::start(options);

    let mut request = callback(rx.url("/task")).key("order-8");
    request.on_success = Some(AlertRequest {
        url: Some(rx.url("/done")),
        headers: Some([("X-Done-Token".to_string(), "d0n".to_string())].into()),
    });
    let task = server.register(&request).await;
    assert_eq!(
        task.on_success.as_ref().unwrap().header_names,
        ["X-Done-Token"]
    );
    let done = with_alerts(&server, &task.id, 1).await;
    assert_eq!(done.status, Status::Succeeded);
    let notice = server
        .wait_status(&done.alerts[0], Status::Succeeded, WAIT)
        .await;
    assert_eq!(notice.alert_of, Some(task.id));
    let call = wait_for("the success notice", WAIT, || async {
        rx.received().into_iter().find(|r| r.path == "/done")
    })
    .await;
    assert!(server.signed(&call));
    assert_eq!(header(&call, "x-done-token"), "d0n");
    let body = alert_of(&call);
    assert_eq!(body.kind, "task.succeeded");
    assert_eq!((body.task_id, body.attempt), (task.id, 1));

    // `never`: the final failure raises nothing, though the server has a default. The
    // alert would be registered before the failed task is written, so none is coming.
    let once = RetryRequest {
        max_attempts: Some(Some(1)),
        ..RetryRequest::default()
    };
    let quiet = callback(rx.url("/down")).notify("never").retry(once);
    let quiet = server.register(&quiet).await;
    assert_eq!(quiet.notify, Notify::Never);
    let failed = server.wait_status(&quiet.id, Status::Failed, WAIT).await;
    assert!(failed.alerts.is_empty() && !failed.alert_pending);

    // A destination that cannot be is refused, named.
    let mut bad = serde_json::to_value(callback(rx.url("/task"))).unwrap();
    bad["on_success"] = serde_json::json!({"url": "ftp://example.com/x"});
    let (code, problem) = server.post_raw("/v1/tasks", &bad).await;
    assert_eq!(code, 422);
    assert_eq!(problem.unwrap().field.as_deref(), Some("on_success.url"));
}
