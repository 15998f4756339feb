//! End-to-end: flow limits on the real `boomerang serve`, on both backends, counted where
//! the calls arrive.

use std::time::{Duration, Instant};

use boomerang_api::request::{FlowRequest, PolicyRequest};
use boomerang_api::view::FlowsView;
use boomerang_core::domain::Status;
use boomerang_e2e::{
    callback, on_every_backend, run_cli, schedule_max, wait_for, Backend, Callback, Receiver,
    Reply, Server, ServerOptions,
};

const WAIT: Duration = Duration::from_secs(60);
/// How long the receiver holds each call: short enough that two slots would allow 20
/// calls a second, five times the flow's rate, so the rate is what the checks see.
const HOLD: Duration = Duration::from_millis(100);

on_every_backend!(
    a_flow_keeps_its_parallelism_and_its_rate_across_destinations,
    a_paused_flow_holds_its_tasks_until_resumed_and_lists_them_waiting,
);

fn partner_flow() -> FlowRequest {
    FlowRequest {
        key: Some("partner-api".into()),
        rate: Some(4),
        period: Some("1s".parse().unwrap()),
        parallelism: Some(2),
    }
}

/// Arrival times at the receivers, in order.
fn arrivals(receivers: &[&Receiver]) -> Vec<Instant> {
    let mut at: Vec<Instant> = receivers
        .iter()
        .flat_map(|rx| rx.received())
        .map(|r| r.at)
        .collect();
    at.sort();
    at
}

/// Parallelism 2 and rate 4 per whole second, as the receivers saw them.
fn assert_within_partner_flow(arrivals: &[Instant]) {
    // A slot frees only once its call is answered, so the third call cannot arrive before
    // the first was answered.
    for (first, third) in arrivals.iter().zip(arrivals.iter().skip(2)) {
        assert!(*third >= *first + HOLD, "more than two calls at once");
    }
    // Windows are whole seconds. Nine starts take three windows, so they span more than a
    // second, and n starts more than (n / 4 - 2) seconds, less a margin for how long each
    // call takes to arrive after its start.
    let margin = Duration::from_millis(200);
    for (first, ninth) in arrivals.iter().zip(arrivals.iter().skip(8)) {
        assert!(
            *ninth - *first > Duration::from_secs(1) - margin,
            "over the rate"
        );
    }
    let windows = arrivals.len().div_ceil(4) as u32;
    let span = arrivals[arrivals.len() - 1] - arrivals[0];
    assert!(
        span > Duration::from_secs(1) * (windows - 2) - margin,
        "over the rate"
    );
}

async fn a_flow_keeps_its_parallelism_and_its_rate_across_destinations(backend: Backend) {
    // Two receivers: the flow's limits are the key's, whatever the destination.
    let hold = || Reply {
        delay: HOLD,
        ..Reply::status(200)
    };
    let (rx_a, rx_b) = (
        Receiver::start(move |_, _| hold()).await,
        Receiver::start(move |_, _| hold()).await,
    );
    let server = Server::start(ServerOptions::on(backend));
    let mut ids = Vec::new();
    for n in 0..12 {
        let rx = if n % 2 == 0 { &rx_a } else { &rx_b };
        let task = server
            .register(&callback(rx.url(&format!("/t/{n}"))).flow(partner_flow()))
            .await;
        assert_eq!(task.flow.as_ref().map(|f| f.parallelism), Some(Some(2)));
        ids.push(task.id);
    }
    for id in &ids {
        let task = server.wait_status(id, Status::Succeeded, WAIT).await;
        assert_eq!(task.attempt, 1, "waiting for the flow is no attempt");
    }
    let arrivals = arrivals(&[&rx_a, &rx_b]);
    assert_eq!(arrivals.len(), 12, "each task called once");
    assert_within_partner_flow(&arrivals);
}

/// Three `serve --backend aws` workers on one table and timer queue: the flow's counters
/// are in the table, so its limits hold across them.
#[tokio::test]
async fn a_flow_holds_across_three_aws_workers() {
    let rx = Receiver::start(|_, _| Reply {
        delay: HOLD,
        ..Reply::status(200)
    })
    .await;
    let first = Server::start(ServerOptions::on(Backend::Aws));
    let _others = [first.another_worker(), first.another_worker()];
    let mut ids = Vec::new();
    for n in 0..24 {
        let task = first
            .register(&callback(rx.url(&format!("/t/{n}"))).flow(partner_flow()))
            .await;
        ids.push(task.id);
    }
    let mut workers = std::collections::BTreeSet::new();
    for id in &ids {
        let task = first.wait_status(id, Status::Succeeded, WAIT).await;
        let attempts = task.attempts.unwrap_or_default();
        assert_eq!(attempts.len(), 1, "waiting for the flow is no attempt");
        workers.extend(attempts.into_iter().filter_map(|a| a.worker));
    }
    assert!(
        workers.len() >= 2,
        "one worker delivered everything: {workers:?}"
    );
    let arrivals = arrivals(&[&rx]);
    assert_eq!(arrivals.len(), 24, "each task called once");
    assert_within_partner_flow(&arrivals);
}

/// A flow named by a policy is paused through the API: its tasks wait (listed as waiting,
/// nothing called) until it is resumed, which sends them at once, well before a paused
/// flow's tasks would look again by themselves (a minute). The CLI sees the same.
async fn a_paused_flow_holds_its_tasks_until_resumed_and_lists_them_waiting(backend: Backend) {
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions::on(backend));
    let api = server.api();
    // A key with a slash and a space: one path segment, percent-encoded.
    let key = "batch/eu west";
    let paused = api.pause_flow(key).await.unwrap();
    assert!(paused.paused && paused.key == key, "{paused:?}");
    let policy = PolicyRequest {
        flow: Some(FlowRequest {
            key: Some(key.into()),
            parallelism: Some(1),
            ..FlowRequest::default()
        }),
        ..schedule_max(&["1s"], 3).into()
    };
    let stored = api.put_policy("paced", &policy).await.unwrap();
    assert_eq!(stored.flow.as_ref().map(|f| f.key.as_str()), Some(key));
    let mut ids = Vec::new();
    for n in 0..3 {
        let task = server
            .register(&callback(rx.url(&format!("/p/{n}"))).policy("paced"))
            .await;
        assert_eq!(task.flow.as_ref().map(|f| f.key.as_str()), Some(key));
        ids.push(task.id);
    }
    let listed = wait_for("three tasks waiting in the paused flow", WAIT, || async {
        let flows = api.flows().await.unwrap().flows;
        flows.into_iter().find(|f| f.key == key && f.waiting == 3)
    })
    .await;
    assert!(listed.paused);
    assert_eq!(
        rx.received().len(),
        0,
        "a paused flow's tasks are not called"
    );

    let env = [
        ("BOOMERANG_URL", server.base.as_str()),
        ("BOOMERANG_API_KEY", server.api_key.as_str()),
    ];
    let cli = run_cli(&["flows", "list", "--json"], &env);
    assert_eq!(cli.code, 0, "{cli:?}");
    let shown: FlowsView = serde_json::from_str(&cli.stdout).unwrap();
    assert!(shown
        .flows
        .iter()
        .any(|f| f.key == key && f.paused && f.waiting == 3));

    let resumed = run_cli(&["flows", "resume", key], &env);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(resumed.stdout.starts_with("running"), "{resumed:?}");
    for id in &ids {
        let task = server
            .wait_status(id, Status::Succeeded, Duration::from_secs(20))
            .await;
        assert_eq!(task.attempt, 1, "waiting in a paused flow is no attempt");
    }
    let flow = api.flow(key).await.unwrap();
    assert_eq!((flow.paused, flow.waiting), (false, 0));

    let refused = api.flow(&"k".repeat(300)).await.unwrap_err();
    assert_eq!(refused.status(), Some(422));
    let problem = refused.problem().unwrap();
    assert_eq!(problem.field.as_deref(), Some("key"));
    // The field is named once: `key: must be …`, not `key: key: must be …`.
    assert!(
        problem.detail.starts_with("key: must be 1 to"),
        "{}",
        problem.detail
    );
}
