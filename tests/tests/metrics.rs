//! End-to-end: `GET /metrics` and `GET /v1/stats` on the real `boomerang serve` after a
//! scenario with real receivers: every counter moved as the tasks did.

use std::time::Duration;

use boomerang_api::view::MinuteView;
use boomerang_core::domain::Status;
use boomerang_e2e::{
    callback, schedule_max, wait_for, Backend, Callback, Receiver, Reply, Server, ServerOptions,
};
use reqwest::Method;

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

    let mut ids = Vec::new();
    for path in ["/ok", "/flaky", "/down"] {
        let fast = schedule_max(&["1s"], 2);
        let task = server.register(&callback(rx.url(path)).retry(fast)).await;
        ids.push(task.id);
    }
    let later = server
        .register(&callback(rx.url("/later")).delay("1h"))
        .await;
    let canceled = server.api().cancel(&later.id).await.unwrap();
    assert_eq!(canceled.status, Status::Canceled);
    server.wait_status(&ids[0], Status::Succeeded, WAIT).await;
    server.wait_status(&ids[1], Status::Succeeded, WAIT).await;
    server.wait_status(&ids[2], Status::Failed, WAIT).await;

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
        ("boomerang_calls_given_back_total", 0.0),
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
    let stats = server.api().stats().await.unwrap();
    let counts: Vec<(String, u64)> = stats.counts.unwrap().into_iter().collect();
    let expected: Vec<(String, u64)> = [
        ("canceled", 1),
        ("delivering", 0),
        ("failed", 1),
        ("held", 0),
        ("scheduled", 0),
        ("succeeded", 2),
    ]
    .map(|(s, n)| (s.to_string(), n))
    .into();
    assert_eq!(counts, expected);
    let deliveries = stats.deliveries.unwrap();
    let minutes = &deliveries.minutes;
    assert_eq!(minutes.len(), 60);
    let total = |field: fn(&MinuteView) -> u64| -> u64 { minutes.iter().map(field).sum() };
    assert_eq!(
        (
            total(|m| m.attempts),
            total(|m| m.succeeded),
            total(|m| m.failed)
        ),
        (5, 2, 3)
    );
    assert!(deliveries.lateness_p99_ms.unwrap() >= 1);

    // Behind the API key, like the API.
    let anonymous = reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}

#[tokio::test]
async fn a_destination_gets_at_most_its_limit_of_calls_and_the_gauges_show_the_rest() {
    const HOLD: Duration = Duration::from_millis(1500);
    let rx = Receiver::start(|_, _| Reply {
        delay: HOLD,
        ..Reply::status(200)
    })
    .await;
    let server = Server::start(ServerOptions {
        destination_limit: Some(2),
        ..ServerOptions::on(Backend::Embedded)
    });
    let mut ids = Vec::new();
    for n in 0..6 {
        let task = server.register(&callback(rx.url(&format!("/t/{n}")))).await;
        ids.push(task.id);
    }
    // The embedded server's one tenant is `default`.
    let destination = format!("{{tenant=\"default\",destination=\"http://{}\"}}", rx.addr);
    let in_flight = format!("boomerang_destination_in_flight{destination}");
    let waiting = format!("boomerang_destination_waiting{destination}");
    wait_for("two calls in flight and four waiting", WAIT, || async {
        let text = scrape(&server).await;
        let busy = text.contains(&in_flight)
            && sample(&text, &in_flight) == 2.0
            && sample(&text, &waiting) == 4.0;
        busy.then_some(())
    })
    .await;
    // The tenant sees its own destination in its stats (the console's panel).
    let api = server.api();
    let shown = wait_for("the destination in the tenant's stats", WAIT, || async {
        let stats = api.stats().await.unwrap();
        let destinations = stats.destinations.expect("the local server keeps them");
        destinations
            .into_iter()
            .find(|d| d.in_flight == 2 && d.waiting == 4)
    })
    .await;
    assert_eq!(shown.destination, format!("http://{}", rx.addr));
    assert_eq!(shown.limit, 2);
    for id in &ids {
        let task = server.wait_status(id, Status::Succeeded, WAIT).await;
        assert_eq!(task.attempt, 1, "waiting for the destination is no attempt");
    }
    // A slot frees only when its call is answered: the third call cannot arrive before
    // the first was answered, and so on.
    let mut arrivals: Vec<_> = rx.received().iter().map(|r| r.at).collect();
    arrivals.sort();
    assert_eq!(arrivals.len(), 6);
    for pair in arrivals.iter().zip(arrivals.iter().skip(2)) {
        assert!(*pair.1 >= *pair.0 + HOLD, "more than two calls at once");
    }
    wait_for("the idle destination to leave the gauges", WAIT, || async {
        (!scrape(&server).await.contains(&in_flight)).then_some(())
    })
    .await;
}

/// On AWS a tenant may have a destination limit of its own (`boomerang tenants
/// destination-limit`), which replaces the server's: counted at the receiver, one call at a
/// time.
#[tokio::test]
async fn a_tenants_own_destination_limit_replaces_the_servers() {
    // Long enough that the four calls (one at a time) outlast a slow first look at the
    // stats on a loaded machine: the destination shows only while it has calls.
    const HOLD: Duration = Duration::from_secs(1);
    let rx = Receiver::start(|_, _| Reply {
        delay: HOLD,
        ..Reply::status(200)
    })
    .await;
    let server = Server::start(ServerOptions::on(Backend::Aws));
    server.set_tenant_destination_limit(1);
    let mut ids = Vec::new();
    for n in 0..4 {
        let task = server.register(&callback(rx.url(&format!("/t/{n}")))).await;
        ids.push(task.id);
    }
    let shown = wait_for("the tenant's limit in its stats", WAIT, || async {
        let stats = server.api().stats().await.unwrap();
        stats.destinations.unwrap_or_default().into_iter().next()
    })
    .await;
    assert_eq!(shown.limit, 1);
    for id in &ids {
        server.wait_status(id, Status::Succeeded, WAIT).await;
    }
    let mut arrivals: Vec<_> = rx.received().into_iter().map(|r| r.at).collect();
    arrivals.sort();
    assert_eq!(arrivals.len(), 4);
    for (first, second) in arrivals.iter().zip(arrivals.iter().skip(1)) {
        assert!(*second >= *first + HOLD, "two calls at once");
    }
}
