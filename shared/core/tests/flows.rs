//! Flow limits in the engine: a flow's rate per window and its parallelism, shared by its
//! tasks whatever their destinations; a task over a limit waits, uncounted.

use boomerang_core::domain::{FlowSpec, Task};
use boomerang_core::testing::harness::*;

async fn register_in(h: &Harness, url: &str, flow: &FlowSpec) -> Task {
    let mut new = new_task(FireTime::Now, RetryPolicy::default());
    new.spec.request.url = url.into();
    new.spec.flow = Some(flow.clone());
    h.engine.register(&h.tenant, new).await.unwrap().task
}

#[tokio::test]
async fn a_flows_rate_holds_per_window_and_the_rest_wait_for_the_next() {
    let h = harness(ScriptedWebhooks::default());
    let flow = FlowSpec::new("partner", Some(2), Some(secs(1)), None).unwrap();
    // Two destinations, one flow: the rate is the flow's.
    let a = register_in(&h, "https://a.test/x", &flow).await;
    let b = register_in(&h, "https://b.test/x", &flow).await;
    let c = register_in(&h, "https://a.test/y", &flow).await;
    for task in [&a, &b] {
        let outcome = h.fire_attempt(task, 1).await;
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    h.timer.clear();
    assert_eq!(h.fire_attempt(&c, 1).await, DeliverOutcome::Deferred);
    // t0 is a whole second: the next window starts one second later.
    let next_window = t0() + chrono::Duration::seconds(1);
    assert_eq!(
        h.timer.armed(),
        vec![(c.id, Attempt::Delivery(1), next_window)]
    );
    let details = h.engine.get(&h.tenant, &c.id).await.unwrap();
    assert_eq!(
        (details.task.status, details.task.attempt),
        (Status::Scheduled, 1)
    );
    assert!(details.attempts.is_empty(), "waiting is no attempt");
    assert_eq!(h.webhooks.calls(), 2);

    h.clock.advance(secs(1));
    assert_eq!(
        h.fire_attempt(&c, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
}

#[tokio::test]
async fn on_a_timer_a_second_imprecise_a_rate_deferral_is_armed_ahead_of_its_window() {
    let timer = RecordingTimer::imprecise(secs(1));
    let h = harness_with(ScriptedWebhooks::default(), timer, t0());
    let flow = FlowSpec::new("partner", Some(1), Some(secs(1)), None).unwrap();
    let a = register_in(&h, "https://a.test/x", &flow).await;
    let b = register_in(&h, "https://a.test/y", &flow).await;
    let first = h.fire_attempt(&a, 1).await;
    assert_eq!(first, DeliverOutcome::Attempted(Status::Succeeded));
    h.timer.clear();
    assert_eq!(h.fire_attempt(&b, 1).await, DeliverOutcome::Deferred);
    // Up to a second late, the fire still lands in the next window.
    let armed_at = t0() + chrono::Duration::milliseconds(750);
    assert_eq!(
        h.timer.armed(),
        vec![(b.id, Attempt::Delivery(1), armed_at)]
    );

    h.clock.advance(secs(1));
    let second = h.fire_attempt(&b, 1).await;
    assert_eq!(second, DeliverOutcome::Attempted(Status::Succeeded));
}

/// A harness whose webhook holds every call until the returned gate lets it go, with one
/// task of a `parallelism: 1` flow in its call.
async fn one_call_in_flight() -> (
    Harness,
    Arc<Semaphore>,
    FlowSpec,
    tokio::task::JoinHandle<Result<DeliverOutcome, EngineError>>,
) {
    let gate = Arc::new(Semaphore::new(0));
    let h = harness(ScriptedWebhooks {
        gate: Some(gate.clone()),
        ..ScriptedWebhooks::default()
    });
    let flow = FlowSpec::new("one-at-a-time", None, None, Some(1)).unwrap();
    let first = register_in(&h, "https://a.test/x", &flow).await;
    let (engine, attempt) = (h.engine.clone(), first.attempt_ref(1));
    let running = tokio::spawn(async move { engine.deliver(attempt).await });
    wait_until(|| h.webhooks.calls() == 1).await;
    (h, gate, flow, running)
}

#[tokio::test]
async fn a_flows_parallelism_holds_until_a_call_ends() {
    let (h, gate, flow, running) = one_call_in_flight().await;
    let second = register_in(&h, "https://b.test/x", &flow).await;
    let (engine, attempt) = (h.engine.clone(), second.attempt_ref(1));
    let waiting = tokio::spawn(async move { engine.deliver(attempt).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        h.webhooks.calls(),
        1,
        "the second waits for the first's slot"
    );

    gate.add_permits(2);
    for run in [running, waiting] {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    assert_eq!(h.webhooks.most_in_flight.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_task_that_waited_long_for_a_flow_slot_is_put_off_uncounted() {
    let (h, gate, flow, running) = one_call_in_flight().await;
    let second = register_in(&h, "https://b.test/x", &flow).await;
    h.timer.clear();
    // Paused time moves on by itself while every task waits.
    assert_eq!(h.fire_attempt(&second, 1).await, DeliverOutcome::Deferred);
    let armed = h.timer.armed();
    assert_eq!(armed.len(), 1);
    assert!(armed[0].2 > h.clock_now(), "looked at again a little later");
    let details = h.engine.get(&h.tenant, &second.id).await.unwrap();
    assert!(details.attempts.is_empty(), "waiting is no attempt");
    gate.add_permits(1);
    running.await.unwrap().unwrap();
}

#[tokio::test]
async fn flows_of_other_keys_do_not_share_limits() {
    let h = harness(ScriptedWebhooks::default());
    let one = FlowSpec::new("one", Some(1), None, None).unwrap();
    let other = FlowSpec::new("other", Some(1), None, None).unwrap();
    let a = register_in(&h, "https://a.test/x", &one).await;
    let b = register_in(&h, "https://a.test/x", &other).await;
    let c = register_in(&h, "https://a.test/x", &one).await;
    for task in [&a, &b] {
        let outcome = h.fire_attempt(task, 1).await;
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
    assert_eq!(h.fire_attempt(&c, 1).await, DeliverOutcome::Deferred);
}

#[tokio::test]
async fn process_flow_counters_honour_the_contract() {
    let counters = Arc::new(boomerang_core::ports::ProcessFlowCounters::default());
    boomerang_core::testing::flow_contract::check_flow_counters(counters, "process").await;
}

#[tokio::test]
async fn the_memory_store_keeps_flow_pauses_by_the_contract() {
    let store = Arc::new(boomerang_core::testing::MemoryStore::default());
    boomerang_core::testing::flow_contract::check_flow_pauses(store, "memory").await;
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_fire_that_loses_the_claim_frees_only_its_own_slot() {
    let gate = Arc::new(Semaphore::new(0));
    let h = harness(ScriptedWebhooks {
        gate: Some(gate.clone()),
        ..ScriptedWebhooks::default()
    });
    let flow = FlowSpec::new("two", None, None, Some(2)).unwrap();
    let first = register_in(&h, "https://a.test/x", &flow).await;
    let (engine, attempt) = (h.engine.clone(), first.attempt_ref(1));
    let running = tokio::spawn(async move { engine.deliver(attempt).await });
    wait_until(|| h.webhooks.calls() == 1).await;

    // A duplicate fire reads the task as it was before the claim: it takes the second
    // slot, loses the claim, and must free that slot, not the first delivery's.
    h.store.lag_next_peek(Some(first.clone()));
    assert_eq!(h.fire_attempt(&first, 1).await, DeliverOutcome::Stale);
    let second = register_in(&h, "https://b.test/x", &flow).await;
    let (engine, attempt) = (h.engine.clone(), second.attempt_ref(1));
    let second_run = tokio::spawn(async move { engine.deliver(attempt).await });
    wait_until(|| h.webhooks.calls() == 2).await;
    let third = register_in(&h, "https://c.test/x", &flow).await;
    // Were a third slot free, its call would hang at the gate: the timeout says so.
    let third_fire = tokio::time::timeout(Duration::from_secs(30), h.fire_attempt(&third, 1));
    let outcome = third_fire.await.expect("a third call of the flow went out");
    assert_eq!(outcome, DeliverOutcome::Deferred);
    assert_eq!(
        h.webhooks.calls(),
        2,
        "never more than two calls of the flow"
    );

    gate.add_permits(2);
    for run in [running, second_run] {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    }
}

#[tokio::test]
async fn a_paused_flow_holds_its_tasks_and_resuming_wakes_them_at_once() {
    let h = harness(ScriptedWebhooks::default());
    let flow = FlowSpec::new("partner", Some(100), None, None).unwrap();
    let key = flow.key().clone();
    let task = register_in(&h, "https://a.test/x", &flow).await;
    let paused = h.engine.pause_flow(&h.tenant, &key).await.unwrap();
    assert!(paused.paused);
    h.timer.clear();
    assert_eq!(h.fire_attempt(&task, 1).await, DeliverOutcome::Deferred);
    assert_eq!(h.webhooks.calls(), 0, "a paused flow makes no call");
    let armed = h.timer.armed();
    assert_eq!(armed.len(), 1);
    assert!(armed[0].2 > t0(), "put off while paused");
    let listed = h.engine.flows(&h.tenant).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].key.clone(), listed[0].paused, listed[0].waiting),
        (key.clone(), true, 1)
    );

    h.timer.clear();
    let resumed = h.engine.resume_flow(&h.tenant, &key).await.unwrap();
    assert_eq!((resumed.paused, resumed.waiting), (false, 0));
    assert_eq!(
        h.timer.armed(),
        vec![(task.id, Attempt::Delivery(1), t0())],
        "woken at once"
    );
    let outcome = h.fire_attempt(&task, 1).await;
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    assert!(h.engine.flows(&h.tenant).await.unwrap().is_empty());
}
