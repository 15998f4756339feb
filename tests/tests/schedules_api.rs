//! Schedules and replace-by-key through the API and the CLI of the real server, on both
//! backends: a cron every second in a non-UTC zone, paused, resumed and deleted; 100 rapid
//! replace registrations of one key; and each refusal naming its field.

use std::time::Duration;

use boomerang_api::request::{OnKey, TaskRequest};
use boomerang_api::view::ScheduleView;
use boomerang_api::view::TaskView;
use boomerang_client::ListParams;
use boomerang_core::domain::{BusinessKey, ScheduleId, Status};
use boomerang_e2e::{
    callback, on_every_backend, run_cli, wait_for, Backend, Receiver, Reply, Server, ServerOptions,
};

const WAIT: Duration = Duration::from_secs(30);

on_every_backend!(
    a_cron_every_second_in_a_zone_fires_each_second_until_paused_and_after_resume,
    rapid_replace_registrations_give_one_call_with_the_last_body,
    bad_schedules_and_replace_registrations_name_their_field,
);

/// The tenant's tasks of one schedule.
async fn occurrences(server: &Server, schedule: &ScheduleId) -> Vec<TaskView> {
    let params = ListParams {
        limit: Some(100),
        ..Default::default()
    };
    let page = server.api().list(&params).await.unwrap();
    page.tasks
        .into_iter()
        .filter(|t| t.schedule_id.as_ref() == Some(schedule))
        .collect()
}

async fn a_cron_every_second_in_a_zone_fires_each_second_until_paused_and_after_resume(
    backend: Backend,
) {
    let rx = Receiver::start(|_, _| Reply::status(200)).await;
    let server = Server::start(ServerOptions::on(backend));
    let env = [
        ("BOOMERANG_URL", server.base.as_str()),
        ("BOOMERANG_API_KEY", server.api_key.as_str()),
    ];
    let url = rx.url("/tick");
    let created = run_cli(
        &[
            "schedules",
            "create",
            &url,
            "--cron",
            "* * * * * *",
            "--timezone",
            "Asia/Kolkata",
            "--body",
            r#"{"tick":true}"#,
            "--json",
        ],
        &env,
    );
    assert_eq!(created.code, 0, "{created:?}");
    let schedule: ScheduleView = serde_json::from_str(&created.stdout).unwrap();
    assert_eq!(schedule.timezone.as_deref(), Some("Asia/Kolkata"));
    // Each call is its own occurrence (its own task), none repeated: at some
    // moment five or more have succeeded and the receiver has seen exactly
    // that many calls. An outcome is stored just after its call is answered,
    // so the two are compared until they agree; a repeated call never would.
    wait_for("five occurrences, one call each", WAIT, || async {
        let calls = rx.count("/tick");
        let done = occurrences(&server, &schedule.id)
            .await
            .into_iter()
            .filter(|t| t.status == Status::Succeeded)
            .count();
        (done >= 5 && calls == done && rx.count("/tick") == calls).then_some(())
    })
    .await;

    let paused = run_cli(
        &["schedules", "pause", &schedule.id.to_string(), "--json"],
        &env,
    );
    assert_eq!(paused.code, 0, "{paused:?}");
    // The pending occurrence is skipped when it comes due, and none follows.
    wait_for("the pending occurrence skipped", WAIT, || async {
        let all = occurrences(&server, &schedule.id).await;
        let skipped = all.iter().any(|t| t.status == Status::Canceled);
        let pending = all.iter().any(|t| t.status == Status::Scheduled);
        (skipped && !pending).then_some(())
    })
    .await;
    let before = rx.count("/tick");
    let resumed = run_cli(&["schedules", "resume", &schedule.id.to_string()], &env);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    wait_for("calls again after resume", WAIT, || async {
        (rx.count("/tick") >= before + 2).then_some(())
    })
    .await;

    let listed = run_cli(&["schedules", "list"], &env);
    assert!(
        listed.stdout.contains(&schedule.id.to_string()),
        "{listed:?}"
    );
    let deleted = run_cli(&["schedules", "delete", &schedule.id.to_string()], &env);
    assert_eq!(deleted.code, 0, "{deleted:?}");
    wait_for("nothing pending after delete", WAIT, || async {
        let all = occurrences(&server, &schedule.id).await;
        let pending = all
            .iter()
            .any(|t| matches!(t.status, Status::Scheduled | Status::Delivering));
        (!pending).then_some(())
    })
    .await;
    let gone = server.api().schedule(&schedule.id).await.unwrap_err();
    assert_eq!(gone.status(), Some(404));
}

async fn rapid_replace_registrations_give_one_call_with_the_last_body(backend: Backend) {
    let rx = Receiver::start(|_, _| Reply::status(200)).await;
    let server = Server::start(ServerOptions::on(backend));
    let key = format!("sync-{}", ulid::Ulid::new());
    let mut ids = std::collections::BTreeSet::new();
    let mut statuses = Vec::new();
    for n in 0..100 {
        let task = TaskRequest {
            key: Some(key.clone()),
            on_key: Some(OnKey::Replace),
            delay: Some("3s".parse().unwrap()),
            body: Some(serde_json::json!({ "n": n })),
            ..callback(rx.url("/debounced"))
        };
        let answer = server.api().create(&task, None).await.unwrap();
        statuses.push(answer.status);
        ids.insert(answer.body.id);
    }
    assert_eq!(ids.len(), 1, "one task for the key");
    assert_eq!(statuses[0], 201);
    assert!(statuses[1..].iter().all(|&s| s == 200), "{statuses:?}");
    let id = ids.into_iter().next().unwrap();
    server.wait_status(&id, Status::Succeeded, WAIT).await;
    let calls = rx.received();
    let calls: Vec<_> = calls.iter().filter(|r| r.path == "/debounced").collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].body.as_ref(),
        br#"{"n":99}"#,
        "the last registration's body"
    );
    let params = ListParams {
        key: Some(BusinessKey::parse(key).unwrap()),
        ..Default::default()
    };
    assert_eq!(server.api().list(&params).await.unwrap().tasks.len(), 1);
}

async fn bad_schedules_and_replace_registrations_name_their_field(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let url = "http://127.0.0.1:9/x";
    let cases = [
        (
            "/v1/schedules",
            serde_json::json!({"cron": "61 * * * *", "url": url}),
            "cron",
        ),
        (
            "/v1/schedules",
            serde_json::json!({"cron": "* * * * *", "timezone": "Mars/Olympus", "url": url}),
            "timezone",
        ),
        (
            "/v1/schedules",
            serde_json::json!({"every": "500ms", "url": url}),
            "every",
        ),
        (
            "/v1/schedules",
            serde_json::json!({"every": "1m", "start_at": "2031-01-01T00:00:00Z", "end_at": "2030-01-01T00:00:00Z", "url": url}),
            "end_at",
        ),
        ("/v1/schedules", serde_json::json!({"url": url}), "cron"),
        (
            "/v1/schedules",
            serde_json::json!({"cron": "0 0 30 2 *", "url": url}),
            "cron",
        ),
        (
            "/v1/schedules",
            serde_json::json!({"cron": "* * * * *", "delay": "1m", "url": url}),
            "delay",
        ),
        (
            "/v1/schedules",
            serde_json::json!({"cron": "* * * * *", "catch_up": "all", "url": url}),
            "catch_up",
        ),
        (
            "/v1/tasks",
            serde_json::json!({"on_key": "replace", "url": url}),
            "key",
        ),
        (
            "/v1/tasks",
            serde_json::json!({"on_key": "merge", "key": "k", "url": url}),
            "on_key",
        ),
        (
            "/v1/tasks",
            serde_json::json!({"max_delay": "1m", "url": url}),
            "max_delay",
        ),
        (
            "/v1/tasks/batch",
            serde_json::json!({"tasks": [{"on_key": "replace", "key": "k", "url": url}]}),
            "tasks[0].on_key",
        ),
    ];
    for (path, body, field) in cases {
        let response = server
            .request(reqwest::Method::POST, path)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 422, "{body}");
        let problem: serde_json::Value = response.json().await.unwrap();
        assert_eq!(problem["field"], field, "{body}: {problem}");
    }
}
