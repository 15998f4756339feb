//! End-to-end: the real `boomerang serve` binary calling real HTTP receivers on loopback.
//! Every scenario runs twice: on the embedded backend, and on the AWS backend
//! (`serve --backend aws --emulate-triggers` against Scheduler and SQS on moto and
//! DynamoDB on dynalite).

use std::time::Duration;

use boomerang_e2e::{
    header, id_of, on_both_backends, status_codes, wait_for, Backend, Receiver, Reply, Server,
    ServerOptions,
};
use boomerang_webhook::signing;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

on_both_backends!(
    first_try_success_is_signed_per_standard_webhooks,
    fails_twice_then_succeeds_with_the_scheduled_spacing,
    always_failing_ends_failed_with_a_dead_letter_and_can_be_redriven,
    gone_fails_at_once,
    retry_after_is_honored,
    a_task_canceled_before_it_fires_is_never_called,
    twenty_concurrent_duplicate_registrations_make_one_task_and_one_call,
    kill_9_with_pending_and_in_flight_tasks_loses_nothing,
    bad_input_gets_a_problem_naming_the_field_and_stores_nothing,
    private_and_loopback_destinations_are_refused_without_dev,
    a_batch_registers_each_task_and_a_bad_one_refuses_the_batch,
    canceling_by_key_spares_the_delivery_under_way,
    retention_removes_a_finished_task_but_not_a_pending_one,
    a_200_that_does_not_say_success_is_retried,
    a_named_policy_applies_to_new_tasks_and_can_change,
);

async fn first_try_success_is_signed_per_standard_webhooks(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::always(200).await;
    let (status, task) = server
        .register(json!({
            "url": rx.url("/hook"), "delay": "1s",
            "body": {"order": 42}, "headers": {"X-Secret-Token": "s3cret"},
            "metadata": {"customer": "c-1"}
        }))
        .await;
    assert_eq!(status, 201, "{task}");
    let id = id_of(&task);
    assert_eq!(task["status"], "scheduled");
    assert_eq!(task["metadata"]["customer"], "c-1");
    let done = server.wait_status(&id, "succeeded", WAIT).await;

    let got = rx.received();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r.body.as_ref(), br#"{"order":42}"#);
    assert_eq!(header(r, "content-type"), "application/json");
    assert_eq!(header(r, "x-secret-token"), "s3cret");
    assert_eq!(header(r, "webhook-id"), id);
    assert_eq!(header(r, "boomerang-attempt"), "1");
    let verified = signing::verify(
        &server.secret,
        &header(r, "webhook-id"),
        &header(r, "webhook-timestamp"),
        &header(r, "webhook-signature"),
        &r.body,
        chrono::Utc::now().timestamp(),
    );
    assert_eq!(verified, Ok(()));

    let attempts = done["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["status_code"], 200);
    assert_eq!(attempts[0]["response"], "ok");
    assert!(attempts[0]["lateness_ms"].as_i64().unwrap() >= 0);
    let worker = attempts[0]["worker"].as_str().unwrap();
    assert!(
        worker.ends_with(&format!(":{}", server.pid())),
        "host and process id: {worker}"
    );
    // Header values may be secrets: only names are shown.
    assert!(!done.to_string().contains("s3cret"));
    assert_eq!(
        done["header_names"],
        json!(["X-Secret-Token", "content-type"])
    );
}

async fn fails_twice_then_succeeds_with_the_scheduled_spacing(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::start(|_, n| Reply::status(if n < 2 { 500 } else { 200 })).await;
    let (_, task) = server
        .register(json!({"url": rx.url("/flaky"), "retry": {"schedule": ["1s", "2s"]}}))
        .await;
    let done = server.wait_status(&id_of(&task), "succeeded", WAIT).await;
    let got = rx.received();
    assert_eq!(got.len(), 3);
    let gap1 = got[1].at - got[0].at;
    let gap2 = got[2].at - got[1].at;
    // Never early; late by no more than a busy machine explains.
    assert!(
        gap1 >= Duration::from_millis(950) && gap1 < Duration::from_secs(4),
        "{gap1:?}"
    );
    assert!(
        gap2 >= Duration::from_millis(1950) && gap2 < Duration::from_secs(5),
        "{gap2:?}"
    );
    let codes = status_codes(&done);
    assert_eq!(codes, vec![json!(500), json!(500), json!(200)]);
    assert_eq!(done["attempts"][0]["outcome"], "retrying");
    assert_eq!(done["attempts"][0]["error"], "HTTP 500");
}

async fn always_failing_ends_failed_with_a_dead_letter_and_can_be_redriven(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::start(|_, n| Reply::status(if n < 3 { 500 } else { 200 })).await;
    let (_, task) = server
        .register(json!({"url": rx.url("/down"), "retry": {"schedule": ["1s"], "max_attempts": 3}}))
        .await;
    let id = id_of(&task);
    let failed = server.wait_status(&id, "failed", WAIT).await;
    assert_eq!(rx.count("/down"), 3);
    assert_eq!(failed["attempts"].as_array().unwrap().len(), 3);
    assert_eq!(failed["last_error"], "HTTP 500");

    let (_, page) = server.get_json("/v1/tasks?status=failed").await;
    let ids: Vec<_> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(ids, vec![id.clone()]);
    let log = server.log();
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains(&id) && l.contains("task failed")),
        "a WARN line names the task:\n{log}"
    );

    let res = server
        .request(reqwest::Method::POST, &format!("/v1/tasks/{id}/retry"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let done = server.wait_status(&id, "succeeded", WAIT).await;
    assert_eq!(done["attempt"], 4);
    assert_eq!(rx.count("/down"), 4);
}

async fn gone_fails_at_once(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::always(410).await;
    let (_, task) = server.register(json!({"url": rx.url("/gone")})).await;
    let failed = server.wait_status(&id_of(&task), "failed", WAIT).await;
    assert_eq!(rx.count("/gone"), 1);
    assert_eq!(failed["attempts"][0]["outcome"], "failed");
    assert_eq!(failed["next_attempt_at"], Value::Null);
}

async fn retry_after_is_honored(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::start(|_, n| {
        if n == 0 {
            Reply {
                headers: vec![("retry-after", "2".into())],
                ..Reply::status(503)
            }
        } else {
            Reply::status(200)
        }
    })
    .await;
    // The schedule alone would wait 8s; the server asks for 2s.
    let (_, task) = server
        .register(json!({"url": rx.url("/busy"), "retry": {"schedule": ["8s"]}}))
        .await;
    server.wait_status(&id_of(&task), "succeeded", WAIT).await;
    let got = rx.received();
    let gap = got[1].at - got[0].at;
    assert!(
        gap >= Duration::from_millis(1950) && gap < Duration::from_secs(7),
        "{gap:?}"
    );
}

async fn a_task_canceled_before_it_fires_is_never_called(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::always(200).await;
    let (_, task) = server
        .register(json!({"url": rx.url("/canceled"), "delay": "2s"}))
        .await;
    let id = id_of(&task);
    // A later task to the same receiver: once it has arrived, the canceled one would have too.
    let (_, sentinel) = server
        .register(json!({"url": rx.url("/sentinel"), "delay": "3s"}))
        .await;
    let res = server
        .request(reqwest::Method::DELETE, &format!("/v1/tasks/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    server
        .wait_status(&id_of(&sentinel), "succeeded", WAIT)
        .await;
    assert_eq!(rx.count("/canceled"), 0);
    assert_eq!(server.task(&id).await["status"], "canceled");

    let again = server
        .request(reqwest::Method::DELETE, &format!("/v1/tasks/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
    let unknown = server
        .request(
            reqwest::Method::DELETE,
            "/v1/tasks/01ARZ3NDEKTSV4RRFFQ69G5FAV",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

async fn twenty_concurrent_duplicate_registrations_make_one_task_and_one_call(backend: Backend) {
    let server = std::sync::Arc::new(Server::start(ServerOptions::on(backend)));
    let rx = Receiver::always(200).await;
    let body = json!({"url": rx.url("/once"), "delay": "1s", "body": "hello"});
    let handles: Vec<_> = (0..20)
        .map(|_| {
            let (server, body) = (server.clone(), body.clone());
            tokio::spawn(async move {
                let res = server
                    .request(reqwest::Method::POST, "/v1/tasks")
                    .header("Idempotency-Key", "order-42")
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = res.status().as_u16();
                (status, res.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut created = 0;
    let mut ids = std::collections::HashSet::new();
    for h in handles {
        let (status, task) = h.await.unwrap();
        assert!(status == 201 || status == 200, "{status}: {task}");
        created += (status == 201) as u32;
        ids.insert(id_of(&task));
    }
    assert_eq!(created, 1);
    assert_eq!(ids.len(), 1);
    let id = ids.into_iter().next().unwrap();
    server.wait_status(&id, "succeeded", WAIT).await;
    assert_eq!(rx.count("/once"), 1);
    let (_, page) = server.get_json("/v1/tasks").await;
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1);

    let changed = server
        .request(reqwest::Method::POST, "/v1/tasks")
        .header("Idempotency-Key", "order-42")
        .json(&json!({"url": rx.url("/once"), "body": "different"}))
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 422);
}

async fn kill_9_with_pending_and_in_flight_tasks_loses_nothing(backend: Backend) {
    let mut server = Server::start(ServerOptions::on(backend));
    // The first call to /slow hangs (the server dies during it); later calls answer at once.
    let rx = Receiver::start(|path, n| {
        if path == "/slow" && n == 0 {
            Reply {
                delay: Duration::from_secs(30),
                ..Reply::status(200)
            }
        } else {
            Reply::status(200)
        }
    })
    .await;
    let (_, slow) = server
        .register(json!({"url": rx.url("/slow"), "timeout": "2s"}))
        .await;
    let mut pending = Vec::new();
    for i in 0..5 {
        let (status, t) = server
            .register(json!({"url": rx.url("/pending"), "delay": format!("{}s", 3 + i)}))
            .await;
        assert_eq!(status, 201);
        pending.push(id_of(&t));
    }
    wait_for("the slow delivery to be in flight", WAIT, || async {
        (rx.count("/slow") == 1).then_some(())
    })
    .await;
    assert_eq!(server.task(&id_of(&slow)).await["status"], "delivering");

    server.kill9_and_restart();

    server.wait_status(&id_of(&slow), "succeeded", WAIT).await;
    for id in &pending {
        server.wait_status(id, "succeeded", WAIT).await;
    }
    assert_eq!(rx.count("/pending"), 5);
    assert_eq!(
        rx.count("/slow"),
        2,
        "the interrupted delivery is retried after its lease"
    );
}

async fn bad_input_gets_a_problem_naming_the_field_and_stores_nothing(backend: Backend) {
    let server = Server::start(ServerOptions {
        dev: false,
        ..ServerOptions::on(backend)
    });
    let url = "https://example.com/hook";
    let many_headers: serde_json::Map<String, Value> =
        (0..51).map(|i| (format!("X-H{i}"), json!("v"))).collect();
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({"url": url, "unknown": 1}), 422, "unknown"),
        (json!({}), 422, "url"),
        (json!({"url": url, "key": ""}), 422, "key"),
        (json!({"url": url, "key": "k".repeat(256)}), 422, "key"),
        (json!({"url": url, "key": 42}), 422, "key"),
        (json!({"url": "/relative"}), 422, "url"),
        (json!({"url": "ftp://example.com/x"}), 422, "url"),
        (json!({"url": "http://example.com/x"}), 422, "url"),
        (
            json!({"url": format!("{url}?{}", "a".repeat(2100))}),
            422,
            "url",
        ),
        (
            json!({"url": url, "body": "x".repeat(256 * 1024 + 1)}),
            413,
            "body",
        ),
        (json!({"url": url, "headers": many_headers}), 422, "headers"),
        (
            json!({"url": url, "headers": {"Host": "evil"}}),
            422,
            "headers.Host",
        ),
        (
            json!({"url": url, "headers": {"Content-Length": "1"}}),
            422,
            "headers.Content-Length",
        ),
        (
            json!({"url": url, "headers": {"Transfer-Encoding": "chunked"}}),
            422,
            "headers.Transfer-Encoding",
        ),
        (
            json!({"url": url, "headers": {"webhook-signature": "x"}}),
            422,
            "headers.webhook-signature",
        ),
        (
            json!({"url": url, "delay": "5s", "fire_at": "2030-01-01T00:00:00Z"}),
            422,
            "fire_at",
        ),
        (json!({"url": url, "delay": "-5s"}), 422, "delay"),
        (json!({"url": url, "delay": "soonish"}), 422, "delay"),
        (json!({"url": url, "delay": "400days"}), 422, "delay"),
        (
            json!({"url": url, "fire_at": "2999-01-01T00:00:00Z"}),
            422,
            "fire_at",
        ),
        (
            json!({"url": url, "retry": {"max_attempts": 0}}),
            422,
            "retry.max_attempts",
        ),
        (
            json!({"url": url, "retry": {"max_attempts": 1001}}),
            422,
            "retry.max_attempts",
        ),
        (
            json!({"url": url, "retry": {"schedule": []}}),
            422,
            "retry.schedule",
        ),
        (
            json!({"url": url, "retry": {"schedule": vec!["1s"; 101]}}),
            422,
            "retry.schedule",
        ),
        (
            json!({"url": url, "retry": {"schedule": ["1s", "8d"]}}),
            422,
            "retry.schedule[1]",
        ),
        (
            json!({"url": url, "retry": {"schedule": ["100ms"]}}),
            422,
            "retry.schedule[0]",
        ),
        (
            json!({"url": url, "retry": {"jitter": 0.51}}),
            422,
            "retry.jitter",
        ),
        (json!({"url": url, "hold": {}}), 422, "hold.timeout"),
        (
            json!({"url": url, "hold": {"timeout": "500ms"}}),
            422,
            "hold.timeout",
        ),
        (
            json!({"url": url, "hold": {"timeout": "25h"}}),
            422,
            "hold.timeout",
        ),
        (
            json!({"url": url, "hold": {"timeout": "30s", "max_checks": 0}}),
            422,
            "hold.max_checks",
        ),
        (
            json!({"url": url, "hold": {"timeout": "30s", "on_unknown": "maybe"}}),
            422,
            "hold.on_unknown",
        ),
        (
            json!({"url": url, "hold": {"timeout": "30s", "check_url": "http://127.0.0.1/tx"}}),
            422,
            "hold.check_url",
        ),
        (
            json!({"url": url, "hold": {"timeout": "30s", "then": "x"}}),
            422,
            "hold.then",
        ),
        (json!({"url": url, "timeout": "0s"}), 422, "timeout"),
        (json!({"url": url, "timeout": "2m"}), 422, "timeout"),
        (
            json!({"url": url, "idempotency_key": "k".repeat(256)}),
            422,
            "idempotency_key",
        ),
        (
            json!({"url": url, "retry": {"max_attempts": "three"}}),
            422,
            "retry.max_attempts",
        ),
        (
            json!({"url": url, "retry": {"max_attempts": null}}),
            422,
            "retry.max_duration",
        ),
    ];
    for (body, status, field) in cases {
        let res = server
            .request(reqwest::Method::POST, "/v1/tasks")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), status, "{body}");
        let ct = res.headers()["content-type"].to_str().unwrap().to_string();
        assert_eq!(ct, "application/problem+json");
        let problem: Value = res.json().await.unwrap();
        assert_eq!(problem["field"], field, "{problem}");
        assert_eq!(problem["status"], status);
        assert!(
            problem["detail"].as_str().unwrap().contains(field),
            "{problem}"
        );
    }

    let raw = |body: &'static str| {
        server
            .request(reqwest::Method::POST, "/v1/tasks")
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    assert_eq!(raw("{not json").await.unwrap().status(), 400);
    assert_eq!(raw("").await.unwrap().status(), 400);
    // A 2 MiB request is refused from its headers, without the server reading the body.
    assert_eq!(
        server
            .post_declaring_length("/v1/tasks", 2 * 1024 * 1024)
            .await,
        413
    );

    // A key reused with a different body.
    let first = server
        .request(reqwest::Method::POST, "/v1/tasks")
        .header("Idempotency-Key", "k-1")
        .json(&json!({"url": url, "delay": "1h"}))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 201);
    let reused = server
        .request(reqwest::Method::POST, "/v1/tasks")
        .header("Idempotency-Key", "k-1")
        .json(&json!({"url": url, "delay": "2h"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reused.status(), 422);
    let problem: Value = reused.json().await.unwrap();
    assert_eq!(problem["field"], "idempotency_key");

    let unauthorized = reqwest::get(format!("{}/v1/tasks", server.base))
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), 401);
    let (status, bad_query) = server.get_json("/v1/tasks?status=lost").await;
    assert_eq!((status, bad_query["field"].clone()), (422, json!("status")));
    let long_key = format!("/v1/tasks?key={}", "k".repeat(256));
    let (status, bad_key) = server.get_json(&long_key).await;
    assert_eq!((status, bad_key["field"].clone()), (422, json!("key")));
    let (status, bad_key) = server.get_json("/v1/tasks?key=a%0Ab").await;
    assert_eq!((status, bad_key["field"].clone()), (422, json!("key")));
    let (status, _) = server.get_json("/v1/tasks/not-a-task-id").await;
    assert_eq!(status, 404);

    // Only the one valid registration was stored, and the server is healthy.
    let (_, page) = server.get_json("/v1/tasks").await;
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1);
    let health = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

async fn private_and_loopback_destinations_are_refused_without_dev(backend: Backend) {
    let server = Server::start(ServerOptions {
        dev: false,
        ..ServerOptions::on(backend)
    });
    for url in [
        "https://127.0.0.1/x",
        "https://10.1.2.3/x",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://100.64.0.1/x",
        "http://example.com/x",
    ] {
        let (status, problem) = server.register(json!({"url": url})).await;
        assert_eq!(
            (status, problem["field"].clone()),
            (422, json!("url")),
            "{url}"
        );
        // An alert destination is held to the same rules.
        let (status, problem) = server
            .register(json!({"url": "https://example.com/x", "on_failure": {"url": url}}))
            .await;
        assert_eq!(
            (status, problem["field"].clone()),
            (422, json!("on_failure.url")),
            "{url}"
        );
    }
    // A name that resolves to loopback passes registration but is refused after DNS.
    let rx = Receiver::always(200).await;
    let url = format!("https://localhost:{}/rebind", rx.addr.port());
    let (status, task) = server.register(json!({"url": url})).await;
    assert_eq!(status, 201, "{task}");
    let failed = server.wait_status(&id_of(&task), "failed", WAIT).await;
    let error = failed["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("destination refused"), "{failed}");
    assert_eq!(rx.received().len(), 0);
}

async fn a_batch_registers_each_task_and_a_bad_one_refuses_the_batch(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::always(200).await;
    let post = |body: Value| {
        let server = &server;
        async move {
            let res = server
                .request(reqwest::Method::POST, "/v1/tasks/batch")
                .json(&body)
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        }
    };
    let (_, page) = server.get_json("/v1/tasks").await;
    let before = page["tasks"].as_array().unwrap().len();

    // One bad task refuses the whole batch, naming it; nothing is stored.
    let (status, problem) = post(json!({"tasks": [
        {"url": rx.url("/b/0")},
        {"url": rx.url("/b/1"), "delay": "300000y"},
    ]}))
    .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["field"], "tasks[1].delay");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("tasks[1].delay: "),
        "{problem}"
    );
    let too_many: Vec<Value> = (0..101)
        .map(|i| json!({"url": rx.url(&format!("/m/{i}"))}))
        .collect();
    let (status, problem) = post(json!({ "tasks": too_many })).await;
    assert_eq!((status, problem["field"].clone()), (422, json!("tasks")));
    let (status, problem) = post(json!({"tasks": [{"url": rx.url("/x"), "bogus": 1}]})).await;
    assert_eq!(
        (status, problem["field"].clone()),
        (422, json!("tasks[0].bogus"))
    );
    let (_, page) = server.get_json("/v1/tasks").await;
    assert_eq!(
        page["tasks"].as_array().unwrap().len(),
        before,
        "nothing was stored"
    );

    // A good batch: one result per task, in order; an idempotent repeat answers 200.
    let (status, first) = post(json!({"tasks": [
        {"url": rx.url("/b/0"), "delay": "1s", "idempotency_key": "order-7"},
    ]}))
    .await;
    assert_eq!(status, 200, "{first}");
    let tasks: Vec<Value> = (0..3)
        .map(|i| json!({"url": rx.url(&format!("/b/{i}")), "delay": "1s", "idempotency_key": format!("order-{}", 7 + i)}))
        .collect();
    let (status, answer) = post(json!({ "tasks": tasks })).await;
    assert_eq!(status, 200, "{answer}");
    let results = answer["tasks"].as_array().unwrap();
    let statuses: Vec<_> = results.iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, vec![json!(200), json!(201), json!(201)]);
    assert_eq!(results[0]["task"]["id"], first["tasks"][0]["task"]["id"]);
    for r in results {
        server
            .wait_status(&id_of(&r["task"]), "succeeded", WAIT)
            .await;
    }
    for i in 0..3 {
        assert_eq!(rx.count(&format!("/b/{i}")), 1);
    }
}

async fn canceling_by_key_spares_the_delivery_under_way(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    // The first reminder's call takes two seconds: the cancel arrives while it is under way.
    let rx = Receiver::start(|path, _| Reply {
        delay: Duration::from_millis(if path == "/slow" { 2000 } else { 0 }),
        ..Reply::status(200)
    })
    .await;
    let keyed = |path: &str, key: &str, delay: Option<&str>| {
        let mut task = json!({"url": rx.url(path), "key": key});
        if let Some(d) = delay {
            task["delay"] = json!(d);
        }
        task
    };
    let (_, under_way) = server.register(keyed("/slow", "order-7", None)).await;
    let (_, later) = server
        .register(keyed("/later", "order-7", Some("30s")))
        .await;
    let (_, last) = server
        .register(keyed("/last", "order-7", Some("40s")))
        .await;
    let (_, other) = server
        .register(keyed("/other", "order-8", Some("2s")))
        .await;
    assert_eq!(later["key"], "order-7");
    server
        .wait_status(&id_of(&under_way), "delivering", WAIT)
        .await;

    let res = server
        .request(reqwest::Method::DELETE, "/v1/tasks?key=order-7")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let outcome: Value = res.json().await.unwrap();
    let mut canceled: Vec<String> = outcome["canceled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_string())
        .collect();
    canceled.sort();
    let mut expected = vec![id_of(&later), id_of(&last)];
    expected.sort();
    assert_eq!(canceled, expected);
    assert_eq!(
        outcome["not_canceled"],
        json!([{"id": id_of(&under_way), "status": "delivering"}])
    );
    assert_eq!(outcome["more"], false);

    server
        .wait_status(&id_of(&under_way), "succeeded", WAIT)
        .await;
    server.wait_status(&id_of(&other), "succeeded", WAIT).await;
    assert_eq!(rx.count("/slow"), 1);
    assert_eq!(rx.count("/later") + rx.count("/last"), 0);
    let (status, listed) = server.get_json("/v1/tasks?key=order-7").await;
    assert_eq!(status, 200);
    let statuses: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        vec!["canceled", "canceled", "succeeded"],
        "newest first"
    );

    for (query, field) in [("", "key"), ("?key=", "key")] {
        let res = server
            .request(reqwest::Method::DELETE, &format!("/v1/tasks{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 422, "{query}");
        let problem: Value = res.json().await.unwrap();
        assert_eq!(problem["field"], field);
    }
}

async fn retention_removes_a_finished_task_but_not_a_pending_one(backend: Backend) {
    let server = Server::start(ServerOptions {
        retention: Some("2s"),
        ..ServerOptions::on(backend)
    });
    let rx = Receiver::always(200).await;
    let (_, done) = server.register(json!({"url": rx.url("/now")})).await;
    let (_, pending) = server
        .register(json!({"url": rx.url("/later"), "delay": "1h"}))
        .await;
    let done = id_of(&done);
    server.wait_status(&done, "succeeded", WAIT).await;
    wait_for("the finished task to be removed", WAIT, || async {
        let (status, _) = server.get_json(&format!("/v1/tasks/{done}")).await;
        (status == 404).then_some(())
    })
    .await;
    assert_eq!(server.task(&id_of(&pending)).await["status"], "scheduled");
    let (_, page) = server.get_json("/v1/tasks").await;
    let listed: Vec<String> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(listed, vec![id_of(&pending)]);
}

async fn a_200_that_does_not_say_success_is_retried(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    // Answers 200 every time, with "fail" until the third call.
    let rx = Receiver::start(|_, n| Reply {
        body: if n < 2 { "fail" } else { "success" }.into(),
        ..Reply::status(200)
    })
    .await;
    let (_, task) = server
        .register(json!({
            "url": rx.url("/says"), "expect_body": "success",
            "retry": {"schedule": ["1s"], "max_attempts": 5}
        }))
        .await;
    let done = server.wait_status(&id_of(&task), "succeeded", WAIT).await;
    assert_eq!(rx.count("/says"), 3);
    let attempts = done["attempts"].as_array().unwrap();
    let outcomes: Vec<&str> = attempts
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, vec!["retrying", "retrying", "succeeded"]);
    assert_eq!(attempts[0]["response"], "fail");
    assert!(attempts[0]["error"]
        .as_str()
        .unwrap()
        .contains("did not match expect_body"));
}

async fn a_named_policy_applies_to_new_tasks_and_can_change(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::always(500).await;
    let put = |name: &str, body: Value| {
        let req = server.request(reqwest::Method::PUT, &format!("/v1/policies/{name}"));
        async move {
            let res = req.json(&body).send().await.unwrap();
            (
                res.status().as_u16(),
                res.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, view) = put("fast", json!({"schedule": ["1s"], "max_attempts": 2})).await;
    assert_eq!(
        (status, view["retry"]["max_attempts"].clone()),
        (200, json!(2))
    );
    let (_, first) = server
        .register(json!({"url": rx.url("/first"), "retry": "fast"}))
        .await;
    assert_eq!(
        first["retry"]["max_attempts"], 2,
        "copied in at registration"
    );
    server.wait_status(&id_of(&first), "failed", WAIT).await;
    assert_eq!(rx.count("/first"), 2);

    // Changed: new tasks take the new policy, the first keeps its copy.
    let (status, _) = put("fast", json!({"schedule": ["1s"], "max_attempts": 3})).await;
    assert_eq!(status, 200);
    let (_, second) = server
        .register(json!({"url": rx.url("/second"), "retry": "fast"}))
        .await;
    server.wait_status(&id_of(&second), "failed", WAIT).await;
    assert_eq!(rx.count("/second"), 3);
    assert_eq!(
        server.task(&id_of(&first)).await["retry"]["max_attempts"],
        2
    );
    let (_, listed) = server.get_json("/v1/policies").await;
    assert_eq!(listed["policies"][0]["name"], "fast");
    assert_eq!(listed["policies"][0]["retry"]["max_attempts"], 3);

    // The tenant's `default` replaces the built-in default.
    put("default", json!({"schedule": ["1s"], "max_attempts": 1})).await;
    let (_, plain) = server.register(json!({"url": rx.url("/plain")})).await;
    assert_eq!(plain["retry"]["max_attempts"], 1);

    // Refusals name the field; a deleted policy is gone.
    let (status, problem) = put("fast", json!({"max_attempts": 0})).await;
    assert_eq!(
        (status, problem["field"].clone()),
        (422, json!("max_attempts"))
    );
    let (status, problem) = put("no%20spaces", json!({})).await;
    assert_eq!((status, problem["field"].clone()), (422, json!("name")));
    let (status, problem) = server
        .register(json!({"url": rx.url("/x"), "retry": "nope"}))
        .await;
    assert_eq!((status, problem["field"].clone()), (422, json!("retry")));
    let delete = || {
        server
            .request(reqwest::Method::DELETE, "/v1/policies/fast")
            .send()
    };
    assert_eq!(delete().await.unwrap().status(), 204);
    assert_eq!(delete().await.unwrap().status(), 404);
    assert_eq!(server.get_json("/v1/policies/fast").await.0, 404);
}
