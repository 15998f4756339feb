//! Engine behaviour on an injected clock, with in-memory adapters and a scripted webhook.
//! Timers are not fired by themselves here: each test plays the timer by calling `deliver`.

use boomerang_core::domain::{FlowSpec, Policy};
use boomerang_core::testing::harness::*;

#[tokio::test]
async fn success_on_first_attempt_records_lateness() {
    let h = harness(ScriptedWebhooks::default());
    let task = h
        .register(FireTime::After(secs(60)), RetryPolicy::default())
        .await;
    assert_eq!(
        h.timer.armed(),
        vec![(
            task.id,
            Attempt::Delivery(1),
            t0() + chrono::Duration::seconds(60)
        )]
    );
    h.clock.advance(secs(62));
    let outcome = h
        .engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
        .await
        .unwrap();
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    let details = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(details.attempts.len(), 1);
    assert_eq!(details.attempts[0].lateness_ms, 2000);
    assert_eq!(details.attempts[0].outcome, AttemptOutcome::Succeeded);
    assert_eq!(details.attempts[0].worker.as_deref(), Some("test-worker"));
}

#[tokio::test]
async fn duplicate_timer_fire_calls_the_webhook_once() {
    let h = harness(ScriptedWebhooks::default());
    let task = h.register(FireTime::Now, RetryPolicy::default()).await;
    let (a, b) = tokio::join!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1)),
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
    );
    let outcomes = [a.unwrap(), b.unwrap()];
    assert!(outcomes.contains(&DeliverOutcome::Attempted(Status::Succeeded)));
    assert!(outcomes.contains(&DeliverOutcome::Stale));
    assert_eq!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
            .await
            .unwrap(),
        DeliverOutcome::Stale
    );
    assert_eq!(h.webhooks.calls(), 1);
}

#[tokio::test]
async fn early_fire_re_arms_for_the_due_time_without_calling() {
    let h = harness(ScriptedWebhooks::default());
    let task = h
        .register(FireTime::After(secs(1200)), RetryPolicy::default())
        .await;
    h.timer.clear();
    h.clock.advance(secs(1100));
    assert_eq!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
            .await
            .unwrap(),
        DeliverOutcome::Early
    );
    assert_eq!(h.webhooks.calls(), 0);
    assert_eq!(
        h.timer.armed(),
        vec![(
            task.id,
            Attempt::Delivery(1),
            t0() + chrono::Duration::seconds(1200)
        )]
    );
    h.clock.advance(secs(100));
    assert_eq!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
            .await
            .unwrap(),
        DeliverOutcome::Attempted(Status::Succeeded)
    );
}

#[tokio::test]
async fn lost_timer_is_repaired_by_the_sweep() {
    let h = harness(ScriptedWebhooks::default());
    h.timer.fail_next(1);
    let task = h
        .register(FireTime::After(secs(60)), RetryPolicy::default())
        .await;
    assert!(
        h.timer.armed().is_empty(),
        "arming failed, but the task is stored"
    );
    let overdue = chrono::Duration::seconds(-60);
    h.clock.advance(secs(90));
    assert_eq!(
        h.engine.sweep(overdue).await.unwrap().rearmed,
        0,
        "not yet suspect"
    );
    h.clock.advance(secs(60));
    assert_eq!(h.engine.sweep(overdue).await.unwrap().rearmed, 1);
    let (id, attempt, _) = h.timer.armed()[0];
    assert_eq!((id, attempt), (task.id, Attempt::Delivery(1)));
    h.engine
        .deliver(AttemptRef::new(h.tenant.clone(), id, attempt))
        .await
        .unwrap();
    assert_eq!(h.status_of(&task).await, Status::Succeeded);
    assert_eq!(h.webhooks.calls(), 1);
}

#[tokio::test]
async fn cancel_wins_before_fire_and_loses_during_delivery() {
    let h = harness(ScriptedWebhooks::default());
    let early = h
        .register(FireTime::After(secs(60)), RetryPolicy::default())
        .await;
    let canceled = h.engine.cancel(&h.tenant, &early.id).await.unwrap();
    assert_eq!(canceled.status, Status::Canceled);
    h.clock.advance(secs(60));
    assert_eq!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), early.id, 1))
            .await
            .unwrap(),
        DeliverOutcome::Stale
    );
    assert_eq!(h.webhooks.calls(), 0);
    assert!(matches!(
        h.engine.cancel(&h.tenant, &early.id).await,
        Err(EngineError::Conflict(_))
    ));

    let (h, gate, task, delivery) = delivery_held_mid_call().await;
    let race = h.engine.cancel(&h.tenant, &task.id).await;
    assert!(matches!(race, Err(EngineError::Conflict(_))), "{race:?}");
    gate.add_permits(1);
    delivery.await.unwrap().unwrap();
    assert_eq!(h.status_of(&task).await, Status::Succeeded);
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_after_a_crash() {
    let (h, gate, task, crashed) = delivery_held_mid_call().await;
    let id = task.id;
    crashed.abort(); // the worker dies mid-call
    assert_eq!(h.status_of(&task).await, Status::Delivering);

    h.timer.clear();
    let report = h.engine.sweep(chrono::Duration::zero()).await.unwrap();
    assert_eq!(report.leases_taken_over, 0, "the lease still holds");
    assert_eq!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), id, 1))
            .await
            .unwrap(),
        DeliverOutcome::Stale
    );
    assert_eq!(
        h.timer.armed(),
        vec![(id, Attempt::Delivery(1), h.clock_now() + secs(10 + 30))],
        "a fire during the lease is armed again for its end, should the worker be dead"
    );
    h.timer.clear();

    h.clock.advance(secs(10 + 30));
    let report = h.engine.sweep(chrono::Duration::zero()).await.unwrap();
    assert_eq!(report.leases_taken_over, 1);
    assert_eq!(
        h.timer.armed(),
        vec![(id, Attempt::Delivery(1), h.clock_now())]
    );
    gate.add_permits(1);
    assert_eq!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), id, 1))
            .await
            .unwrap(),
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(h.webhooks.calls(), 2);
}

#[tokio::test]
async fn retries_follow_the_policy_then_fail_with_a_dead_letter() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500); 3]));
    let policy = RetryPolicy::default().with_max_attempts(3).unwrap();
    let task = h.register(FireTime::Now, policy).await;
    assert_eq!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
            .await
            .unwrap(),
        DeliverOutcome::Attempted(Status::Scheduled)
    );
    let after_first = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
    assert_eq!(after_first.attempt, 2);
    assert_eq!(
        after_first.next_attempt_at,
        Some(t0() + chrono::Duration::seconds(30))
    );
    h.clock.advance(secs(30));
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 2))
        .await
        .unwrap();
    h.clock.advance(secs(60));
    assert_eq!(
        h.engine
            .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 3))
            .await
            .unwrap(),
        DeliverOutcome::Attempted(Status::Failed)
    );
    let details = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(details.attempts.len(), 3);
    assert_eq!(details.attempts[2].outcome, AttemptOutcome::Failed);
    assert!(!details.task.dead_letter_pending);
    let letters = h.dead_letters.letters();
    assert_eq!(letters.len(), 1);
    assert_eq!((letters[0].task_id, letters[0].attempts), (task.id, 3));
}

#[tokio::test]
async fn gone_and_permanent_statuses_fail_at_once() {
    let h = harness(ScriptedWebhooks::answering(vec![status(410), status(404)]));
    let gone = h.register(FireTime::Now, RetryPolicy::default()).await;
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), gone.id, 1))
        .await
        .unwrap();
    assert_eq!(h.status_of(&gone).await, Status::Failed);
    let policy = RetryPolicy::default()
        .with_permanent_statuses(&[404])
        .unwrap();
    let missing = h.register(FireTime::Now, policy).await;
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), missing.id, 1))
        .await
        .unwrap();
    assert_eq!(h.status_of(&missing).await, Status::Failed);
    assert_eq!(h.dead_letters.letters().len(), 2);
}

#[tokio::test]
async fn refused_destinations_fail_and_transport_errors_retry() {
    let refused = WebhookResult {
        error: Some(WebhookError::Refused(
            "10.0.0.1 is a private address".into(),
        )),
        ..WebhookResult::default()
    };
    let reset = WebhookResult {
        error: Some(WebhookError::Transport("connection reset".into())),
        ..WebhookResult::default()
    };
    let h = harness(ScriptedWebhooks::answering(vec![refused, reset]));
    let a = h.register(FireTime::Now, RetryPolicy::default()).await;
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), a.id, 1))
        .await
        .unwrap();
    assert_eq!(h.status_of(&a).await, Status::Failed);
    let b = h.register(FireTime::Now, RetryPolicy::default()).await;
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), b.id, 1))
        .await
        .unwrap();
    assert_eq!(h.status_of(&b).await, Status::Scheduled);
}

#[tokio::test]
async fn retry_after_replaces_the_wait_within_the_maximum_interval() {
    let mut busy = status(503);
    busy.retry_after = Some(secs(7));
    let mut very_busy = status(429);
    very_busy.retry_after = Some(secs(999_999));
    let h = harness(ScriptedWebhooks::answering(vec![busy, very_busy]));
    let task = h.register(FireTime::Now, RetryPolicy::default()).await;
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
        .await
        .unwrap();
    let t = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
    assert_eq!(t.next_attempt_at, Some(t0() + chrono::Duration::seconds(7)));
    h.clock.advance(secs(7));
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 2))
        .await
        .unwrap();
    let t = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
    // Bounded by the default policy's longest step, one hour.
    assert_eq!(
        t.next_attempt_at,
        Some(t0() + chrono::Duration::seconds(7 + 3600))
    );
}

#[tokio::test]
async fn a_dead_letter_send_is_retried_and_then_left_to_the_sweep() {
    let h = harness(ScriptedWebhooks::answering(vec![status(410), status(410)]));
    h.dead_letters.fail_next(1);
    let once = h.register(FireTime::Now, RetryPolicy::default()).await;
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), once.id, 1))
        .await
        .unwrap();
    assert_eq!(
        h.dead_letters.letters().len(),
        1,
        "retried after one failure"
    );

    h.dead_letters.fail_next(3); // every try of the engine fails
    let down = h.register(FireTime::Now, RetryPolicy::default()).await;
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), down.id, 1))
        .await
        .unwrap();
    assert_eq!(h.dead_letters.letters().len(), 1);
    assert!(
        h.engine
            .get(&h.tenant, &down.id)
            .await
            .unwrap()
            .task
            .dead_letter_pending
    );
    let report = h.engine.sweep(chrono::Duration::zero()).await.unwrap();
    assert_eq!(report.dead_letters_resent, 1);
    assert_eq!(h.dead_letters.letters().len(), 2);
    assert!(
        !h.engine
            .get(&h.tenant, &down.id)
            .await
            .unwrap()
            .task
            .dead_letter_pending
    );
}

#[tokio::test]
async fn a_failed_task_can_be_retried_for_a_new_round() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500)]));
    let policy = RetryPolicy::default().with_max_attempts(1).unwrap();
    let task = h.register(FireTime::Now, policy).await;
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
        .await
        .unwrap();
    assert_eq!(h.status_of(&task).await, Status::Failed);
    h.engine.redrive(&h.tenant, &task.id).await.unwrap();
    let t = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
    assert_eq!(
        (t.status, t.attempt, t.round_start),
        (Status::Scheduled, 2, 2)
    );
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 2))
        .await
        .unwrap();
    assert_eq!(h.status_of(&task).await, Status::Succeeded);
    assert!(matches!(
        h.engine.redrive(&h.tenant, &task.id).await,
        Err(EngineError::Conflict(_))
    ));
}

#[tokio::test]
async fn idempotent_registration_returns_the_same_task_or_refuses_a_changed_one() {
    let h = harness(ScriptedWebhooks::default());
    let mut first = new_task(FireTime::Now, RetryPolicy::default());
    first.idempotency_key = Some("k1".into());
    let a = h.engine.register(&h.tenant, first.clone()).await.unwrap();
    let b = h.engine.register(&h.tenant, first.clone()).await.unwrap();
    assert!(a.created && !b.created);
    assert_eq!(a.task.id, b.task.id);
    let mut changed = first.clone();
    changed.request_hash = "other".into();
    assert!(matches!(
        h.engine.register(&h.tenant, changed).await,
        Err(EngineError::IdempotencyMismatch)
    ));
    let other_tenant = TenantId::parse("other").unwrap();
    let c = h.engine.register(&other_tenant, first).await.unwrap();
    assert!(c.created, "keys are scoped to a tenant");
    assert!(matches!(
        h.engine.get(&other_tenant, &a.task.id).await,
        Err(EngineError::NotFound(boomerang_core::engine::Missing::Task))
    ));
}

#[tokio::test]
async fn invalid_destinations_and_far_fire_times_are_refused_before_storing() {
    let h = harness(ScriptedWebhooks::default());
    let mut bad_url = new_task(FireTime::Now, RetryPolicy::default());
    bad_url.spec.request.url = "http://example.com".into();
    assert!(matches!(
        h.engine.register(&h.tenant, bad_url).await,
        Err(EngineError::Invalid(refused)) if refused.field == "url"
    ));
    let far = new_task(
        FireTime::After(secs(366 * 24 * 3600)),
        RetryPolicy::default(),
    );
    assert!(matches!(
        h.engine.register(&h.tenant, far).await,
        Err(EngineError::Invalid(refused)) if refused.field == "delay"
    ));
    assert!(h.stored().await.is_empty());
}

/// A task whose first delivery is in flight, held inside the webhook call until the
/// returned gate gets a permit.
async fn delivery_held_mid_call() -> (
    Harness,
    Arc<Semaphore>,
    boomerang_core::domain::Task,
    tokio::task::JoinHandle<Result<DeliverOutcome, EngineError>>,
) {
    let gate = Arc::new(Semaphore::new(0));
    let h = harness(ScriptedWebhooks {
        gate: Some(gate.clone()),
        ..ScriptedWebhooks::default()
    });
    let task = h.register(FireTime::Now, RetryPolicy::default()).await;
    let (engine, id) = (h.engine.clone(), task.id);
    let attempt = AttemptRef::delivery(h.tenant.clone(), id, 1);
    let delivery = tokio::spawn(async move { engine.deliver(attempt).await });
    wait_until(|| h.webhooks.calls() == 1).await;
    (h, gate, task, delivery)
}

#[tokio::test]
async fn a_durable_timer_is_armed_before_each_write_and_the_task_says_so() {
    let h = harness_with(
        ScriptedWebhooks::answering(vec![status(500)]),
        RecordingTimer::durable(),
        t0(),
    );
    // Notes, at every write, how many timers were armed by then.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (timer, notes) = (h.timer.clone(), seen.clone());
    h.store
        .on_write(move |what| notes.lock().unwrap().push((what, timer.armed().len())));
    let task = h
        .register(FireTime::After(secs(60)), RetryPolicy::default())
        .await;
    assert!(task.timer_armed);
    h.clock.advance(secs(60));
    h.engine
        .deliver(AttemptRef::delivery(h.tenant.clone(), task.id, 1))
        .await
        .unwrap();
    let stored = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
    assert_eq!((stored.status, stored.attempt), (Status::Scheduled, 2));
    assert!(stored.timer_armed, "the next attempt's timer was armed");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![("create", 1), ("claim", 1), ("finish", 2)],
        "each timer exists before the write that needs it (the claim needs none)"
    );

    h.timer.fail_next(1);
    let unarmed = h.register(FireTime::Now, RetryPolicy::default()).await;
    assert!(
        !unarmed.timer_armed,
        "stored all the same, for the sweep to arm"
    );
    let due = h.engine.sweep(chrono::Duration::zero()).await.unwrap();
    assert_eq!(due.rearmed, 1);
}

#[tokio::test]
async fn a_fire_that_overtakes_its_write_is_looked_at_again_for_a_while() {
    let now = Utc::now();
    let h = harness_with(ScriptedWebhooks::default(), RecordingTimer::durable(), now);
    let unseen = boomerang_core::domain::TaskId::new();
    let at = AttemptRef::delivery(h.tenant.clone(), unseen, 1);
    assert_eq!(
        h.engine.deliver(at.clone()).await.unwrap(),
        DeliverOutcome::Unknown
    );
    assert_eq!(
        h.timer.armed(),
        vec![(
            unseen,
            Attempt::Delivery(1),
            now + chrono::Duration::seconds(1)
        )],
        "a task registered moments ago may still be on its way to the store"
    );
    let task = h
        .register(FireTime::After(secs(3600)), RetryPolicy::default())
        .await;
    h.timer.clear();
    let ahead = AttemptRef::delivery(h.tenant.clone(), task.id, 2);
    assert_eq!(
        h.engine.deliver(ahead.clone()).await.unwrap(),
        DeliverOutcome::Stale
    );
    assert_eq!(
        h.timer.armed(),
        vec![(
            task.id,
            Attempt::Delivery(2),
            now + chrono::Duration::seconds(1)
        )],
        "the write that leads to attempt 2 may still be on its way"
    );

    h.clock.advance(secs(30));
    h.timer.clear();
    assert_eq!(
        h.engine.deliver(at.clone()).await.unwrap(),
        DeliverOutcome::Unknown
    );
    let (_, _, again) = h.timer.armed()[0];
    assert!(
        again - h.clock_now() >= chrono::Duration::seconds(25),
        "later looks come at doubling intervals, not every second"
    );
    h.clock.advance(secs(150));
    h.timer.clear();
    assert_eq!(
        h.engine.deliver(at.clone()).await.unwrap(),
        DeliverOutcome::Unknown
    );
    assert_eq!(
        h.engine.deliver(ahead.clone()).await.unwrap(),
        DeliverOutcome::Stale
    );
    assert!(
        h.timer.armed().is_empty(),
        "orphan timers are dropped in the end"
    );
}

#[tokio::test]
async fn a_batch_is_registered_in_order_and_a_refused_task_refuses_it_whole() {
    let h = harness_with(ScriptedWebhooks::default(), RecordingTimer::durable(), t0());
    let mut bad = new_task(FireTime::Now, RetryPolicy::default());
    bad.spec.request.url = "http://example.com/insecure".into();
    let refused = h
        .engine
        .register_batch(
            &h.tenant,
            vec![new_task(FireTime::Now, RetryPolicy::default()), bad],
        )
        .await;
    assert!(matches!(
        refused,
        Err((1, EngineError::Invalid(refused))) if refused.field == "url"
    ));
    assert!(h.timer.armed().is_empty(), "nothing armed");
    assert!(h.stored().await.is_empty(), "nothing stored");

    let batch = (1..=3)
        .map(|i| new_task(FireTime::After(secs(i)), RetryPolicy::default()))
        .collect();
    let results = h.engine.register_batch(&h.tenant, batch).await.unwrap();
    let tasks: Vec<_> = results.into_iter().map(|r| r.unwrap().task).collect();
    assert!(tasks.iter().all(|t| t.timer_armed));
    let due: Vec<_> = tasks.iter().map(|t| t.next_attempt_at.unwrap()).collect();
    assert_eq!(
        due,
        (1..=3)
            .map(|i| t0() + chrono::Duration::seconds(i))
            .collect::<Vec<_>>(),
        "one result per task, in order"
    );
    assert_eq!(h.timer.armed().len(), 3);
    assert_eq!(
        h.metrics.registered(),
        vec![MetricEvent::Registered { count: 3 }],
        "one count for the batch"
    );
    h.register(FireTime::Now, RetryPolicy::default()).await;
    assert_eq!(
        h.metrics.registered().last(),
        Some(&MetricEvent::Registered { count: 1 })
    );
}

#[tokio::test]
async fn a_fire_that_read_a_lagging_copy_reads_again_before_giving_up() {
    let h = harness_with(ScriptedWebhooks::default(), RecordingTimer::durable(), t0());
    let task = h.register(FireTime::Now, RetryPolicy::default()).await;

    // The cheap read shows a version the store has moved past (here: written again,
    // unchanged but for its version): the claim loses, and a consistent read wins it.
    let mut moved = task.clone();
    moved.version += 1;
    boomerang_core::ports::TaskStore::update(&*h.store, &moved, task.version)
        .await
        .unwrap();
    h.store.lag_next_peek(Some(task.clone()));
    assert_eq!(
        h.engine.deliver(task.attempt_ref(1)).await.unwrap(),
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(h.webhooks.calls(), 1);

    // The cheap read does not find the task yet: a consistent one does.
    let second = h.register(FireTime::Now, RetryPolicy::default()).await;
    h.store.lag_next_peek(None);
    assert_eq!(
        h.engine.deliver(second.attempt_ref(1)).await.unwrap(),
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(h.webhooks.calls(), 2);
}

#[tokio::test]
async fn canceling_by_key_cancels_the_scheduled_tasks_and_reports_the_rest() {
    let gate = Arc::new(Semaphore::new(0));
    let h = harness(ScriptedWebhooks {
        gate: Some(gate.clone()),
        ..ScriptedWebhooks::default()
    });
    let key = BusinessKey::parse("order-42").unwrap();
    let keyed = |when| {
        let mut task = new_task(when, RetryPolicy::default());
        task.spec.key = Some(key.clone());
        task
    };
    let in_flight = h.engine.register(&h.tenant, keyed(FireTime::Now)).await;
    let in_flight = in_flight.unwrap().task;
    let later = h
        .engine
        .register(&h.tenant, keyed(FireTime::After(secs(60))));
    let later = later.await.unwrap().task;
    let unkeyed = h
        .register(FireTime::After(secs(60)), RetryPolicy::default())
        .await;
    let other_tenant = TenantId::parse("other").unwrap();
    let theirs = h
        .engine
        .register(&other_tenant, keyed(FireTime::After(secs(60))));
    let theirs = theirs.await.unwrap().task;

    // The first task's delivery is held inside its webhook call.
    let (engine, attempt) = (h.engine.clone(), in_flight.attempt_ref(1));
    let delivery = tokio::spawn(async move { engine.deliver(attempt).await });
    wait_until(|| h.webhooks.calls() == 1).await;

    let outcome = h.engine.cancel_by_key(&h.tenant, &key).await.unwrap();
    assert_eq!(outcome.done, vec![later.id]);
    assert_eq!(outcome.not_done, vec![(in_flight.id, Status::Delivering)]);
    assert!(!outcome.more);
    gate.add_permits(1);
    assert_eq!(
        delivery.await.unwrap().unwrap(),
        DeliverOutcome::Attempted(Status::Succeeded),
        "the delivery under way is not canceled"
    );
    assert_eq!(h.status_of(&later).await, Status::Canceled);
    assert_eq!(h.status_of(&unkeyed).await, Status::Scheduled);
    let theirs = h.engine.get(&other_tenant, &theirs.id).await.unwrap().task;
    assert_eq!(theirs.status, Status::Scheduled, "another tenant's key");

    let again = h.engine.cancel_by_key(&h.tenant, &key).await.unwrap();
    assert!(again.done.is_empty());
    assert_eq!(again.not_done.len(), 2, "both now finished");
}

#[tokio::test]
async fn a_named_policy_is_copied_into_the_task_at_registration() {
    let h = harness(ScriptedWebhooks::default());
    let payments = DefinitionName::parse("payments").unwrap();
    let policy = |n| Policy::retry(RetryPolicy::default().with_max_attempts(n).unwrap());
    let named = |name: &DefinitionName| {
        let mut task = new_task(FireTime::Now, RetryPolicy::default());
        task.retry_from = RetrySource::Named(name.clone());
        task
    };
    let refused = h.engine.register(&h.tenant, named(&payments)).await;
    assert!(matches!(
        refused,
        Err(EngineError::Invalid(refused)) if refused.field == "retry"
    ));
    h.engine
        .put_policy(&h.tenant, &payments, &policy(3))
        .await
        .unwrap();
    let first = h.engine.register(&h.tenant, named(&payments)).await;
    let first = first.unwrap().task;
    assert_eq!(first.spec.retry.max_attempts(), Some(3));

    // A change affects new tasks only.
    h.engine
        .put_policy(&h.tenant, &payments, &policy(6))
        .await
        .unwrap();
    let second = h.engine.register(&h.tenant, named(&payments)).await;
    assert_eq!(second.unwrap().task.spec.retry.max_attempts(), Some(6));
    let first = h.engine.get(&h.tenant, &first.id).await.unwrap().task;
    assert_eq!(first.spec.retry.max_attempts(), Some(3));

    // The tenant's `default` replaces the built-in default; a policy given stays.
    let mut plain = new_task(FireTime::Now, RetryPolicy::default());
    plain.retry_from = RetrySource::Default;
    let built_in = h.engine.register(&h.tenant, plain.clone()).await;
    assert_eq!(built_in.unwrap().task.spec.retry, RetryPolicy::default());
    h.engine
        .put_policy(&h.tenant, &DefinitionName::default_name(), &policy(2))
        .await
        .unwrap();
    let defaulted = h.engine.register(&h.tenant, plain).await.unwrap().task;
    assert_eq!(defaulted.spec.retry.max_attempts(), Some(2));
    let given = h
        .engine
        .register(&h.tenant, new_task(FireTime::Now, policy(7).retry))
        .await;
    assert_eq!(given.unwrap().task.spec.retry.max_attempts(), Some(7));
    let other = TenantId::parse("other").unwrap();
    assert!(h.engine.register(&other, named(&payments)).await.is_err());
}

#[tokio::test]
async fn a_policy_gives_its_flow_to_the_tasks_that_use_it_unless_they_give_their_own() {
    let h = harness(ScriptedWebhooks::default());
    let partner = FlowSpec::new("partner", Some(50), None, Some(3)).unwrap();
    let own = FlowSpec::new("own", None, None, Some(1)).unwrap();
    let policy = Policy {
        retry: RetryPolicy::default().with_max_attempts(4).unwrap(),
        flow: Some(partner.clone()),
    };
    let payments = DefinitionName::parse("payments").unwrap();
    h.engine
        .put_policy(&h.tenant, &payments, &policy)
        .await
        .unwrap();
    let register = |flow: Option<FlowSpec>, from: RetrySource| {
        let mut task = new_task(FireTime::Now, RetryPolicy::default());
        task.spec.flow = flow;
        task.retry_from = from;
        let engine = h.engine.clone();
        let tenant = h.tenant.clone();
        async move { engine.register(&tenant, task).await.unwrap().task.spec }
    };
    let named = register(None, RetrySource::Named(payments.clone())).await;
    assert_eq!(
        (named.retry.max_attempts(), named.flow),
        (Some(4), Some(partner.clone()))
    );
    let overridden = register(Some(own.clone()), RetrySource::Named(payments)).await;
    assert_eq!(overridden.flow, Some(own));
    // A task that gives its own retries uses no policy, and so no policy's flow.
    assert_eq!(register(None, RetrySource::Given).await.flow, None);
    // The tenant's `default` policy gives its flow to the tasks it applies to.
    h.engine
        .put_policy(&h.tenant, &DefinitionName::default_name(), &policy)
        .await
        .unwrap();
    assert_eq!(
        register(None, RetrySource::Default).await.flow,
        Some(partner)
    );
}

#[tokio::test]
async fn a_call_that_never_left_this_machine_is_no_attempt_and_is_made_again() {
    let out_of_files = WebhookResult {
        error: Some(WebhookError::Local(
            "Too many open files (os error 24)".into(),
        )),
        ..WebhookResult::default()
    };
    let once = RetryPolicy::default().with_max_attempts(1).unwrap();
    let h = harness(ScriptedWebhooks::answering(vec![out_of_files, status(200)]));
    let task = h.register(FireTime::Now, once).await;
    h.timer.clear();
    assert_eq!(
        h.engine.deliver(task.attempt_ref(1)).await.unwrap(),
        DeliverOutcome::GivenBack
    );
    let back = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(
        (back.task.status, back.task.attempt),
        (Status::Scheduled, 1)
    );
    assert!(
        back.attempts.is_empty(),
        "nothing recorded: no attempt was made"
    );
    assert_eq!(
        h.timer.armed(),
        vec![(
            task.id,
            Attempt::Delivery(1),
            t0() + chrono::Duration::seconds(1)
        )],
        "armed again, shortly"
    );

    // A task allowed one attempt still has it.
    h.clock.advance(secs(1));
    assert_eq!(
        h.engine.deliver(task.attempt_ref(1)).await.unwrap(),
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    let done = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(done.attempts.len(), 1);
    assert_eq!(done.attempts[0].number, 1);
    assert_eq!(h.webhooks.calls(), 2);
}

/// The claim's write took longer than the lease's margin (30 s here): the call could not
/// end within the lease, past which another delivery may take the attempt over. No call
/// is made; the attempt fires again when the lease ends, and is made then.
#[tokio::test]
async fn a_claim_that_outlasts_its_leases_margin_makes_no_call_until_the_lease_ends() {
    let h = harness(ScriptedWebhooks::default());
    let task = h.register(FireTime::Now, RetryPolicy::default()).await;
    let clock = h.clock.clone();
    h.store.on_write(move |what| {
        if what == "claim" {
            clock.advance(secs(31));
        }
    });
    let at = AttemptRef::delivery(h.tenant.clone(), task.id, 1);
    h.timer.clear();
    let outcome = h.engine.deliver(at.clone()).await.unwrap();
    assert_eq!(outcome, DeliverOutcome::Stale);
    assert_eq!(h.webhooks.calls(), 0, "no call outside the lease");
    let stored = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
    let lease_until = stored.lease_until.expect("still claimed");
    assert_eq!(
        h.timer.armed(),
        vec![(task.id, Attempt::Delivery(1), lease_until)],
        "fires again when the lease ends"
    );
    h.store.on_write(|_| {});
    h.clock.set(lease_until);
    let outcome = h.engine.deliver(at).await.unwrap();
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    assert_eq!(h.webhooks.calls(), 1);
}
