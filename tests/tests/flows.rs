//! End-to-end: flow limits on the real `boomerang serve`, on both backends, counted where
//! the calls arrive.

use std::time::{Duration, Instant};

use boomerang_core::domain::Status;
use boomerang_e2e::{
    callback, on_both_backends, Backend, Callback, Receiver, Reply, Server, ServerOptions,
};
use boomerang_http::task_request::FlowRequest;

const WAIT: Duration = Duration::from_secs(60);
/// How long the receiver holds each call.
const HOLD: Duration = Duration::from_millis(300);

on_both_backends!(a_flow_keeps_its_parallelism_and_its_rate_across_destinations);

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
    let flow = || FlowRequest {
        key: Some("partner-api".into()),
        rate: Some(4),
        period: Some("1s".into()),
        parallelism: Some(2),
    };
    let mut ids = Vec::new();
    for n in 0..12 {
        let rx = if n % 2 == 0 { &rx_a } else { &rx_b };
        let task = server
            .register(&callback(rx.url(&format!("/t/{n}"))).flow(flow()))
            .await;
        assert_eq!(task.flow.as_ref().map(|f| f.parallelism), Some(Some(2)));
        ids.push(task.id);
    }
    for id in &ids {
        let task = server.wait_status(id, Status::Succeeded, WAIT).await;
        assert_eq!(task.attempt, 1, "waiting for the flow is no attempt");
    }
    let mut arrivals: Vec<Instant> = (rx_a.received().into_iter())
        .chain(rx_b.received())
        .map(|r| r.at)
        .collect();
    arrivals.sort();
    assert_eq!(arrivals.len(), 12, "each task called once");
    // Parallelism 2: a slot frees only once its call is answered, so the third call
    // cannot arrive before the first was answered.
    for (first, third) in arrivals.iter().zip(arrivals.iter().skip(2)) {
        assert!(*third >= *first + HOLD, "more than two calls at once");
    }
    // Rate 4 per whole second: 12 starts need three windows, so they span more than one
    // second, and no second-long stretch holds more than two windows' worth.
    assert!(arrivals[11] - arrivals[0] > Duration::from_secs(1));
    for (first, ninth) in arrivals.iter().zip(arrivals.iter().skip(8)) {
        assert!(
            *ninth - *first > Duration::from_millis(900),
            "over the rate"
        );
    }
}
