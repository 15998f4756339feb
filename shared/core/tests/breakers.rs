//! A destination's circuit breaker on a manual clock: failures in a row open it, an open
//! one defers deliveries without using up attempts, one probe at a time tests it, and a
//! probe's success closes it; each change is counted once.

use boomerang_core::domain::{Breaker, BreakerSettings};
use boomerang_core::testing::harness::*;

/// Opens after 2 failures in a row (spanning no time); probes every 30 s.
fn settings() -> BreakerSettings {
    let probe = Some(Duration::from_secs(30));
    BreakerSettings::new(Some(2), Some(Duration::ZERO), probe, probe).unwrap()
}

fn changes(h: &Harness) -> Vec<MetricEvent> {
    let events = h.metrics.0.lock().unwrap();
    (events.iter())
        .filter(|e| matches!(e, MetricEvent::BreakerOpened | MetricEvent::BreakerClosed))
        .copied()
        .collect()
}

async fn attempts(h: &Harness, task: &boomerang_core::domain::Task) -> usize {
    h.engine
        .get(&h.tenant, &task.id)
        .await
        .unwrap()
        .attempts
        .len()
}

async fn open_breaker(h: &Harness) -> Option<Breaker> {
    let open = h.engine.open_breakers(&h.tenant).await.unwrap();
    open.into_iter().next().map(|(_, breaker)| breaker)
}

#[tokio::test]
async fn an_open_destination_waits_without_attempts_until_a_probe_succeeds() {
    let script = vec![status(503), status(503), status(503), status(200)];
    let h = harness(ScriptedWebhooks::answering(script));
    h.engine
        .put_breaker_settings(&h.tenant, &settings())
        .await
        .unwrap();
    let retry = RetryPolicy::default();
    let mut tasks = vec![];
    for _ in 0..3 {
        tasks.push(h.register(FireTime::Now, retry.clone()).await);
    }
    let [a, b, c] = [&tasks[0], &tasks[1], &tasks[2]];

    // Two failures in a row open it; the third task's delivery then waits, uncalled.
    h.fire_attempt(a, 1).await;
    assert!(open_breaker(&h).await.is_none());
    h.fire_attempt(b, 1).await;
    assert!(open_breaker(&h).await.is_some());
    assert_eq!(changes(&h), [MetricEvent::BreakerOpened]);
    assert_eq!(h.fire_attempt(c, 1).await, DeliverOutcome::Deferred);
    assert_eq!((h.webhooks.calls(), attempts(&h, c).await), (2, 0));

    // After 30 s one retry is the probe; it fails, and the others wait 30 s more.
    h.clock.advance(secs(30));
    let probe = h.fire_attempt(a, 2).await;
    assert_eq!(probe, DeliverOutcome::Attempted(Status::Scheduled));
    assert_eq!(h.fire_attempt(b, 2).await, DeliverOutcome::Deferred);
    assert_eq!(h.fire_attempt(c, 1).await, DeliverOutcome::Deferred);
    assert_eq!(h.webhooks.calls(), 3, "one probe, no other call");
    match open_breaker(&h).await {
        Some(Breaker::Open { probes_failed, .. }) => assert_eq!(probes_failed, 1),
        other => panic!("still open after a failed probe: {other:?}"),
    }

    // The next probe succeeds and closes it; the others go.
    h.clock.advance(secs(30));
    let closed = h.fire_attempt(c, 1).await;
    assert_eq!(closed, DeliverOutcome::Attempted(Status::Succeeded));
    assert!(open_breaker(&h).await.is_none());
    assert_eq!(
        changes(&h),
        [MetricEvent::BreakerOpened, MetricEvent::BreakerClosed]
    );
    assert_eq!(
        h.fire_attempt(b, 2).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    // The waits used up nothing: each task made only the attempts that called.
    assert_eq!(
        (
            attempts(&h, a).await,
            attempts(&h, b).await,
            attempts(&h, c).await
        ),
        (2, 2, 1)
    );
}

#[tokio::test]
async fn opened_by_hand_nothing_is_called_and_closing_lets_deliveries_go() {
    let h = harness(ScriptedWebhooks::answering(vec![]));
    let task = h.register(FireTime::Now, RetryPolicy::default()).await;
    let destination = boomerang_core::domain::Destination::of("https://example.com/");
    h.engine
        .set_breaker(&h.tenant, &destination, true)
        .await
        .unwrap();
    assert_eq!(h.fire_attempt(&task, 1).await, DeliverOutcome::Deferred);
    h.clock.advance(secs(3600));
    assert_eq!(
        h.fire_attempt(&task, 1).await,
        DeliverOutcome::Deferred,
        "no probe"
    );
    assert_eq!(h.webhooks.calls(), 0);
    h.engine
        .set_breaker(&h.tenant, &destination, false)
        .await
        .unwrap();
    // The lane's view of the breaker is at most 2 s old.
    h.clock.advance(secs(3));
    let outcome = h.fire_attempt(&task, 1).await;
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    assert_eq!(
        changes(&h),
        [MetricEvent::BreakerOpened, MetricEvent::BreakerClosed]
    );
}

#[tokio::test]
async fn failures_counted_before_a_breaker_changed_do_not_count_after() {
    let h = harness(ScriptedWebhooks::answering(vec![status(503), status(503)]));
    h.engine
        .put_breaker_settings(&h.tenant, &settings())
        .await
        .unwrap();
    let retry = RetryPolicy::default();
    let (a, b) = (
        h.register(FireTime::Now, retry.clone()).await,
        h.register(FireTime::Now, retry).await,
    );
    h.fire_attempt(&a, 1).await;
    // An operator opens and closes it meanwhile: the failure before is spent.
    let destination = boomerang_core::domain::Destination::of("https://example.com/");
    h.engine
        .set_breaker(&h.tenant, &destination, true)
        .await
        .unwrap();
    h.engine
        .set_breaker(&h.tenant, &destination, false)
        .await
        .unwrap();
    h.clock.advance(secs(3));
    h.fire_attempt(&b, 1).await;
    assert!(
        open_breaker(&h).await.is_none(),
        "one failure since the change, of two"
    );
    assert_eq!(
        changes(&h),
        [MetricEvent::BreakerOpened, MetricEvent::BreakerClosed]
    );
}
