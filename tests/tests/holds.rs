//! End-to-end: held tasks (callbacks bound to the caller's transaction) from the real
//! `boomerang serve` to real receivers on loopback, on the embedded backend and on the
//! AWS backend against the emulators.

use std::time::Duration;

use boomerang_api::request::HoldRequest;
use boomerang_api::view::KeyedStatusView;
use boomerang_client::ListParams;
use boomerang_core::domain::{CheckBody, OnUnknown, Status, TaskId};
use boomerang_e2e::{
    callback, header, on_every_backend, status_codes, wait_for, Backend, Callback, Receiver, Reply,
    Server, ServerOptions,
};
use chrono::{DateTime, Utc};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);

on_every_backend!(
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

/// A hold of `timeout`, asking `check_url` if given.
fn hold(timeout: &str, check_url: Option<String>) -> HoldRequest {
    HoldRequest {
        timeout: Some(timeout.parse().expect("a duration")),
        check_url,
        ..HoldRequest::default()
    }
}

/// [`hold`] with `on_unknown: release`.
fn hold_releasing(timeout: &str, check_url: Option<String>) -> HoldRequest {
    HoldRequest {
        on_unknown: Some(OnUnknown::Release),
        ..hold(timeout, check_url)
    }
}

/// A time, to the millisecond (what every store keeps).
fn millis(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

async fn a_task_released_before_its_timeout_is_delivered_once_on_time(backend: Backend) {
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions::on(backend));
    let api = server.api();
    // The caller's pattern: the order id as Idempotency-Key and business key.
    let created = api
        .create(
            &callback(rx.url("/paid"))
                .delay("2s")
                .key("order-42")
                .hold(hold("30s", Some(rx.url("/tx")))),
            Some("order-42"),
        )
        .await
        .unwrap();
    assert_eq!(created.status, 201);
    let task = created.body;
    let id = task.id;
    assert_eq!(task.status, Status::Held);
    let shown = task.hold.as_ref().unwrap();
    assert_eq!(
        (
            shown.timeout.as_str(),
            shown.check_url.clone(),
            shown.on_unknown,
            shown.max_checks
        ),
        ("30s", Some(rx.url("/tx")), OnUnknown::Cancel, 20)
    );
    assert!(task.check_at.is_some());
    let held = api
        .list(&ListParams {
            status: Some(Status::Held),
            ..ListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(held.tasks[0].id, id, "{held:?}");

    let released = api.release(&id).await.unwrap();
    assert_eq!(released.status, Status::Scheduled);
    assert!(released.check_at.is_none());
    let done = server.wait_status(&id, Status::Succeeded, WAIT).await;
    let attempt = &done.attempts.as_deref().unwrap()[0];
    // On time: the delay counts from registration, not from the release.
    let due = millis(task.created_at) + chrono::Duration::seconds(2);
    assert_eq!(millis(attempt.scheduled_at), due);
    assert!(millis(attempt.started_at) >= due);
    assert_eq!(rx.count("/paid"), 1);
    assert_eq!(rx.count("/tx"), 0, "released in time: never asked");

    let again = api.release(&id).await.unwrap();
    assert_eq!(again.status, Status::Succeeded);
    assert_eq!(
        rx.count("/paid"),
        1,
        "a repeated release delivers nothing more"
    );

    // Released by the business key.
    let other = server
        .register(
            &callback(rx.url("/other"))
                .key("order-43")
                .hold(hold("30s", None)),
        )
        .await
        .id;
    let by_key = api.release_by_key("order-43").await.unwrap();
    assert_eq!(by_key.released, vec![other]);
    server.wait_status(&other, Status::Succeeded, WAIT).await;
    let by_key = api.release_by_key("order-43").await.unwrap();
    assert!(by_key.released.is_empty());
    assert_eq!(
        statuses(&by_key.not_released),
        vec![(other, Status::Succeeded)]
    );
}

fn statuses(tasks: &[KeyedStatusView]) -> Vec<(TaskId, Status)> {
    tasks.iter().map(|t| (t.id, t.status)).collect()
}

async fn a_rolled_back_task_is_never_delivered_and_a_late_release_is_refused(backend: Backend) {
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions::on(backend));
    let api = server.api();
    let rolled_back = || {
        callback(rx.url("/rolled-back"))
            .delay("1s")
            .hold(hold_releasing("30s", None))
    };
    let id = server.register(&rolled_back()).await.id;
    let canceled = api.cancel(&id).await.unwrap();
    assert_eq!(canceled.status, Status::Canceled);
    let refused = api.release(&id).await.unwrap_err();
    assert_eq!(refused.status(), Some(409), "{refused}");
    assert!(refused.problem().unwrap().detail.contains("canceled"));

    // Canceled by the business key, too.
    let keyed = server.register(&rolled_back().key("order-9")).await;
    let by_key = api.cancel_by_key("order-9").await.unwrap();
    assert_eq!(by_key.canceled, vec![keyed.id]);

    // A task registered after them, due at the same time, is delivered; they never are.
    let marker = server
        .register(&callback(rx.url("/marker")).delay("1s"))
        .await;
    server
        .wait_status(&marker.id, Status::Succeeded, WAIT)
        .await;
    assert_eq!(rx.count("/rolled-back"), 0);
    assert_eq!(server.task(&id).await.status, Status::Canceled);
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
    let held = |name: &str, hold: HoldRequest| {
        callback(rx.url(&format!("/{name}")))
            .key(name)
            .metadata("order", name)
            .hold(hold)
    };
    let mut ids = Vec::new();
    for (name, hold) in [
        ("slow", hold("1s", Some(rx.url("/tx-slow")))),
        ("cancel", hold_releasing("1s", Some(rx.url("/tx-cancel")))),
        ("gone", hold_releasing("1s", Some(rx.url("/tx-gone")))),
        (
            "down",
            HoldRequest {
                max_checks: Some(2),
                ..hold_releasing("1s", Some(rx.url("/tx-down")))
            },
        ),
        ("silent", hold("1s", None)),
    ] {
        ids.push(server.register(&held(name, hold)).await.id);
    }

    // Two failed checks, then "release": delivered once, every check on record.
    let slow = server.wait_status(&ids[0], Status::Succeeded, WAIT).await;
    let codes: Vec<Option<u16>> = slow.checks.iter().map(|c| c.status_code).collect();
    assert_eq!(codes, [Some(500), Some(500), Some(200)]);
    assert_eq!(slow.checks[2].decision.as_deref(), Some("release"));
    assert_eq!(slow.checks[0].error.as_deref(), Some("HTTP 500"));
    assert_eq!(status_codes(&slow), vec![Some(200)]);
    assert_eq!(rx.count("/slow"), 1);
    let asked = rx
        .received()
        .into_iter()
        .find(|r| r.path == "/tx-slow")
        .unwrap();
    assert!(server.signed(&asked));
    assert_eq!(
        header(&asked, "boomerang-attempt"),
        "0",
        "a check call says attempt 0, as documented"
    );
    let body: CheckBody = serde_json::from_slice(&asked.body).unwrap();
    assert_eq!(body.task_id, ids[0]);
    assert_eq!(body.key.as_deref(), Some("slow"));
    assert_eq!(
        body.metadata,
        [("order".to_string(), "slow".to_string())].into()
    );
    assert_eq!(body.check, 1);

    // "cancel" and 404 cancel, whatever on_unknown says.
    for id in &ids[1..3] {
        let task = server.wait_status(id, Status::Canceled, WAIT).await;
        assert_eq!(task.checks.len(), 1);
    }
    // Never answered: on_unknown after max_checks.
    let down = server.wait_status(&ids[3], Status::Succeeded, WAIT).await;
    assert_eq!(down.checks.len(), 2);
    assert_eq!(rx.count("/tx-down"), 2);
    // Nobody to ask: on_unknown (cancel by default) at the timeout.
    let silent = server.wait_status(&ids[4], Status::Canceled, WAIT).await;
    assert!(silent.checks.is_empty());
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
    let id = server
        .register(&callback(rx.url("/hook")).hold(hold("1s", Some(rx.url("/tx")))))
        .await
        .id;
    wait_for("the check call", WAIT, || async {
        (rx.count("/tx") > 0).then_some(())
    })
    .await;
    let mut releases = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let (api, id) = (server.api(), id);
        releases.spawn(async move {
            match api.release(&id).await {
                Ok(_) => Some(200),
                Err(e) => e.status(),
            }
        });
    }
    let answers = releases.join_all().await;
    let first = answers[0];
    assert!(
        answers.iter().all(|&a| a == first),
        "one outcome for every release: {answers:?}"
    );
    let end = match first {
        Some(200) => Status::Succeeded,
        Some(409) => Status::Canceled,
        other => panic!("release answered {other:?}"),
    };
    let task = server.wait_status(&id, end, WAIT).await;
    if end == Status::Succeeded {
        assert!(task.checks.is_empty(), "the check's cancel lost");
        // Anything more would come at once: a marker delivered after it shows nothing did.
        let marker = server.register(&callback(rx.url("/marker"))).await;
        server
            .wait_status(&marker.id, Status::Succeeded, WAIT)
            .await;
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
    let checking = server
        .register(&callback(rx.url("/x")).hold(hold("1s", Some(rx.url("/tx")))))
        .await
        .id;
    let waiting = server
        .register(&callback(rx.url("/y")).hold(hold("5s", Some(rx.url("/ty")))))
        .await
        .id;
    wait_for("the first check call", WAIT, || async {
        (rx.count("/tx") == 1).then_some(())
    })
    .await;
    assert_eq!(server.task(&waiting).await.status, Status::Held);
    server.kill9_and_restart();

    let x = server.wait_status(&checking, Status::Succeeded, WAIT).await;
    let y = server.wait_status(&waiting, Status::Succeeded, WAIT).await;
    assert!(rx.count("/tx") >= 2, "the interrupted check is made again");
    let last = x.checks.last().unwrap();
    assert_eq!(last.decision.as_deref(), Some("release"));
    assert_eq!(y.checks[0].decision.as_deref(), Some("release"));
    assert_eq!((rx.count("/x"), rx.count("/y")), (1, 1));
}
