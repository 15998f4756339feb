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
    let limits = DeliveryLimits {
        concurrency: 6,
        per_destination: 2,
    };
    let (h, gate) = slow_harness(limits);
    let mut slow = vec![];
    let mut holders = vec![];
    for _ in 0..6 {
        let task = h.register_to(SLOW).await;
        let run = h.spawn_delivery(&task);
        // Two call, two more wait for a call slot (to write while the next calls go).
        if holders.len() < 4 {
            holders.push(run);
        } else {
            // The destination is full: the fire queues and ends at once.
            assert_eq!(run.await.unwrap().unwrap(), DeliverOutcome::Queued);
        }
        slow.push(task);
    }
    wait_until(|| {
        let figures = h.engine.destinations(None);
        figures.len() == 1 && (figures[0].in_flight, figures[0].waiting) == (2, 4)
    })
    .await;
    assert_eq!(h.webhooks.calls(), 2, "two calls hang, four wait uncalled");

    // The hanging receiver holds four of the six work slots: another destination's
    // deliveries still run.
    for _ in 0..3 {
        let task = h.register_to(FAST).await;
        let outcome = h.spawn_delivery(&task).await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }

    // Once the receiver answers, the two holders deliver the queue behind them.
    gate.add_permits(6);
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
    assert_eq!(h.webhooks.calls(), 6 + 3);
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
        concurrency: 8,
        per_destination: 4,
    };
    let h = harness_tenant_limited(webhooks, limits, 1);
    let mut runs = Vec::new();
    for n in 0..3 {
        let task = h.register_to(SLOW).await;
        let run = h.spawn_delivery(&task);
        // One call and one place to write: the third queues.
        if n < 2 {
            runs.push(run);
        } else {
            assert_eq!(run.await.unwrap().unwrap(), DeliverOutcome::Queued);
        }
    }
    wait_until(|| {
        let figures = h.engine.destinations(Some(&h.tenant));
        figures.len() == 1 && (figures[0].in_flight, figures[0].waiting) == (1, 2)
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
    gate.add_permits(3);
    for run in runs {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    assert_eq!(h.webhooks.calls(), 3);
}

#[tokio::test]
async fn a_queued_delivery_reads_its_task_again_and_sees_a_cancel() {
    let (h, gate) = slow_harness(DeliveryLimits {
        concurrency: 4,
        per_destination: 1,
    });
    // One calls, one waits for the call slot, the third queues.
    let first = h.register_to(SLOW).await;
    let first_run = h.spawn_delivery(&first);
    let second = h.register_to(SLOW).await;
    let second_run = h.spawn_delivery(&second);
    wait_until(|| h.webhooks.calls() == 1).await;
    let third = h.register_to(SLOW).await;
    assert_eq!(h.fire_attempt(&third, 1).await, DeliverOutcome::Queued);
    h.engine.cancel(&h.tenant, &third.id).await.unwrap();

    gate.add_permits(2);
    for run in [first_run, second_run] {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    assert_eq!(h.status_of(&third).await, Status::Canceled);
    assert_eq!(h.webhooks.calls(), 2, "the canceled task was not called");
}

/// A fire can overtake its task's write (the timer is armed before it): the read that
/// finds the task at last still sends the call through its destination's places.
#[tokio::test]
async fn a_fire_that_overtook_its_write_still_queues_behind_its_destination() {
    let (h, gate) = slow_harness(DeliveryLimits {
        concurrency: 4,
        per_destination: 1,
    });
    let mut runs = Vec::new();
    for _ in 0..2 {
        let task = h.register_to(SLOW).await;
        runs.push(h.spawn_delivery(&task));
    }
    wait_until(|| h.webhooks.calls() == 1).await;
    let late = h.register_to(SLOW).await;
    h.store.lag_next_peek(None);
    // Queued at once; a fire that went around the queue would wait for the call slot.
    let queued = tokio::time::timeout(Duration::from_secs(10), h.fire_attempt(&late, 1));
    assert_eq!(
        queued.await.expect("queued, not waiting"),
        DeliverOutcome::Queued
    );
    let figures = h.engine.destinations(None);
    assert_eq!((figures[0].in_flight, figures[0].waiting), (1, 2));

    gate.add_permits(3);
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
