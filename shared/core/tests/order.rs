//! Ordered delivery per key on a manual clock: a younger task due first waits for its
//! elder and gets its turn the moment the elder succeeds; a failed elder blocks its key
//! until it is canceled or retried, unless it asked to be skipped; a place whose hand-off
//! was lost is given up by the next task to look; a replacement keeps its task's place.

use boomerang_core::domain::{
    Attempt, OnHeadFailure, OrderKey, OrderSpec, RetryPolicy, Status, Task,
};
use boomerang_core::engine::{DeliverOutcome, FireTime};
use boomerang_core::ports::{OrderKeys, TaskStore};
use boomerang_core::testing::harness::*;

fn once() -> RetryPolicy {
    RetryPolicy::default().with_max_attempts(1).unwrap()
}

/// Registers a task of key `k` calling `https://example.com/{name}`.
async fn ordered(h: &Harness, name: &str, when: FireTime, policy: OnHeadFailure) -> Task {
    let mut new = new_task(when, once());
    new.spec.request.url = format!("https://example.com/{name}");
    new.spec.order = Some(OrderSpec::new(OrderKey::parse("k").unwrap(), policy));
    h.engine.register(&h.tenant, new).await.unwrap().task
}

fn calls(h: &Harness) -> Vec<String> {
    let urls = h.webhooks.urls.lock().unwrap().clone();
    urls.iter()
        .map(|u| u.trim_start_matches("https://example.com/").to_string())
        .collect()
}

/// Whether the timer was armed for `task`'s attempt 1 at `at` or before.
fn armed_by(h: &Harness, task: &Task, at: chrono::DateTime<chrono::Utc>) -> bool {
    (h.timer.armed().iter()).any(|(id, attempt, when)| {
        *id == task.id && *attempt == Attempt::Delivery(1) && *when <= at
    })
}

#[tokio::test]
async fn a_younger_task_due_first_waits_and_gets_its_turn_when_its_elder_succeeds() {
    let h = harness(ScriptedWebhooks::answering(vec![]));
    let elder = ordered(&h, "elder", FireTime::After(secs(10)), OnHeadFailure::Block).await;
    let younger = ordered(&h, "younger", FireTime::Now, OnHeadFailure::Block).await;
    assert!(younger.spec.order.as_ref().unwrap().seq > elder.spec.order.as_ref().unwrap().seq);

    assert_eq!(h.fire_attempt(&younger, 1).await, DeliverOutcome::Deferred);
    assert!(calls(&h).is_empty(), "the younger waits for its elder");
    h.clock.advance(secs(10));
    h.timer.clear();
    assert_eq!(
        h.fire_attempt(&elder, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert!(
        armed_by(&h, &younger, h.clock_now()),
        "the turn is passed on at once"
    );
    assert_eq!(
        h.fire_attempt(&younger, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(calls(&h), ["elder", "younger"]);
    let lines = h.store.order_keys(&h.tenant, None, 10).await.unwrap();
    assert_eq!(lines[0].backlog, 0, "both places given up");
}

#[tokio::test]
async fn a_failed_elder_blocks_its_key_until_it_is_canceled() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500)]));
    let elder = ordered(&h, "elder", FireTime::Now, OnHeadFailure::Block).await;
    let younger = ordered(&h, "younger", FireTime::Now, OnHeadFailure::Block).await;
    assert_eq!(
        h.fire_attempt(&elder, 1).await,
        DeliverOutcome::Attempted(Status::Failed)
    );
    assert_eq!(h.fire_attempt(&younger, 1).await, DeliverOutcome::Deferred);
    h.clock.advance(secs(60));
    assert_eq!(
        h.fire_attempt(&younger, 1).await,
        DeliverOutcome::Deferred,
        "still blocked"
    );

    let canceled = h.engine.cancel(&h.tenant, &elder.id).await.unwrap();
    assert_eq!(canceled.status, Status::Canceled);
    assert!(armed_by(&h, &younger, h.clock_now()));
    assert_eq!(
        h.fire_attempt(&younger, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(calls(&h), ["elder", "younger"]);
}

#[tokio::test]
async fn a_failed_elder_retried_goes_first_and_then_its_younger() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500)]));
    let elder = ordered(&h, "elder", FireTime::Now, OnHeadFailure::Block).await;
    let younger = ordered(&h, "younger", FireTime::Now, OnHeadFailure::Block).await;
    h.fire_attempt(&elder, 1).await;
    assert_eq!(h.fire_attempt(&younger, 1).await, DeliverOutcome::Deferred);
    let retried = h.engine.redrive(&h.tenant, &elder.id).await.unwrap();
    assert_eq!(retried.spec.order, elder.spec.order, "it keeps its place");
    assert_eq!(
        h.fire_attempt(&retried, 2).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(
        h.fire_attempt(&younger, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(calls(&h), ["elder", "elder", "younger"]);
}

#[tokio::test]
async fn an_elder_that_asked_to_be_skipped_lets_the_key_go_on_and_a_retry_of_it_goes_last() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500)]));
    let elder = ordered(&h, "elder", FireTime::Now, OnHeadFailure::Skip).await;
    let younger = ordered(
        &h,
        "younger",
        FireTime::After(secs(5)),
        OnHeadFailure::Block,
    )
    .await;
    assert_eq!(
        h.fire_attempt(&elder, 1).await,
        DeliverOutcome::Attempted(Status::Failed)
    );
    // Retried before its younger was delivered: it takes a new place, behind it.
    let retried = h.engine.redrive(&h.tenant, &elder.id).await.unwrap();
    let (old, new) = (
        elder.spec.order.unwrap().seq,
        retried.spec.order.clone().unwrap().seq,
    );
    assert!(new > old, "a new place, at the end");
    assert_eq!(h.fire_attempt(&retried, 2).await, DeliverOutcome::Deferred);
    h.clock.advance(secs(5));
    assert_eq!(
        h.fire_attempt(&younger, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(
        h.fire_attempt(&retried, 2).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(calls(&h), ["elder", "younger", "elder"]);
}

#[tokio::test]
async fn a_place_whose_hand_off_was_lost_is_given_up_by_the_next_task_to_look() {
    let h = harness(ScriptedWebhooks::answering(vec![]));
    let elder = ordered(&h, "elder", FireTime::Now, OnHeadFailure::Block).await;
    let younger = ordered(&h, "younger", FireTime::Now, OnHeadFailure::Block).await;
    // The elder ended, but the process stopped before it gave its place up.
    let mut done = h.store.get(&h.tenant, &elder.id).await.unwrap().unwrap();
    done.status = Status::Succeeded;
    done.next_attempt_at = None;
    done.version += 1;
    h.store.update(&done, elder.version).await.unwrap();
    // A place this young may be ahead of its task's write: it is waited for...
    assert_eq!(h.fire_attempt(&younger, 1).await, DeliverOutcome::Deferred);
    // ...and given up once it is a minute old.
    h.clock.advance(secs(60));
    assert_eq!(
        h.fire_attempt(&younger, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    let key = OrderKey::parse("k").unwrap();
    assert_eq!(h.store.head(&h.tenant, &key).await.unwrap(), None);
}
