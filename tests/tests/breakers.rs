//! End-to-end: circuit breakers through the API of the real `boomerang serve`, on both
//! backends: a destination that keeps failing is opened and left alone but for one probe
//! at a time, using up no attempts, and a probe's success closes it; each change sends a
//! signed alert; an operator opens and closes one by hand; bad settings are refused.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use boomerang_api::request::BreakerSettingsRequest;
use boomerang_core::domain::{BreakerAlertBody, Status};
use boomerang_e2e::{
    callback, on_every_backend, schedule_max, wait_for, Backend, Callback, Receiver, Reply, Server,
    ServerOptions,
};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

on_every_backend!(
    a_failing_destination_opens_waits_without_attempts_and_a_probe_closes_it,
    an_operator_opens_and_closes_a_breaker_and_bad_settings_are_refused,
);

/// The breaker alerts `alerts_rx` got, in order, each checked as signed. (Alerts go to a
/// receiver of their own: one at the failing destination would wait for its breaker, and
/// its answer would close it.)
fn alerts(server: &Server, alerts_rx: &Receiver) -> Vec<BreakerAlertBody> {
    (alerts_rx.received().into_iter())
        .map(|r| {
            assert!(server.signed(&r), "signed like every call");
            serde_json::from_slice(&r.body).expect("an alert is JSON")
        })
        .collect()
}

async fn wait_alerts(server: &Server, rx: &Receiver, n: usize) -> Vec<BreakerAlertBody> {
    wait_for("the breaker alerts", WAIT, || async {
        let got = alerts(server, rx);
        (got.len() >= n).then_some(got)
    })
    .await
}

fn settings(failures: i64, first_probe: &str) -> BreakerSettingsRequest {
    BreakerSettingsRequest {
        failures: Some(failures),
        span: Some("0s".parse().unwrap()),
        first_probe: Some(first_probe.parse().unwrap()),
        max_probe: Some(first_probe.parse().unwrap()),
    }
}

async fn a_failing_destination_opens_waits_without_attempts_and_a_probe_closes_it(
    backend: Backend,
) {
    let down = Arc::new(AtomicBool::new(true));
    let rx = {
        let down = down.clone();
        Receiver::start(move |path, _| match path {
            "/down" if down.load(Ordering::SeqCst) => Reply::status(503),
            _ => Reply::status(200),
        })
        .await
    };
    let alerts_rx = Receiver::always(200).await;
    let mut options = ServerOptions::on(backend);
    options.alert_url = Some(alerts_rx.url("/alerts"));
    let server = Server::start(options);
    let api = server.api();
    api.put_breaker_settings(&settings(3, "2s")).await.unwrap();

    let tasks = 5;
    let mut ids = Vec::new();
    for _ in 0..tasks {
        let task = callback(rx.url("/down")).retry(schedule_max(&["1s"], 50));
        ids.push(server.register(&task).await.id);
    }
    let opened = wait_for("the breaker to open", WAIT, || async {
        let open = api.breakers().await.unwrap().open;
        (open.len() == 1).then(|| open[0].clone())
    })
    .await;
    assert_eq!(opened.destination, rx.url("").trim_end_matches('/'));
    assert!(!opened.by_hand && opened.next_probe_at.is_some());
    let calls_at_open = rx.count("/down");
    assert!(calls_at_open >= 3);

    // While it is open, the tasks' retries wait: only probes call, one at a time.
    let probing = wait_for("two probes to fail", WAIT, || async {
        let open = api.breakers().await.unwrap().open;
        open.first().filter(|b| b.probes_failed >= 2).cloned()
    })
    .await;
    let probes = probing.probes_failed as usize;
    let during = rx.count("/down") - calls_at_open;
    assert!(
        during <= probes + 1,
        "{during} calls while open, {probes} probes"
    );
    let mut attempts = 0;
    for id in &ids {
        attempts += server.task(id).await.attempts.map_or(0, |a| a.len());
    }
    assert!(
        attempts <= calls_at_open + probes + 1,
        "attempts used while open: {attempts} for {calls_at_open} calls and {probes} probes"
    );
    let stats: serde_json::Value = server
        .request(reqwest::Method::GET, "/v1/stats")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["open_breakers"][0]["state"], "open");

    // Up again: the next probe closes it, and every task is delivered.
    down.store(false, Ordering::SeqCst);
    for id in &ids {
        server.wait_status(id, Status::Succeeded, WAIT).await;
    }
    assert!(api.breakers().await.unwrap().open.is_empty());
    let got = wait_alerts(&server, &alerts_rx, 2).await;
    let kinds: Vec<&str> = got.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(kinds, ["destination.opened", "destination.closed"]);
    assert_eq!(got[0].destination, opened.destination);
    assert_eq!(got[0].next_probe_at, opened.next_probe_at);
}

async fn an_operator_opens_and_closes_a_breaker_and_bad_settings_are_refused(backend: Backend) {
    let alerts_rx = Receiver::always(200).await;
    let mut options = ServerOptions::on(backend);
    options.alert_url = Some(alerts_rx.url("/alerts"));
    let server = Server::start(options);
    let api = server.api();
    let other = Receiver::always(200).await;

    let open = api
        .set_breaker(&other.url("/any/path"), true)
        .await
        .unwrap();
    assert_eq!((open.state.as_str(), open.by_hand), ("open", true));
    assert_eq!(open.next_probe_at, None, "no probe while opened by hand");
    let task = server.register(&callback(other.url("/held-back"))).await;
    let got = wait_alerts(&server, &alerts_rx, 1).await;
    assert_eq!(
        (got[0].kind.as_str(), got[0].by_hand),
        ("destination.opened", true)
    );

    let closed_at = chrono::Utc::now();
    let closed = api.set_breaker(&other.url("/"), false).await.unwrap();
    assert_eq!(closed.state, "closed");
    let done = server.wait_status(&task.id, Status::Succeeded, WAIT).await;
    let started = done.attempts.as_ref().unwrap()[0].started_at;
    assert!(
        started >= closed_at,
        "called at {started}, closed at {closed_at}"
    );
    assert_eq!(done.attempt, 1, "the wait used up no attempt");
    let got = wait_alerts(&server, &alerts_rx, 2).await;
    assert_eq!(got[1].kind, "destination.closed");
    let again = api.set_breaker(&other.url("/"), false).await.unwrap();
    assert_eq!(
        again.state, "closed",
        "closing a closed breaker changes nothing"
    );

    let cases = [
        (json!({"failures": 0}), "failures"),
        (json!({"span": "2days"}), "span"),
        (
            json!({"first_probe": "1m", "max_probe": "30s"}),
            "max_probe",
        ),
        (json!({"span": "soon"}), "span"),
        (json!({"bogus": 1}), "bogus"),
    ];
    let put = reqwest::Method::PUT;
    server
        .refuses_naming(put, "/v1/breakers/settings", &cases)
        .await;
    let (status, problem) = server
        .post_raw(
            "/v1/breakers/open",
            &json!({"destination": "ftp://x.example"}),
        )
        .await;
    assert_eq!(
        (status, problem.unwrap().field.as_deref()),
        (422, Some("destination"))
    );
    let defaults = api.breakers().await.unwrap().settings;
    assert_eq!((defaults.failures, defaults.span.as_str()), (20, "1m"));
}
