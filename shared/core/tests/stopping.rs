//! Stopping deliveries: a shutdown waits for the calls under way, hands back those its
//! grace does not cover, and starts no new one.

use boomerang_core::testing::harness::*;

const SLOW: &str = "https://slow.test/hook";

fn slow_harness() -> (Harness, Arc<Semaphore>) {
    gated_harness(SLOW, DeliveryLimits::default())
}

#[tokio::test]
async fn a_drain_waits_for_the_calls_under_way_and_starts_no_new_one() {
    let (h, gate) = slow_harness();
    let task = h.register_to(SLOW).await;
    let run = h.spawn_delivery(&task);
    wait_until(|| h.webhooks.calls() == 1).await;
    let engine = h.engine.clone();
    let drain = tokio::spawn(async move { engine.drain(Duration::from_secs(5)).await });
    // The receiver answers within the grace: the result is written, nothing handed back.
    gate.add_permits(1);
    let drained = drain.await.unwrap().unwrap();
    assert_eq!((drained.finished, drained.handed_back), (1, 0));
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));

    // Past the stop line, a fire claims nothing and calls nothing.
    let late = h.register_to(SLOW).await;
    assert_eq!(
        h.engine.deliver(late.attempt_ref(1)).await.unwrap(),
        DeliverOutcome::Stopped
    );
    let left = h.engine.get(&h.tenant, &late.id).await.unwrap();
    assert_eq!(
        (left.task.status, left.task.attempt),
        (Status::Scheduled, 1)
    );
    assert_eq!(h.webhooks.calls(), 1);
}

#[tokio::test]
async fn a_call_still_under_way_when_the_grace_ends_is_handed_back_due_at_once() {
    let (h, gate) = slow_harness();
    let task = h.register_to(SLOW).await;
    let run = h.spawn_delivery(&task);
    wait_until(|| h.webhooks.calls() == 1).await;
    h.timer.clear();
    let drained = h.engine.drain(Duration::from_millis(50)).await.unwrap();
    assert_eq!((drained.finished, drained.handed_back), (0, 1));
    let back = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(
        (back.task.status, back.task.attempt),
        (Status::Scheduled, 1)
    );
    assert!(back.attempts.is_empty(), "no attempt recorded");
    assert_eq!(back.task.next_attempt_at, Some(t0()), "due at once");
    // The call that was under way ends after all: its write loses to the hand-back.
    gate.add_permits(1);
    assert_eq!(run.await.unwrap().unwrap(), DeliverOutcome::Stale);
    let back = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(back.task.status, Status::Scheduled);
}

#[tokio::test]
async fn a_call_that_cannot_end_before_the_invocations_deadline_is_left_for_another() {
    let (h, _gate) = slow_harness();
    let task = h.register_to(SLOW).await;
    // An invocation of 60 s, 55 s of which have gone: no room left for a 10 s call.
    h.engine
        .deliver_until(Some(t0() + chrono::Duration::seconds(60)));
    h.clock.advance(Duration::from_secs(55));
    h.timer.clear();
    assert_eq!(
        h.engine.deliver(task.attempt_ref(1)).await.unwrap(),
        DeliverOutcome::Stopped
    );
    assert_eq!(h.webhooks.calls(), 0);
    // A fresh invocation has room.
    h.engine
        .deliver_until(Some(t0() + chrono::Duration::seconds(55 + 60)));
    let run = h.spawn_delivery(&task);
    wait_until(|| h.webhooks.calls() == 1).await;
    run.abort();
}

#[tokio::test]
async fn a_call_longer_than_a_whole_invocation_still_starts() {
    let (h, _gate) = slow_harness();
    let task = h.register_to(SLOW).await;
    // A 3 s invocation can never hold a 10 s call: stopping it would only loop.
    h.engine
        .deliver_until(Some(t0() + chrono::Duration::seconds(3)));
    let run = h.spawn_delivery(&task);
    wait_until(|| h.webhooks.calls() == 1).await;
    run.abort();
}

#[tokio::test]
async fn a_delivery_waiting_for_its_destinations_slot_when_the_drain_begins_never_calls() {
    // One call at a time to the slow destination: the second waits for the first's slot.
    let limits = DeliveryLimits {
        per_destination: 1,
        ..DeliveryLimits::default()
    };
    let (h, gate) = gated_harness(SLOW, limits);
    let first = h.register_to(SLOW).await;
    let second = h.register_to(SLOW).await;
    let first_run = h.spawn_delivery(&first);
    wait_until(|| h.webhooks.calls() == 1).await;
    let second_run = h.spawn_delivery(&second);
    wait_until(|| h.engine.queued_deliveries() == 1).await;
    let engine = h.engine.clone();
    let drain = tokio::spawn(async move { engine.drain(Duration::from_secs(5)).await });
    // The first call ends within the grace and frees its slot: the second, which waited
    // for it from before the stop, takes it and still starts no call.
    gate.add_permits(2);
    let drained = drain.await.unwrap().unwrap();
    assert_eq!((drained.finished, drained.handed_back), (1, 0));
    assert_eq!(
        first_run.await.unwrap().unwrap(),
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(second_run.await.unwrap().unwrap(), DeliverOutcome::Stopped);
    assert_eq!(h.webhooks.calls(), 1, "no call started after the stop");
    let left = h.engine.get(&h.tenant, &second.id).await.unwrap();
    assert_eq!(
        (left.task.status, left.task.attempt),
        (Status::Scheduled, 1)
    );
}

#[tokio::test]
async fn a_drain_begun_while_the_claim_is_written_starts_no_call() {
    let (h, gate) = slow_harness();
    // Were a call made, it would end at once.
    gate.add_permits(1);
    let task = h.register_to(SLOW).await;
    // The drain begins as the claim is being written: after both checks of the stop
    // line, before the drain could see the attempt held.
    let engine = h.engine.clone();
    h.store.on_write(move |what| {
        if what == "claim" {
            engine.stop_calls();
        }
    });
    let outcome = h.spawn_delivery(&task).await.unwrap().unwrap();
    assert_eq!(outcome, DeliverOutcome::GivenBack);
    assert_eq!(h.webhooks.calls(), 0, "no call started after the stop");
    let left = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(
        (left.task.status, left.task.attempt),
        (Status::Scheduled, 1),
        "given back uncounted"
    );
    // The drain counts it handed back, not as a call that ended.
    let drained = h.engine.drain(Duration::from_secs(5)).await.unwrap();
    assert_eq!((drained.finished, drained.handed_back), (0, 1));
}

#[tokio::test]
async fn a_drain_cut_short_hands_back_the_calls_under_way_without_waiting_out_the_grace() {
    let (h, gate) = slow_harness();
    let task = h.register_to(SLOW).await;
    let run = h.spawn_delivery(&task);
    wait_until(|| h.webhooks.calls() == 1).await;
    // An hour's grace, cut as soon as the drain has begun (a second stop signal).
    let drained = h
        .engine
        .drain_unless(Duration::from_secs(3600), std::future::ready(()))
        .await
        .unwrap();
    assert_eq!((drained.finished, drained.handed_back), (0, 1));
    let back = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(
        (back.task.status, back.task.next_attempt_at),
        (Status::Scheduled, Some(t0())),
        "due at once"
    );
    gate.add_permits(1);
    assert_eq!(run.await.unwrap().unwrap(), DeliverOutcome::Stale);
}
