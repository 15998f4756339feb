//! End-to-end: task templates through the API of the real `boomerang serve`, on both
//! backends: a template's settings reach the receiver, a task's own win, the `default`
//! template is every task's rule, and a change reaches only tasks registered after it.

use std::collections::BTreeMap;
use std::time::Duration;

use boomerang_api::request::{RetryField, TemplateRequest};
use boomerang_client::ClientError;
use boomerang_core::domain::Status;
use boomerang_e2e::{
    callback, header, on_every_backend, schedule_max, Backend, Callback, Receiver, Reply, Server,
    ServerOptions,
};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);

on_every_backend!(
    a_templates_settings_reach_the_receiver_and_a_tasks_own_win,
    bad_templates_and_unknown_names_are_refused_naming_the_field,
);

fn headers(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    )
}

fn field_of(e: &ClientError) -> Option<&str> {
    e.problem().and_then(|p| p.field.as_deref())
}

async fn a_templates_settings_reach_the_receiver_and_a_tasks_own_win(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let api = server.api();
    // `/hooks/ok` answers the tenant's rule for a success; `/hooks/plain` answers 200 "ok".
    let rx = Receiver::start(|path, _| Reply {
        body: if path == "/hooks/plain" {
            "ok"
        } else {
            "success"
        }
        .into(),
        ..Reply::status(200)
    })
    .await;
    let once = schedule_max(&["1s"], 1);
    let default = TemplateRequest {
        expect_body: Some("success".into()),
        retry: Some(RetryField::Inline(once.clone())),
        ..TemplateRequest::default()
    };
    api.put_template("default", &default).await.unwrap();
    let billing = TemplateRequest {
        url_base: Some(rx.url("/hooks")),
        method: Some("PUT".into()),
        headers: headers(&[("X-Team", "billing"), ("X-Env", "prod")]),
        timeout: Some("5s".parse().unwrap()),
        expect_body: Some("success".into()),
        ..TemplateRequest::default()
    };
    let stored = api.put_template("billing", &billing).await.unwrap();
    assert_eq!(
        stored.header_names,
        ["X-Env", "X-Team"],
        "names, never values"
    );
    assert!(stored.settings.headers.is_none());

    // A relative URL joins the base; the task's header replaces the template's of the
    // same name in any case; the rest is the template's.
    let a = server
        .register(&callback("ok").template("billing").header("x-env", "test"))
        .await;
    assert_eq!(
        (a.url.as_str(), a.method.as_str()),
        (rx.url("/hooks/ok").as_str(), "PUT")
    );
    assert_eq!(a.timeout, "5s");
    assert_eq!(a.expect_body.as_deref(), Some("success"));
    server.wait_status(&a.id, Status::Succeeded, WAIT).await;
    let got = &rx.received()[0];
    assert_eq!(got.path, "/hooks/ok");
    assert_eq!(header(got, "x-team"), "billing");
    assert_eq!(got.headers.get_all("x-env").iter().count(), 1);
    assert_eq!(header(got, "x-env"), "test");

    // No template named: the default's rule holds, and a body that breaks it fails the
    // task; a task's own `expect_body` wins over it.
    let b = server.register(&callback(rx.url("/hooks/plain"))).await;
    assert_eq!(b.expect_body.as_deref(), Some("success"));
    let failed = server.wait_status(&b.id, Status::Failed, WAIT).await;
    assert_eq!(failed.attempt, 1, "the default's retry policy");
    let c = server
        .register(&callback(rx.url("/hooks/plain")).expect_body("ok"))
        .await;
    server.wait_status(&c.id, Status::Succeeded, WAIT).await;

    // A change reaches tasks registered after it only.
    let patched = TemplateRequest {
        method: Some("PATCH".into()),
        ..billing
    };
    api.put_template("billing", &patched).await.unwrap();
    let d = server.register(&callback("/ok").template("billing")).await;
    assert_eq!(d.method, "PATCH");
    assert_eq!(server.task(&a.id).await.method, "PUT");
    let listed = api.templates().await.unwrap();
    let names: Vec<&str> = listed.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["billing", "default"]);
}

async fn bad_templates_and_unknown_names_are_refused_naming_the_field(backend: Backend) {
    let server = Server::start(ServerOptions::on(backend));
    let cases = [
        (json!({"timeout": "2m"}), "timeout"),
        (
            json!({"url": "https://a.example", "url_base": "https://b.example"}),
            "url",
        ),
        (json!({"url_base": "ftp://files.example"}), "url_base"),
        (json!({"bogus": 1}), "bogus"),
        (json!({"retry": {"max_attempts": 0}}), "retry.max_attempts"),
        (json!({"notify": "sometimes"}), "notify"),
        (json!({"on_failure": {"url": ""}}), "on_failure.url"),
    ];
    let put = reqwest::Method::PUT;
    server.refuses_naming(put, "/v1/templates/t", &cases).await;
    let api = server.api();
    let bad_name = api
        .put_template("no%20spaces", &TemplateRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        (bad_name.status(), field_of(&bad_name)),
        (Some(422), Some("name"))
    );
    assert_eq!(
        api.template("t").await.unwrap_err().status(),
        Some(404),
        "nothing stored"
    );

    let rx = Receiver::always(200).await;
    let unknown = api
        .create(&callback(rx.url("/x")).template("nope"), None)
        .await
        .unwrap_err();
    assert_eq!(
        (unknown.status(), field_of(&unknown)),
        (Some(422), Some("template"))
    );
    let (status, problem) = server
        .post_raw(
            "/v1/tasks/batch",
            &json!({"tasks": [{"url": rx.url("/x")}, {"url": rx.url("/y"), "template": "nope"}]}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(problem.unwrap().field.as_deref(), Some("tasks[1].template"));
    let relative = api.create(&callback("/x"), None).await.unwrap_err();
    assert_eq!(
        (relative.status(), field_of(&relative)),
        (Some(422), Some("url"))
    );

    api.put_template("t", &TemplateRequest::default())
        .await
        .unwrap();
    api.delete_template("t").await.unwrap();
    assert_eq!(
        api.delete_template("t").await.unwrap_err().status(),
        Some(404)
    );
    assert!(
        rx.received().is_empty(),
        "no refused registration was stored"
    );
}
