//! End-to-end: held tasks (callbacks bound to the caller's transaction) from the real
//! `boomerang serve` to real receivers on loopback, on the embedded backend and on the
//! AWS backend against the emulators.

use std::time::Duration;

use boomerang_e2e::{
    header, id_of, on_both_backends, status_codes, wait_for, Backend, Receiver, Reply, Server,
    ServerOptions,
};
use boomerang_webhook::signing;
use reqwest::Method;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(40);

on_both_backends!(
    a_task_released_before_its_timeout_is_delivered_once_on_time,
    a_rolled_back_task_is_never_delivered_and_a_late_release_is_refused,
    a_silent_caller_is_asked_and_its_answers_decide,
    a_hold_survives_kill_9_while_held_and_during_a_check_call,
    a_release_racing_the_check_back_has_one_outcome,
);

fn decision(d: &str) -> Reply {
    Reply {
        body: json!({ "decision": d }).to_string(),
        ..Reply::status(200)
    }
}

async fn release(server: &Server, id: &str) -> (u16, Value) {
    server
        .call(Method::POST, &format!("/v1/tasks/{id}/release"))
        .await
}

/// A time in a view, to the millisecond (what every store keeps).
fn time(v: &Value) -> chrono::DateTime<chrono::Utc> {
    let t: chrono::DateTime<chrono::Utc> = v.as_str().expect("a time").parse().expect("RFC 3339");
    chrono::DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

async fn a_task_released_before_its_timeout_is_delivered_once_on_time(backend: Backend) {
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions::on(backend));
    // The caller's pattern: the order id as Idempotency-Key and business key.
    let res = server
        .request(Method::POST, "/v1/tasks")
        .header("Idempotency-Key", "order-42")
        .json(&json!({
            "url": rx.url("/paid"), "delay": "2s", "key": "order-42",
            "hold": {"timeout": "30s", "check_url": rx.url("/tx")}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let task: Value = res.json().await.unwrap();
    let id = id_of(&task);
    assert_eq!(task["status"], "held");
    assert_eq!(
        task["hold"],
        json!({"timeout": "30s", "check_url": rx.url("/tx"), "on_unknown": "cancel", "max_checks": 20})
    );
    assert!(task["check_at"].is_string());
    let (_, held) = server.get_json("/v1/tasks?status=held").await;
    assert_eq!(held["tasks"][0]["id"], id.as_str(), "{held}");

    let (status, released) = release(&server, &id).await;
    assert_eq!(status, 200, "{released}");
    assert_eq!(released["status"], "scheduled");
    assert!(released.get("check_at").is_none());
    let done = server.wait_status(&id, "succeeded", WAIT).await;
    let attempt = &done["attempts"][0];
    // On time: the delay counts from registration, not from the release.
    let due = time(&task["created_at"]) + chrono::Duration::seconds(2);
    assert_eq!(time(&attempt["scheduled_at"]), due);
    assert!(time(&attempt["started_at"]) >= due);
    assert_eq!(rx.count("/paid"), 1);
    assert_eq!(rx.count("/tx"), 0, "released in time: never asked");

    let (status, again) = release(&server, &id).await;
    assert_eq!((status, &again["status"]), (200, &json!("succeeded")));
    assert_eq!(
        rx.count("/paid"),
        1,
        "a repeated release delivers nothing more"
    );

    // Released by the business key.
    let (_, other) = server
        .register(json!({"url": rx.url("/other"), "key": "order-43", "hold": {"timeout": "30s"}}))
        .await;
    let other = id_of(&other);
    let (status, by_key) = server
        .call(Method::POST, "/v1/tasks/release?key=order-43")
        .await;
    assert_eq!(status, 200, "{by_key}");
    assert_eq!(by_key["released"], json!([other]));
    server.wait_status(&other, "succeeded", WAIT).await;
    let (_, by_key) = server
        .call(Method::POST, "/v1/tasks/release?key=order-43")
        .await;
    assert_eq!(by_key["released"], json!([]));
    assert_eq!(
        by_key["not_released"],
        json!([{"id": other, "status": "succeeded"}])
    );
}

async fn a_rolled_back_task_is_never_delivered_and_a_late_release_is_refused(backend: Backend) {
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions::on(backend));
    let hold = json!({"timeout": "30s", "on_unknown": "release"});
    let (_, task) = server
        .register(json!({"url": rx.url("/rolled-back"), "delay": "1s", "hold": hold}))
        .await;
    let id = id_of(&task);
    let (status, canceled) = server
        .call(Method::DELETE, &format!("/v1/tasks/{id}"))
        .await;
    assert_eq!((status, &canceled["status"]), (200, &json!("canceled")));
    let (status, problem) = release(&server, &id).await;
    assert_eq!(status, 409, "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("canceled"));

    // Canceled by the business key, too.
    let (_, keyed) = server
        .register(
            json!({"url": rx.url("/rolled-back"), "delay": "1s", "key": "order-9", "hold": hold}),
        )
        .await;
    let (status, by_key) = server.call(Method::DELETE, "/v1/tasks?key=order-9").await;
    assert_eq!(status, 200, "{by_key}");
    assert_eq!(by_key["canceled"], json!([id_of(&keyed)]));

    // A task registered after them, due at the same time, is delivered; they never are.
    let (_, marker) = server
        .register(json!({"url": rx.url("/marker"), "delay": "1s"}))
        .await;
    server.wait_status(&id_of(&marker), "succeeded", WAIT).await;
    assert_eq!(rx.count("/rolled-back"), 0);
    assert_eq!(server.task(&id).await["status"], "canceled");
}

async fn a_silent_caller_is_asked_and_its_answers_decide(backend: Backend) {
    let rx = Receiver::start(|path, n| match path {
        "/tx-slow" if n < 2 => Reply::status(500),
        "/tx-slow" => decision("release"),
        "/tx-cancel" => decision("cancel"),
        "/tx-gone" => Reply::status(404),
        "/tx-down" => Reply::status(503),
        _ => Reply::status(200),
    })
    .await;
    let server = Server::start(ServerOptions::on(backend));
    let held = |name: &str, hold: Value| {
        json!({
            "url": rx.url(&format!("/{name}")), "key": name, "metadata": {"order": name},
            "hold": hold
        })
    };
    let mut ids = Vec::new();
    for (name, hold) in [
        (
            "slow",
            json!({"timeout": "1s", "check_url": rx.url("/tx-slow")}),
        ),
        (
            "cancel",
            json!({"timeout": "1s", "check_url": rx.url("/tx-cancel"), "on_unknown": "release"}),
        ),
        (
            "gone",
            json!({"timeout": "1s", "check_url": rx.url("/tx-gone"), "on_unknown": "release"}),
        ),
        (
            "down",
            json!({"timeout": "1s", "check_url": rx.url("/tx-down"), "on_unknown": "release", "max_checks": 2}),
        ),
        ("silent", json!({"timeout": "1s"})),
    ] {
        let (status, task) = server.register(held(name, hold)).await;
        assert_eq!(status, 201, "{task}");
        ids.push(id_of(&task));
    }

    // Two failed checks, then "release": delivered once, every check on record.
    let slow = server.wait_status(&ids[0], "succeeded", WAIT).await;
    let checks = slow["checks"].as_array().unwrap();
    let codes: Vec<&Value> = checks.iter().map(|c| &c["status_code"]).collect();
    assert_eq!(codes, [&json!(500), &json!(500), &json!(200)]);
    assert_eq!(checks[2]["decision"], "release");
    assert_eq!(checks[0]["error"], "HTTP 500");
    assert_eq!(status_codes(&slow), vec![json!(200)]);
    assert_eq!(rx.count("/slow"), 1);
    let asked = rx
        .received()
        .into_iter()
        .find(|r| r.path == "/tx-slow")
        .unwrap();
    assert!(signing::verify(
        &server.secret,
        &header(&asked, "webhook-id"),
        &header(&asked, "webhook-timestamp"),
        &header(&asked, "webhook-signature"),
        &asked.body,
        chrono::Utc::now().timestamp(),
    )
    .is_ok());
    let body: Value = serde_json::from_slice(&asked.body).unwrap();
    assert_eq!(body["task_id"], ids[0].as_str());
    assert_eq!(body["key"], "slow");
    assert_eq!(body["metadata"], json!({"order": "slow"}));
    assert_eq!(body["check"], 1);

    // "cancel" and 404 cancel, whatever on_unknown says.
    for id in &ids[1..3] {
        let task = server.wait_status(id, "canceled", WAIT).await;
        assert_eq!(task["checks"].as_array().unwrap().len(), 1);
    }
    // Never answered: on_unknown after max_checks.
    let down = server.wait_status(&ids[3], "succeeded", WAIT).await;
    assert_eq!(down["checks"].as_array().unwrap().len(), 2);
    assert_eq!(rx.count("/tx-down"), 2);
    // Nobody to ask: on_unknown (cancel by default) at the timeout.
    let silent = server.wait_status(&ids[4], "canceled", WAIT).await;
    assert!(silent.get("checks").is_none());
    for never in ["/cancel", "/gone", "/silent"] {
        assert_eq!(rx.count(never), 0, "{never} was delivered");
    }
}

async fn a_release_racing_the_check_back_has_one_outcome(backend: Backend) {
    // The check answers "cancel", slowly: the releases arrive while it is in flight.
    let rx = Receiver::start(|path, _| match path {
        "/tx" => Reply {
            delay: Duration::from_millis(500),
            ..decision("cancel")
        },
        _ => Reply::status(200),
    })
    .await;
    let server = Server::start(ServerOptions::on(backend));
    let (_, task) = server
        .register(json!({
            "url": rx.url("/hook"), "hold": {"timeout": "1s", "check_url": rx.url("/tx")}
        }))
        .await;
    let id = id_of(&task);
    wait_for("the check call", WAIT, || async {
        (rx.count("/tx") > 0).then_some(())
    })
    .await;
    let mut releases = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let request = server.request(Method::POST, &format!("/v1/tasks/{id}/release"));
        releases.spawn(async move { request.send().await.unwrap().status().as_u16() });
    }
    let answers = releases.join_all().await;
    let first = answers[0];
    assert!(
        answers.iter().all(|&a| a == first),
        "one outcome for every release: {answers:?}"
    );
    let end = match first {
        200 => "succeeded",
        409 => "canceled",
        other => panic!("release answered {other}"),
    };
    let task = server.wait_status(&id, end, WAIT).await;
    if end == "succeeded" {
        assert!(task.get("checks").is_none(), "the check's cancel lost");
        // Anything more would come at once: a marker delivered after it shows nothing did.
        let (_, marker) = server.register(json!({"url": rx.url("/marker")})).await;
        server.wait_status(&id_of(&marker), "succeeded", WAIT).await;
        assert_eq!(rx.count("/hook"), 1, "one delivery");
    } else {
        assert_eq!(rx.count("/hook"), 0);
    }
}

async fn a_hold_survives_kill_9_while_held_and_during_a_check_call(backend: Backend) {
    // The first check call hangs (the server is killed during it); later ones release.
    let rx = Receiver::start(|path, n| match path {
        "/tx" if n == 0 => Reply {
            delay: Duration::from_secs(60),
            ..decision("cancel")
        },
        "/tx" | "/ty" => decision("release"),
        _ => Reply::status(200),
    })
    .await;
    let mut server = Server::start(ServerOptions::on(backend));
    let (_, checking) = server
        .register(json!({
            "url": rx.url("/x"), "hold": {"timeout": "1s", "check_url": rx.url("/tx")}
        }))
        .await;
    let (_, waiting) = server
        .register(json!({
            "url": rx.url("/y"), "hold": {"timeout": "5s", "check_url": rx.url("/ty")}
        }))
        .await;
    let (checking, waiting) = (id_of(&checking), id_of(&waiting));
    wait_for("the first check call", WAIT, || async {
        (rx.count("/tx") == 1).then_some(())
    })
    .await;
    assert_eq!(server.task(&waiting).await["status"], "held");
    server.kill9_and_restart();

    let x = server.wait_status(&checking, "succeeded", WAIT).await;
    let y = server.wait_status(&waiting, "succeeded", WAIT).await;
    assert!(rx.count("/tx") >= 2, "the interrupted check is made again");
    let last = x["checks"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["decision"], "release");
    assert_eq!(y["checks"][0]["decision"], "release");
    assert_eq!((rx.count("/x"), rx.count("/y")), (1, 1));
}
