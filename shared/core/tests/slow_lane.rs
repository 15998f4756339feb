//! The slow lane: calls that take long, enough of them, send their destination's next
//! attempts to a lane of their own, where they hold up only other slow calls.

use std::sync::atomic::Ordering;

use boomerang_core::engine::{Route, DEFAULT_SLOW_CALL, SLOW_MIN_CALLS, SLOW_WINDOW};
use boomerang_core::metrics::MetricEvent;
use boomerang_core::testing::harness::*;

const SLOW: &str = "https://slow.test/hook";
const FAST: &str = "https://fast.test/hook";

/// Delivers a task to `SLOW` whose call takes `took` on the harness's clock.
async fn call_taking(h: &Harness, gate: &Semaphore, took: Duration) {
    let task = h.register_to(SLOW).await;
    let run = h.spawn_delivery(&task);
    wait_until(|| h.webhooks.in_flight.load(Ordering::SeqCst) == 1).await;
    h.clock.advance(took);
    gate.add_permits(1);
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
}

/// Makes the fewest calls to `SLOW`, each taking `took`, that can mark it slow.
async fn calls_taking(h: &Harness, gate: &Semaphore, took: Duration) {
    for _ in 0..SLOW_MIN_CALLS {
        call_taking(h, gate, took).await;
    }
}

#[tokio::test]
async fn slow_calls_hand_their_destinations_next_attempts_to_the_slow_lane() {
    let (h, gate, lane) = harness_slow_lane(SLOW);
    calls_taking(&h, &gate, DEFAULT_SLOW_CALL).await;

    let next = h.register_to(SLOW).await;
    assert_eq!(h.fire_attempt(&next, 1).await, DeliverOutcome::HandedOver);
    assert_eq!(lane.handed(), vec![next.attempt_ref(1)]);
    assert_eq!(
        h.webhooks.calls(),
        SLOW_MIN_CALLS,
        "handed over, not called"
    );
    assert_eq!(
        h.status_of(&next).await,
        Status::Scheduled,
        "nothing claimed"
    );
    assert!(h
        .metrics
        .0
        .lock()
        .unwrap()
        .contains(&MetricEvent::HandedToSlowLane));

    // Another destination of the tenant's goes the shared way.
    let other = h.register_to(FAST).await;
    let outcome = h.fire_attempt(&other, 1).await;
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));

    // What the slow lane carries is called, whatever the mark.
    gate.add_permits(1);
    let outcome = h
        .engine
        .deliver_by(next.attempt_ref(1), "slow", Route::SlowLane);
    let outcome = outcome.await;
    assert_eq!(
        outcome.unwrap(),
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(lane.handed().len(), 1);
}

#[tokio::test]
async fn a_quick_call_marks_nothing_and_a_mark_runs_out() {
    let (h, gate, lane) = harness_slow_lane(SLOW);
    call_taking(&h, &gate, DEFAULT_SLOW_CALL - secs(1)).await;
    gate.add_permits(1);
    let next = h.register_to(SLOW).await;
    let outcome = h.fire_attempt(&next, 1).await;
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    assert!(lane.handed().is_empty());

    // The quick calls leave the window, so that the slow ones alone are counted.
    h.clock.advance(SLOW_WINDOW);
    calls_taking(&h, &gate, DEFAULT_SLOW_CALL).await;
    h.clock.advance(secs(5 * 60));
    gate.add_permits(1);
    let later = h.register_to(SLOW).await;
    let outcome = h.fire_attempt(&later, 1).await;
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    assert!(
        lane.handed().is_empty(),
        "the mark ran out after five minutes"
    );
}

#[tokio::test]
async fn an_attempt_the_slow_lane_refuses_is_delivered_here() {
    let (h, gate, lane) = harness_slow_lane(SLOW);
    calls_taking(&h, &gate, DEFAULT_SLOW_CALL + secs(1)).await;
    lane.refusing.store(true, Ordering::SeqCst);
    gate.add_permits(1);
    let next = h.register_to(SLOW).await;
    let outcome = h.fire_attempt(&next, 1).await;
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    assert_eq!(
        lane.refused.load(Ordering::SeqCst),
        1,
        "the slow lane was asked"
    );
    assert_eq!(h.webhooks.calls(), SLOW_MIN_CALLS + 1);
}

#[tokio::test]
async fn a_fire_the_claim_would_refuse_is_not_handed_over() {
    let (h, gate, lane) = harness_slow_lane(SLOW);
    calls_taking(&h, &gate, DEFAULT_SLOW_CALL).await;
    // A second fire of an attempt under way is put off to its lease's end, here.
    let task = h.register_to(SLOW).await;
    let (engine, at) = (h.engine.clone(), task.attempt_ref(1));
    let run = tokio::spawn(async move { engine.deliver_by(at, "slow", Route::SlowLane).await });
    wait_until(|| h.webhooks.in_flight.load(Ordering::SeqCst) == 1).await;
    assert_eq!(h.fire_attempt(&task, 1).await, DeliverOutcome::Stale);
    // A fire of an attempt already made ends here too.
    gate.add_permits(1);
    let outcome = h
        .engine
        .deliver_by(task.attempt_ref(1), "slow", Route::SlowLane);
    assert_eq!(outcome.await.unwrap(), DeliverOutcome::Stale);
    run.await.unwrap().unwrap();
    assert_eq!(h.fire_attempt(&task, 1).await, DeliverOutcome::Stale);
    assert!(lane.handed().is_empty());
}
