//! The engine's gate: how many calls go to one destination at once, what waiting costs a
//! task (nothing), and a destination's request for a pause.

use boomerang_core::testing::harness::*;

const SLOW: &str = "https://slow.test/hook";
const FAST: &str = "https://fast.test/hook";

/// A harness within `limits` whose calls to `SLOW` wait for the returned gate.
fn slow_harness(limits: DeliveryLimits) -> (Harness, Arc<Semaphore>) {
    gated_harness(SLOW, limits)
}

#[tokio::test]
async fn a_hanging_destination_holds_only_its_own_slots() {
    // Twice the destination's places and two: its places are within half the work slots.
    let limits = DeliveryLimits {
        concurrency: 2 * PLACES_PER_CALL + 2,
        per_destination: 1,
    };
    let (h, gate) = slow_harness(limits);
    let mut slow = vec![];
    let mut holders = vec![];
    for _ in 0..PLACES_PER_CALL + 2 {
        let task = h.register_to(SLOW).await;
        let run = h.spawn_delivery(&task);
        // One calls, the others wait for the call slot (to write while the next calls go).
        if holders.len() < PLACES_PER_CALL {
            holders.push(run);
        } else {
            // The destination is full: the fire queues and ends at once.
            assert_eq!(run.await.unwrap().unwrap(), DeliverOutcome::Queued);
        }
        slow.push(task);
    }
    wait_until(|| {
        let figures = h.engine.destinations(None);
        figures.len() == 1 && (figures[0].in_flight, figures[0].waiting) == (1, PLACES_PER_CALL + 1)
    })
    .await;
    assert_eq!(
        h.webhooks.calls(),
        1,
        "one call hangs, the others wait uncalled"
    );

    // The hanging receiver holds its places' work slots, not all of them: another
    // destination's deliveries still run.
    for _ in 0..3 {
        let task = h.register_to(FAST).await;
        let outcome = h.spawn_delivery(&task).await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }

    // Once the receiver answers, the holders deliver the queue behind them.
    gate.add_permits(PLACES_PER_CALL + 2);
    for run in holders {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    for task in slow {
        // Waiting for a slot is no attempt: each succeeded at its first.
        let details = h.engine.get(&h.tenant, &task.id).await.unwrap();
        assert_eq!(details.task.status, Status::Succeeded);
        assert_eq!(details.attempts.len(), 1);
        assert_eq!(details.task.attempt, 1);
    }
    assert_eq!(h.webhooks.calls() as usize, PLACES_PER_CALL + 2 + 3);
    assert!(
        h.engine.destinations(None).is_empty(),
        "nothing in flight now"
    );
}

#[tokio::test]
async fn a_tenant_with_a_destination_limit_of_its_own_gets_that_many_calls() {
    let gate = Arc::new(Semaphore::new(0));
    let webhooks = ScriptedWebhooks {
        gate: Some(gate.clone()),
        gated_url: Some(SLOW.into()),
        ..ScriptedWebhooks::default()
    };
    let limits = DeliveryLimits {
        concurrency: 2 * PLACES_PER_CALL,
        per_destination: 4,
    };
    let h = harness_tenant_limited(webhooks, limits, 1);
    let mut runs = Vec::new();
    for n in 0..=PLACES_PER_CALL {
        let task = h.register_to(SLOW).await;
        let run = h.spawn_delivery(&task);
        // One call, and places to write for one call's worth: the next queues.
        if n < PLACES_PER_CALL {
            runs.push(run);
        } else {
            assert_eq!(run.await.unwrap().unwrap(), DeliverOutcome::Queued);
        }
    }
    wait_until(|| {
        let figures = h.engine.destinations(Some(&h.tenant));
        figures.len() == 1 && (figures[0].in_flight, figures[0].waiting) == (1, PLACES_PER_CALL)
    })
    .await;
    assert_eq!(
        h.engine.destinations(None)[0].limit,
        1,
        "the tenant's, not 4"
    );
    assert_eq!(h.webhooks.calls(), 1);
    let other = TenantId::parse("globex").unwrap();
    assert!(h.engine.destinations(Some(&other)).is_empty(), "acme's own");
    gate.add_permits(PLACES_PER_CALL + 1);
    for run in runs {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    assert_eq!(h.webhooks.calls() as usize, PLACES_PER_CALL + 1);
}

#[tokio::test]
async fn a_queued_delivery_reads_its_task_again_and_sees_a_cancel() {
    let (h, gate) = slow_harness(DeliveryLimits {
        concurrency: 2 * PLACES_PER_CALL,
        per_destination: 1,
    });
    // One calls, the others wait for the call slot, and the next queues.
    let runs = fill_the_places(&h).await;
    let last = h.register_to(SLOW).await;
    assert_eq!(h.fire_attempt(&last, 1).await, DeliverOutcome::Queued);
    h.engine.cancel(&h.tenant, &last.id).await.unwrap();

    gate.add_permits(PLACES_PER_CALL);
    for run in runs {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    assert_eq!(h.status_of(&last).await, Status::Canceled);
    assert_eq!(
        h.webhooks.calls() as usize,
        PLACES_PER_CALL,
        "the canceled task was not called"
    );
}

/// Takes every place at `SLOW` (a limit of one call): one delivery calls, the others
/// wait for its call slot. Their runs.
async fn fill_the_places(
    h: &Harness,
) -> Vec<tokio::task::JoinHandle<Result<DeliverOutcome, EngineError>>> {
    let mut runs = Vec::new();
    for _ in 0..PLACES_PER_CALL {
        let task = h.register_to(SLOW).await;
        runs.push(h.spawn_delivery(&task));
    }
    wait_until(|| {
        let figures = h.engine.destinations(None);
        figures.len() == 1 && (figures[0].in_flight, figures[0].waiting) == (1, PLACES_PER_CALL - 1)
    })
    .await;
    runs
}

/// A fire can overtake its task's write (the timer is armed before it): the read that
/// finds the task at last still sends the call through its destination's places.
#[tokio::test]
async fn a_fire_that_overtook_its_write_still_queues_behind_its_destination() {
    let (h, gate) = slow_harness(DeliveryLimits {
        concurrency: 2 * PLACES_PER_CALL,
        per_destination: 1,
    });
    let runs = fill_the_places(&h).await;
    let late = h.register_to(SLOW).await;
    h.store.lag_next_peek(None);
    // Queued at once; a fire that went around the queue would wait for the call slot.
    let queued = tokio::time::timeout(Duration::from_secs(10), h.fire_attempt(&late, 1));
    assert_eq!(
        queued.await.expect("queued, not waiting"),
        DeliverOutcome::Queued
    );
    let figures = h.engine.destinations(None);
    assert_eq!(
        (figures[0].in_flight, figures[0].waiting),
        (1, PLACES_PER_CALL)
    );

    gate.add_permits(PLACES_PER_CALL + 1);
    for run in runs {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    assert_eq!(h.status_of(&late).await, Status::Succeeded);
    assert!(h.engine.destinations(None).is_empty());
}

#[tokio::test]
async fn retry_after_on_429_pauses_the_destination_not_only_the_task() {
    let busy = WebhookResult {
        retry_after: Some(secs(30)),
        ..status(429)
    };
    let h = harness(ScriptedWebhooks::answering(vec![busy]));
    let first = h.register_to(SLOW).await;
    let second = h.register_to(SLOW).await;
    let elsewhere = h.register_to(FAST).await;
    assert_eq!(
        h.fire_attempt(&first, 1).await,
        DeliverOutcome::Attempted(Status::Scheduled)
    );
    h.timer.clear();

    // The other task to that receiver is put off to the pause's end, uncalled, unclaimed.
    assert_eq!(h.fire_attempt(&second, 1).await, DeliverOutcome::Deferred);
    let pause_end = t0() + chrono::Duration::seconds(30);
    assert_eq!(
        h.timer.armed(),
        vec![(second.id, Attempt::Delivery(1), pause_end)]
    );
    let details = h.engine.get(&h.tenant, &second.id).await.unwrap();
    assert_eq!(
        (details.task.status, details.task.attempt),
        (Status::Scheduled, 1)
    );
    assert!(details.attempts.is_empty());
    assert_eq!(h.engine.destinations(None)[0].paused_until, Some(pause_end));
    let events = h.metrics.0.lock().unwrap().clone();
    assert!(events.contains(&MetricEvent::Deferred));

    // Another destination is not paused.
    assert_eq!(
        h.fire_attempt(&elsewhere, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(h.webhooks.calls(), 2);

    h.clock.advance(secs(30));
    assert_eq!(
        h.fire_attempt(&second, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
}

#[tokio::test]
async fn a_pause_is_bounded_however_long_the_receiver_asks_for() {
    let busy = WebhookResult {
        retry_after: Some(secs(86_400)),
        ..status(503)
    };
    let h = harness(ScriptedWebhooks::answering(vec![busy]));
    let first = h.register_to(SLOW).await;
    h.fire_attempt(&first, 1).await;
    let paused = h.engine.destinations(None)[0].paused_until.unwrap();
    let max = boomerang_core::domain::limits::MAX_DESTINATION_PAUSE;
    assert_eq!(paused, t0() + chrono::Duration::from_std(max).unwrap());
}
