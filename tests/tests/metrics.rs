//! End-to-end: `GET /metrics` and `GET /v1/stats` on the real `boomerang serve` after a
//! scenario with real receivers: every counter moved as the tasks did.

use std::time::Duration;

use boomerang_e2e::{id_of, Backend, Receiver, Reply, Server, ServerOptions};
use reqwest::Method;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);

/// The value of one sample (`name` with its labels, as the exposition writes it).
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

async fn scrape(server: &Server) -> String {
    let res = server
        .request(Method::GET, "/metrics")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let content_type = res.headers()["content-type"].to_str().unwrap().to_string();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    res.text().await.unwrap()
}

#[tokio::test]
async fn the_counters_move_as_the_tasks_do() {
    let rx = Receiver::start(|path, n| match path {
        "/flaky" if n == 0 => Reply::status(500),
        "/down" => Reply::status(503),
        _ => Reply::status(200),
    })
    .await;
    let server = Server::start(ServerOptions::on(Backend::Embedded));
    let before = scrape(&server).await;
    assert_eq!(sample(&before, "boomerang_tasks_registered_total"), 0.0);

    let fast = json!({"schedule": ["1s"], "max_attempts": 2});
    let mut ids = Vec::new();
    for (path, retry) in [("/ok", &fast), ("/flaky", &fast), ("/down", &fast)] {
        let (status, task) = server
            .register(json!({"url": rx.url(path), "retry": retry}))
            .await;
        assert_eq!(status, 201, "{task}");
        ids.push(id_of(&task));
    }
    let (_, later) = server
        .register(json!({"url": rx.url("/later"), "delay": "1h"}))
        .await;
    let (status, _) = server
        .call(Method::DELETE, &format!("/v1/tasks/{}", id_of(&later)))
        .await;
    assert_eq!(status, 200);
    server.wait_status(&ids[0], "succeeded", WAIT).await;
    server.wait_status(&ids[1], "succeeded", WAIT).await;
    server.wait_status(&ids[2], "failed", WAIT).await;

    let text = scrape(&server).await;
    let expected = [
        ("boomerang_tasks_registered_total", 4.0),
        ("boomerang_tasks_delivered_total", 2.0),
        ("boomerang_tasks_retried_total", 2.0),
        ("boomerang_tasks_failed_total", 1.0),
        ("boomerang_tasks_canceled_total", 1.0),
        ("boomerang_attempts_total{outcome=\"succeeded\"}", 2.0),
        ("boomerang_attempts_total{outcome=\"retrying\"}", 2.0),
        ("boomerang_attempts_total{outcome=\"failed\"}", 1.0),
        ("boomerang_attempt_lateness_seconds_count", 5.0),
        ("boomerang_attempt_duration_seconds_count", 5.0),
        ("boomerang_tasks{status=\"succeeded\"}", 2.0),
        ("boomerang_tasks{status=\"failed\"}", 1.0),
        ("boomerang_tasks{status=\"canceled\"}", 1.0),
        ("boomerang_tasks{status=\"scheduled\"}", 0.0),
        ("boomerang_deliveries_in_flight", 0.0),
    ];
    for (name, value) in expected {
        assert_eq!(sample(&text, name), value, "{name} in\n{text}");
    }
    // Every registration and attempt was committed: at least one write per commit.
    let commits = sample(&text, "boomerang_store_commit_writes_count");
    let writes = sample(&text, "boomerang_store_commit_writes_sum");
    assert!(
        commits >= 1.0 && writes >= 4.0 + 5.0,
        "{commits} commits, {writes} writes"
    );
    assert!(sample(&text, "boomerang_store_commit_seconds_count") == commits);

    // The console's figures: the same tasks by state, and the same attempts in this hour.
    let (status, stats) = server.call(Method::GET, "/v1/stats").await;
    assert_eq!(status, 200, "{stats}");
    assert_eq!(
        stats["counts"],
        json!({"held": 0, "scheduled": 0, "delivering": 0, "succeeded": 2, "failed": 1,
               "canceled": 1})
    );
    let minutes = stats["deliveries"]["minutes"].as_array().unwrap();
    assert_eq!(minutes.len(), 60);
    let total = |field: &str| -> u64 { minutes.iter().map(|m| m[field].as_u64().unwrap()).sum() };
    assert_eq!(
        (total("attempts"), total("succeeded"), total("failed")),
        (5, 2, 3)
    );
    assert!(stats["deliveries"]["lateness_p99_ms"].as_i64().unwrap() >= 1);

    // Behind the API key, like the API.
    let anonymous = reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}
