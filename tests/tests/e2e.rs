//! End-to-end: the real `boomerang serve` binary calling real HTTP receivers on loopback.
//! Every scenario runs twice: on the embedded backend, and on the AWS backend
//! (`serve --backend aws --emulate-triggers` against Scheduler and SQS on moto and
//! DynamoDB on dynalite).

use std::time::Duration;

use boomerang_api::request::{BatchRequest, RetryRequest, TaskRequest};
use boomerang_api::view::BatchItemView;
use boomerang_api::Problem;
use boomerang_client::{ClientError, ListParams};
use boomerang_core::domain::{AttemptOutcome, BusinessKey, Status, TaskId};
use boomerang_e2e::{
    callback, header, on_every_backend, schedule, schedule_max, status_codes, wait_for, Backend,
    Callback, Receiver, Reply, Server, ServerOptions,
};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

on_every_backend!(
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
    let task = server
        .register(
            &callback(rx.url("/hook"))
                .delay("1s")
                .body(json!({"order": 42}))
                .header("X-Secret-Token", "s3cret")
                .metadata("customer", "c-1"),
        )
        .await;
    let id = task.id;
    assert_eq!(task.status, Status::Scheduled);
    assert_eq!(
        task.metadata.get("customer").map(String::as_str),
        Some("c-1")
    );
    let done = server.wait_status(&id, Status::Succeeded, WAIT).await;

    let got = rx.received();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r.body.as_ref(), br#"{"order":42}"#);
    assert_eq!(header(r, "content-type"), "application/json");
    assert_eq!(header(r, "x-secret-token"), "s3cret");
    assert_eq!(header(r, "webhook-id"), id.to_string());
    assert_eq!(header(r, "boomerang-attempt"), "1");
    assert!(server.signed(r));

    let attempts = done.attempts.as_deref().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].status_code, Some(200));
    assert_eq!(attempts[0].response.as_deref(), Some("ok"));
    assert!(attempts[0].lateness_ms >= 0);
    let worker = attempts[0].worker.as_deref().unwrap();
    assert!(
        worker.ends_with(&format!(":{}", server.pid())),
        "host and process id: {worker}"
    );
    // Header values may be secrets: only names are shown.
    assert!(!serde_json::to_string(&done).unwrap().contains("s3cret"));
    assert_eq!(done.header_names, ["X-Secret-Token", "content-type"]);
}

async fn fails_twice_then_succeeds_with_the_scheduled_spacing(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::start(|_, n| Reply::status(if n < 2 { 500 } else { 200 })).await;
    let task = server
        .register(&callback(rx.url("/flaky")).retry(schedule(&["1s", "2s"])))
        .await;
    let done = server.wait_status(&task.id, Status::Succeeded, WAIT).await;
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
    assert_eq!(status_codes(&done), vec![Some(500), Some(500), Some(200)]);
    let first = &done.attempts.as_deref().unwrap()[0];
    assert_eq!(first.outcome, AttemptOutcome::Retrying);
    assert_eq!(first.error.as_deref(), Some("HTTP 500"));
}

async fn always_failing_ends_failed_with_a_dead_letter_and_can_be_redriven(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::start(|_, n| Reply::status(if n < 3 { 500 } else { 200 })).await;
    let task = server
        .register(&callback(rx.url("/down")).retry(schedule_max(&["1s"], 3)))
        .await;
    let id = task.id;
    let failed = server.wait_status(&id, Status::Failed, WAIT).await;
    assert_eq!(rx.count("/down"), 3);
    assert_eq!(failed.attempts.as_deref().unwrap().len(), 3);
    assert_eq!(failed.last_error.as_deref(), Some("HTTP 500"));

    let page = server
        .api()
        .list(&ListParams {
            status: Some(Status::Failed),
            ..ListParams::default()
        })
        .await
        .unwrap();
    let ids: Vec<_> = page.tasks.iter().map(|t| t.id).collect();
    assert_eq!(ids, vec![id]);
    let log = server.log();
    assert!(
        log.lines().any(|l| l.contains("WARN")
            && l.contains(&id.to_string())
            && l.contains("task failed")),
        "a WARN line names the task:\n{log}"
    );

    let retried = server.api().retry(&id).await.unwrap();
    assert_eq!(retried.status, Status::Scheduled);
    let done = server.wait_status(&id, Status::Succeeded, WAIT).await;
    assert_eq!(done.attempt, 4);
    assert_eq!(rx.count("/down"), 4);
}

async fn gone_fails_at_once(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::always(410).await;
    let task = server.register(&callback(rx.url("/gone"))).await;
    let failed = server.wait_status(&task.id, Status::Failed, WAIT).await;
    assert_eq!(rx.count("/gone"), 1);
    assert_eq!(
        failed.attempts.as_deref().unwrap()[0].outcome,
        AttemptOutcome::Failed
    );
    assert_eq!(failed.next_attempt_at, None);
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
    let task = server
        .register(&callback(rx.url("/busy")).retry(schedule(&["8s"])))
        .await;
    server.wait_status(&task.id, Status::Succeeded, WAIT).await;
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
    let task = server
        .register(&callback(rx.url("/canceled")).delay("2s"))
        .await;
    let id = task.id;
    // A later task to the same receiver: once it has arrived, the canceled one would have too.
    let sentinel = server
        .register(&callback(rx.url("/sentinel")).delay("3s"))
        .await;
    let canceled = server.api().cancel(&id).await.unwrap();
    assert_eq!(canceled.status, Status::Canceled);
    server
        .wait_status(&sentinel.id, Status::Succeeded, WAIT)
        .await;
    assert_eq!(rx.count("/canceled"), 0);
    assert_eq!(server.task(&id).await.status, Status::Canceled);

    let again = server.api().cancel(&id).await.unwrap_err();
    assert_eq!(again.status(), Some(409));
    let unknown = server
        .api()
        .cancel(&"01ARZ3NDEKTSV4RRFFQ69G5FAV".parse().unwrap())
        .await
        .unwrap_err();
    assert_eq!(unknown.status(), Some(404));
}

async fn twenty_concurrent_duplicate_registrations_make_one_task_and_one_call(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let rx = Receiver::always(200).await;
    let body = std::sync::Arc::new(callback(rx.url("/once")).delay("1s").body(json!("hello")));
    let handles: Vec<_> = (0..20)
        .map(|_| {
            let (api, body) = (server.api(), body.clone());
            tokio::spawn(async move { api.create(&body, Some("order-42")).await })
        })
        .collect();
    let mut created = 0;
    let mut ids = std::collections::HashSet::new();
    for h in handles {
        let answer = h.await.unwrap().unwrap();
        assert!(answer.status == 201 || answer.status == 200, "{answer:?}");
        created += (answer.status == 201) as u32;
        ids.insert(answer.body.id);
    }
    assert_eq!(created, 1);
    assert_eq!(ids.len(), 1);
    let id = ids.into_iter().next().unwrap();
    server.wait_status(&id, Status::Succeeded, WAIT).await;
    assert_eq!(rx.count("/once"), 1);
    let page = server.api().list(&ListParams::default()).await.unwrap();
    assert_eq!(page.tasks.len(), 1);

    let changed = server
        .api()
        .create(
            &callback(rx.url("/once")).body(json!("different")),
            Some("order-42"),
        )
        .await
        .unwrap_err();
    assert_eq!(changed.status(), Some(422));
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
    let slow = server
        .register(&callback(rx.url("/slow")).timeout("2s"))
        .await;
    let mut pending = Vec::new();
    for i in 0..5 {
        let t = server
            .register(&callback(rx.url("/pending")).delay(&format!("{}s", 3 + i)))
            .await;
        pending.push(t.id);
    }
    wait_for("the slow delivery to be in flight", WAIT, || async {
        (rx.count("/slow") == 1).then_some(())
    })
    .await;
    assert_eq!(server.task(&slow.id).await.status, Status::Delivering);

    server.kill9_and_restart();

    server.wait_status(&slow.id, Status::Succeeded, WAIT).await;
    for id in &pending {
        server.wait_status(id, Status::Succeeded, WAIT).await;
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
        (
            json!({"url": url, "flow": {"key": "k", "rate": 0}}),
            422,
            "flow.rate",
        ),
        (
            json!({"url": url, "flow": {"key": "k", "parallelism": 0}}),
            422,
            "flow.parallelism",
        ),
        (
            json!({"url": url, "flow": {"key": "k", "parallelism": 1001}}),
            422,
            "flow.parallelism",
        ),
        (
            json!({"url": url, "flow": {"key": "k".repeat(300), "rate": 5}}),
            422,
            "flow.key",
        ),
        (
            json!({"url": url, "flow": {"key": "k", "rate": 5, "period": "-1s"}}),
            422,
            "flow.period",
        ),
        (
            json!({"url": url, "flow": {"key": "k", "rate": 5, "period": "0s"}}),
            422,
            "flow.period",
        ),
        (json!({"url": url, "flow": {"rate": 5}}), 422, "flow.key"),
        (json!({"url": url, "flow": {"key": "k"}}), 422, "flow"),
        (
            json!({"url": url, "flow": {"key": "k", "rate": 1e30}}),
            422,
            "flow.rate",
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
        let problem: Problem = res.json().await.unwrap();
        assert_eq!(problem.field.as_deref(), Some(field), "{problem:?}");
        assert_eq!(problem.status, status);
        assert!(problem.detail.contains(field), "{problem:?}");
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
    let api = server.api();
    let first = api
        .create(&callback(url).delay("1h"), Some("k-1"))
        .await
        .unwrap();
    assert_eq!(first.status, 201);
    let reused = api
        .create(&callback(url).delay("2h"), Some("k-1"))
        .await
        .unwrap_err();
    assert_eq!(reused.status(), Some(422));
    assert_eq!(field_of(&reused), Some("idempotency_key"));

    let unauthorized = api.with_key("").list(&ListParams::default()).await;
    assert_eq!(unauthorized.unwrap_err().status(), Some(401));
    let unknown = server
        .request(reqwest::Method::GET, "/v1/tasks/not-a-task-id")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status().as_u16(), 404);

    // Only the one valid registration was stored, and the server is healthy.
    let page = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(page.tasks.len(), 1);
    assert_eq!(api.health().await.unwrap().status, "ok");
}

/// The field a refusal names.
fn field_of(e: &ClientError) -> Option<&str> {
    e.problem().and_then(|p| p.field.as_deref())
}

async fn private_and_loopback_destinations_are_refused_without_dev(backend: Backend) {
    let server = Server::start(ServerOptions {
        dev: false,
        ..ServerOptions::on(backend)
    });
    let api = server.api();
    for url in [
        "https://127.0.0.1/x",
        "https://10.1.2.3/x",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://100.64.0.1/x",
        "http://example.com/x",
    ] {
        let refused = api.create(&callback(url), None).await.unwrap_err();
        assert_eq!(
            (refused.status(), field_of(&refused)),
            (Some(422), Some("url")),
            "{url}"
        );
        // An alert destination is held to the same rules.
        let refused = api
            .create(&callback("https://example.com/x").on_failure(url), None)
            .await
            .unwrap_err();
        assert_eq!(
            (refused.status(), field_of(&refused)),
            (Some(422), Some("on_failure.url")),
            "{url}"
        );
    }
    // A name that resolves to loopback passes registration but is refused after DNS.
    let rx = Receiver::always(200).await;
    let url = format!("https://localhost:{}/rebind", rx.addr.port());
    let task = server.register(&callback(url)).await;
    let failed = server.wait_status(&task.id, Status::Failed, WAIT).await;
    let error = failed.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("destination refused"), "{failed:?}");
    assert_eq!(rx.received().len(), 0);
}

async fn a_batch_registers_each_task_and_a_bad_one_refuses_the_batch(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let api = server.api();
    let rx = Receiver::always(200).await;
    let count = || async { api.list(&ListParams::default()).await.unwrap().tasks.len() };
    let before = count().await;

    // One bad task refuses the whole batch, naming it; nothing is stored.
    let batch = |tasks: Vec<TaskRequest>| BatchRequest { tasks };
    let refused = api
        .create_batch(&batch(vec![
            callback(rx.url("/b/0")),
            callback(rx.url("/b/1")).delay("300000y"),
        ]))
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(422), "{refused}");
    assert_eq!(field_of(&refused), Some("tasks[1].delay"));
    let detail = &refused.problem().unwrap().detail;
    assert!(detail.starts_with("tasks[1].delay: "), "{detail}");
    let too_many = (0..101)
        .map(|i| callback(rx.url(&format!("/m/{i}"))))
        .collect();
    let refused = api.create_batch(&batch(too_many)).await.unwrap_err();
    assert_eq!(
        (refused.status(), field_of(&refused)),
        (Some(422), Some("tasks"))
    );
    // A field the request type cannot hold is sent as it is.
    let (status, problem) = server
        .post_raw(
            "/v1/tasks/batch",
            &json!({"tasks": [{"url": rx.url("/x"), "bogus": 1}]}),
        )
        .await;
    assert_eq!(
        (status, problem.and_then(|p| p.field)),
        (422, Some("tasks[0].bogus".to_string()))
    );
    assert_eq!(count().await, before, "nothing was stored");

    // A good batch: one result per task, in order; an idempotent repeat answers 200.
    let keyed = |i: usize| TaskRequest {
        idempotency_key: Some(format!("order-{}", 7 + i)),
        ..callback(rx.url(&format!("/b/{i}"))).delay("1s")
    };
    let first = api.create_batch(&batch(vec![keyed(0)])).await.unwrap();
    let answer = api
        .create_batch(&batch((0..3).map(keyed).collect()))
        .await
        .unwrap();
    let statuses: Vec<_> = answer.tasks.iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![200, 201, 201]);
    let id_of = |item: &BatchItemView| item.task.as_ref().unwrap().id;
    assert_eq!(id_of(&answer.tasks[0]), id_of(&first.tasks[0]));
    for r in &answer.tasks {
        server.wait_status(&id_of(r), Status::Succeeded, WAIT).await;
    }
    for i in 0..3 {
        assert_eq!(rx.count(&format!("/b/{i}")), 1);
    }
}

async fn canceling_by_key_spares_the_delivery_under_way(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let api = server.api();
    // The first reminder's call takes two seconds: the cancel arrives while it is under way.
    let rx = Receiver::start(|path, _| Reply {
        delay: Duration::from_millis(if path == "/slow" { 2000 } else { 0 }),
        ..Reply::status(200)
    })
    .await;
    let keyed = |path: &str, key: &str, delay: Option<&str>| {
        let task = callback(rx.url(path)).key(key);
        match delay {
            Some(d) => task.delay(d),
            None => task,
        }
    };
    let under_way = server.register(&keyed("/slow", "order-7", None)).await;
    let later = server
        .register(&keyed("/later", "order-7", Some("30s")))
        .await;
    let last = server
        .register(&keyed("/last", "order-7", Some("40s")))
        .await;
    let other = server
        .register(&keyed("/other", "order-8", Some("2s")))
        .await;
    assert_eq!(later.key.as_deref(), Some("order-7"));
    server
        .wait_status(&under_way.id, Status::Delivering, WAIT)
        .await;

    let outcome = api.cancel_by_key("order-7").await.unwrap();
    let mut canceled = outcome.canceled.clone();
    canceled.sort();
    let mut expected = vec![later.id, last.id];
    expected.sort();
    assert_eq!(canceled, expected);
    let not_canceled: Vec<_> = outcome
        .not_canceled
        .iter()
        .map(|t| (t.id, t.status))
        .collect();
    assert_eq!(not_canceled, vec![(under_way.id, Status::Delivering)]);
    assert!(!outcome.more);

    server
        .wait_status(&under_way.id, Status::Succeeded, WAIT)
        .await;
    server.wait_status(&other.id, Status::Succeeded, WAIT).await;
    assert_eq!(rx.count("/slow"), 1);
    assert_eq!(rx.count("/later") + rx.count("/last"), 0);
    let listed = api
        .list(&ListParams {
            key: Some(BusinessKey::parse("order-7").unwrap()),
            ..ListParams::default()
        })
        .await
        .unwrap();
    let statuses: Vec<Status> = listed.tasks.iter().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        vec![Status::Canceled, Status::Canceled, Status::Succeeded],
        "newest first"
    );

    for (query, field) in [("", "key"), ("?key=", "key")] {
        let res = server
            .request(reqwest::Method::DELETE, &format!("/v1/tasks{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 422, "{query}");
        let problem: Problem = res.json().await.unwrap();
        assert_eq!(problem.field.as_deref(), Some(field));
    }
}

async fn retention_removes_a_finished_task_but_not_a_pending_one(backend: Backend) {
    let server = Server::start(ServerOptions {
        retention: Some("2s"),
        ..ServerOptions::on(backend)
    });
    let api = server.api();
    let rx = Receiver::always(200).await;
    let done = server.register(&callback(rx.url("/now"))).await;
    let pending = server
        .register(&callback(rx.url("/later")).delay("1h"))
        .await;
    let done = done.id;
    server.wait_status(&done, Status::Succeeded, WAIT).await;
    wait_for("the finished task to be removed", WAIT, || async {
        let gone = api.get(&done).await.err()?;
        (gone.status() == Some(404)).then_some(())
    })
    .await;
    assert_eq!(server.task(&pending.id).await.status, Status::Scheduled);
    let page = api.list(&ListParams::default()).await.unwrap();
    let listed: Vec<TaskId> = page.tasks.iter().map(|t| t.id).collect();
    assert_eq!(listed, vec![pending.id]);
}

async fn a_200_that_does_not_say_success_is_retried(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    // Answers 200 every time, with "fail" until the third call.
    let rx = Receiver::start(|_, n| Reply {
        body: if n < 2 { "fail" } else { "success" }.into(),
        ..Reply::status(200)
    })
    .await;
    let task = server
        .register(
            &callback(rx.url("/says"))
                .expect_body("success")
                .retry(schedule_max(&["1s"], 5)),
        )
        .await;
    let done = server.wait_status(&task.id, Status::Succeeded, WAIT).await;
    assert_eq!(rx.count("/says"), 3);
    let attempts = done.attempts.as_deref().unwrap();
    let outcomes: Vec<AttemptOutcome> = attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            AttemptOutcome::Retrying,
            AttemptOutcome::Retrying,
            AttemptOutcome::Succeeded
        ]
    );
    assert_eq!(attempts[0].response.as_deref(), Some("fail"));
    assert!(attempts[0]
        .error
        .as_deref()
        .unwrap()
        .contains("did not match expect_body"));
}

async fn a_named_policy_applies_to_new_tasks_and_can_change(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let api = server.api();
    let rx = Receiver::always(500).await;
    let view = api
        .put_policy("fast", &schedule_max(&["1s"], 2).into())
        .await
        .unwrap();
    assert_eq!(view.retry.max_attempts, Some(2));
    let first = server
        .register(&callback(rx.url("/first")).policy("fast"))
        .await;
    assert_eq!(
        first.retry.max_attempts,
        Some(2),
        "copied in at registration"
    );
    server.wait_status(&first.id, Status::Failed, WAIT).await;
    assert_eq!(rx.count("/first"), 2);

    // Changed: new tasks take the new policy, the first keeps its copy.
    api.put_policy("fast", &schedule_max(&["1s"], 3).into())
        .await
        .unwrap();
    let second = server
        .register(&callback(rx.url("/second")).policy("fast"))
        .await;
    server.wait_status(&second.id, Status::Failed, WAIT).await;
    assert_eq!(rx.count("/second"), 3);
    assert_eq!(server.task(&first.id).await.retry.max_attempts, Some(2));
    let listed = api.policies().await.unwrap();
    assert_eq!(listed.policies[0].name, "fast");
    assert_eq!(listed.policies[0].retry.max_attempts, Some(3));

    // The tenant's `default` replaces the built-in default.
    api.put_policy("default", &schedule_max(&["1s"], 1).into())
        .await
        .unwrap();
    let plain = server.register(&callback(rx.url("/plain"))).await;
    assert_eq!(plain.retry.max_attempts, Some(1));

    // Refusals name the field; a deleted policy is gone.
    let zero = RetryRequest {
        max_attempts: Some(Some(0)),
        ..RetryRequest::default()
    };
    let refused = api.put_policy("fast", &zero.into()).await.unwrap_err();
    assert_eq!(
        (refused.status(), field_of(&refused)),
        (Some(422), Some("max_attempts"))
    );
    let refused = api
        .put_policy("no%20spaces", &RetryRequest::default().into())
        .await
        .unwrap_err();
    assert_eq!(
        (refused.status(), field_of(&refused)),
        (Some(422), Some("name"))
    );
    let refused = api
        .create(&callback(rx.url("/x")).policy("nope"), None)
        .await
        .unwrap_err();
    assert_eq!(
        (refused.status(), field_of(&refused)),
        (Some(422), Some("retry"))
    );
    api.delete_policy("fast").await.unwrap();
    let again = api.delete_policy("fast").await.unwrap_err();
    assert_eq!(again.status(), Some(404));
    let gone = api.policy("fast").await.unwrap_err();
    assert_eq!(gone.status(), Some(404));
}
