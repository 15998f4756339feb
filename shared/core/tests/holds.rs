//! Held tasks in the engine: release, cancel, and the check-back of a silent caller.

use boomerang_core::domain::{CheckDecision, HoldSpec, OnUnknown, Task};
use boomerang_core::testing::harness::*;

const CHECK: &str = "https://shop.example.com/tx-status";

fn answer(code: u16, body: &str) -> WebhookResult {
    WebhookResult {
        excerpt: Some(body.into()),
        ..status(code)
    }
}

fn decision(d: &str) -> WebhookResult {
    answer(200, &format!(r#"{{"decision":"{d}"}}"#))
}

fn hold(check_url: Option<&str>, on_unknown: OnUnknown, max_checks: u32) -> HoldSpec {
    HoldSpec::new(
        secs(30),
        check_url.map(str::to_string),
        on_unknown,
        Some(i64::from(max_checks)),
    )
    .unwrap()
}

/// What these tests add to the engine harness.
trait HeldTasks {
    async fn register_held(&self, hold: HoldSpec) -> Task;
    async fn now_of(&self, task: &Task) -> Task;
    async fn fire_check(&self, task: &Task) -> DeliverOutcome;
}

impl HeldTasks for Harness {
    async fn register_held(&self, hold: HoldSpec) -> Task {
        let mut new = new_task(FireTime::After(secs(10)), RetryPolicy::default());
        new.spec.hold = Some(hold);
        self.engine.register(&self.tenant, new).await.unwrap().task
    }

    async fn now_of(&self, task: &Task) -> Task {
        self.engine.get(&self.tenant, &task.id).await.unwrap().task
    }

    /// Plays the timer for the held task's check when it is due.
    async fn fire_check(&self, task: &Task) -> DeliverOutcome {
        let now = self.now_of(task).await;
        let due = now.check_at.expect("a check is due");
        let wait = (due - self.clock_now()).num_milliseconds().max(0) as u64;
        self.clock.advance(Duration::from_millis(wait));
        self.fire_check_now(task).await
    }
}

#[tokio::test]
async fn a_held_task_waits_and_a_release_schedules_it_once() {
    let h = harness(ScriptedWebhooks::default());
    let task = h
        .register_held(hold(Some(CHECK), OnUnknown::Cancel, 20))
        .await;
    assert_eq!(task.status, Status::Held);
    let check_at = t0() + chrono::Duration::seconds(30);
    assert_eq!(task.check_at, Some(check_at));
    assert_eq!(
        h.timer.armed(),
        vec![(task.id, Attempt::Check, check_at)],
        "the check, not a delivery"
    );

    // The attempt's time comes and goes: a stray fire delivers nothing.
    h.clock.advance(secs(12));
    let stray = h.fire_attempt(&task, 1).await;
    assert_eq!(stray, DeliverOutcome::Stale);
    assert_eq!(h.webhooks.calls(), 0);

    let released = h.engine.release(&h.tenant, &task.id).await.unwrap();
    assert!(released.released_now);
    assert_eq!(released.task.status, Status::Scheduled);
    assert_eq!(released.task.check_at, None);
    assert_eq!(
        released.task.next_attempt_at,
        Some(h.clock_now()),
        "its fire time passed while held: at once"
    );
    let again = h.engine.release(&h.tenant, &task.id).await.unwrap();
    assert!(!again.released_now, "a repeat answers the task as it is");
    assert_eq!(again.task.version, released.task.version);

    let outcome = h.fire_attempt(&task, 1).await;
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    assert_eq!(h.webhooks.calls(), 1);
    h.clock.advance(secs(60));
    assert_eq!(
        h.fire_check_now(&task).await,
        DeliverOutcome::Stale,
        "the old check timer finds nothing to check"
    );
}

#[tokio::test]
async fn a_canceled_hold_is_never_delivered_and_cannot_be_released() {
    let h = harness(ScriptedWebhooks::default());
    let task = h
        .register_held(hold(Some(CHECK), OnUnknown::Release, 20))
        .await;
    let canceled = h.engine.cancel(&h.tenant, &task.id).await.unwrap();
    assert_eq!(canceled.status, Status::Canceled);
    assert!(matches!(
        h.engine.release(&h.tenant, &task.id).await,
        Err(EngineError::Conflict(_))
    ));
    h.clock.advance(secs(60));
    let fired = h.fire_check_now(&task).await;
    assert_eq!(fired, DeliverOutcome::Stale);
    assert_eq!(h.webhooks.calls(), 0, "neither checked nor delivered");
    let plain = h.register(FireTime::Now, RetryPolicy::default()).await;
    assert!(
        matches!(
            h.engine.release(&h.tenant, &plain.id).await,
            Err(EngineError::Conflict(_))
        ),
        "a task never held is not released"
    );
}

#[tokio::test]
async fn a_silent_caller_is_checked_with_backoff_until_it_answers() {
    let h = harness(ScriptedWebhooks::answering(vec![
        status(500),
        answer(200, "not json"),
        decision("release"),
    ]));
    let task = h
        .register_held(hold(Some(CHECK), OnUnknown::Cancel, 20))
        .await;
    assert_eq!(
        h.fire_check(&task).await,
        DeliverOutcome::Checked(Status::Held)
    );
    let once = h.now_of(&task).await;
    assert_eq!(once.checks.len(), 1);
    assert_eq!(once.checks[0].status_code, Some(500));
    assert_eq!(
        once.check_at,
        Some(h.clock_now() + chrono::Duration::seconds(1))
    );
    assert_eq!(
        h.fire_check(&task).await,
        DeliverOutcome::Checked(Status::Held)
    );
    let twice = h.now_of(&task).await;
    assert_eq!(
        twice.check_at,
        Some(h.clock_now() + chrono::Duration::seconds(5))
    );
    assert_eq!(
        h.fire_check(&task).await,
        DeliverOutcome::Checked(Status::Scheduled)
    );
    let released = h.now_of(&task).await;
    let decisions: Vec<_> = released.checks.iter().map(|c| c.decision).collect();
    assert_eq!(decisions, vec![None, None, Some(CheckDecision::Release)]);
    assert!(released.checks[1]
        .error
        .as_deref()
        .unwrap()
        .contains("decision"));
    assert_eq!(h.webhooks.urls.lock().unwrap().clone(), vec![CHECK; 3]);
    h.fire_attempt(&task, 1).await;
    assert_eq!(h.now_of(&task).await.status, Status::Succeeded);
}

#[tokio::test]
async fn a_check_answering_cancel_or_gone_cancels() {
    for answer in [decision("cancel"), status(404), status(410)] {
        let h = harness(ScriptedWebhooks::answering(vec![answer]));
        let task = h
            .register_held(hold(Some(CHECK), OnUnknown::Release, 20))
            .await;
        assert_eq!(
            h.fire_check(&task).await,
            DeliverOutcome::Checked(Status::Canceled)
        );
        assert_eq!(h.webhooks.calls(), 1, "checked, never delivered");
    }
}

#[tokio::test]
async fn on_unknown_decides_after_the_last_check_or_at_the_timeout_without_a_check_url() {
    let h = harness(ScriptedWebhooks::answering(vec![status(503); 3]));
    let task = h
        .register_held(hold(Some(CHECK), OnUnknown::Release, 3))
        .await;
    for _ in 0..2 {
        assert_eq!(
            h.fire_check(&task).await,
            DeliverOutcome::Checked(Status::Held)
        );
    }
    assert_eq!(
        h.fire_check(&task).await,
        DeliverOutcome::Checked(Status::Scheduled)
    );
    assert_eq!(h.now_of(&task).await.checks.len(), 3);

    let h = harness(ScriptedWebhooks::default());
    let task = h.register_held(hold(None, OnUnknown::Cancel, 20)).await;
    assert_eq!(
        h.fire_check(&task).await,
        DeliverOutcome::Checked(Status::Canceled)
    );
    assert_eq!(h.webhooks.calls(), 0, "nobody to ask");
}

#[tokio::test]
async fn a_release_racing_a_check_call_wins_and_the_check_is_dropped() {
    let gate = Arc::new(Semaphore::new(0));
    let h = harness(ScriptedWebhooks {
        gate: Some(gate.clone()),
        ..ScriptedWebhooks::answering(vec![decision("cancel")])
    });
    let task = h
        .register_held(hold(Some(CHECK), OnUnknown::Cancel, 20))
        .await;
    h.clock.advance(secs(30));
    let engine = h.engine.clone();
    let at = AttemptRef::check(h.tenant.clone(), task.id);
    let check = tokio::spawn(async move { engine.deliver(at).await });
    while h.webhooks.calls() == 0 {
        tokio::task::yield_now().await;
    }
    let released = h.engine.release(&h.tenant, &task.id).await.unwrap();
    assert!(released.released_now, "the caller's release lands first");
    gate.add_permits(1);
    assert_eq!(check.await.unwrap().unwrap(), DeliverOutcome::Stale);
    let now = h.now_of(&task).await;
    assert_eq!(now.status, Status::Scheduled, "the check's cancel lost");
    assert!(now.checks.is_empty());
}

/// With a durable timer (armed before its write), a release's timer may fire while the
/// store still shows the task held; the fire finds nothing to deliver and is dropped. The
/// release arms its attempt again after its write, so it is delivered all the same; and a
/// check timer that fires before its task is stored is looked at again.
#[tokio::test]
async fn with_a_durable_timer_a_release_arms_after_its_write_too() {
    // Now: a fire's task id is as old as the ids the engine makes.
    let now = Utc::now();
    let h = harness_with(ScriptedWebhooks::default(), RecordingTimer::durable(), now);
    let task = h
        .register_held(hold(Some(CHECK), OnUnknown::Cancel, 20))
        .await;
    h.clock.advance(secs(12));
    // The fire of the release's first arm, overtaking the release's write.
    assert_eq!(h.fire_attempt(&task, 1).await, DeliverOutcome::Stale);
    h.timer.clear();
    h.engine.release(&h.tenant, &task.id).await.unwrap();
    let due = h.clock_now();
    assert_eq!(
        h.timer.armed(),
        vec![
            (task.id, Attempt::Delivery(1), due),
            (task.id, Attempt::Delivery(1), due)
        ],
        "armed before the write, and again after it"
    );
    assert_eq!(
        h.fire_attempt(&task, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );

    h.timer.clear();
    let unseen = boomerang_core::domain::TaskId::new();
    let check = AttemptRef::check(h.tenant.clone(), unseen);
    assert_eq!(
        h.engine.deliver(check).await.unwrap(),
        DeliverOutcome::Unknown
    );
    assert_eq!(
        h.timer.armed().len(),
        1,
        "a young task's check is looked at again"
    );
}

#[tokio::test]
async fn a_check_that_never_left_this_machine_is_no_check_and_is_asked_again() {
    let out_of_files = WebhookResult {
        error: Some(WebhookError::Local(
            "Too many open files (os error 24)".into(),
        )),
        ..WebhookResult::default()
    };
    let h = harness(ScriptedWebhooks::answering(vec![
        out_of_files,
        decision("release"),
    ]));
    let task = h
        .register_held(hold(Some(CHECK), OnUnknown::Cancel, 1))
        .await;
    h.timer.clear();
    assert_eq!(h.fire_check(&task).await, DeliverOutcome::GivenBack);
    let held = h.now_of(&task).await;
    assert_eq!(held.status, Status::Held);
    assert!(held.checks.is_empty(), "no check was made");
    assert_eq!(
        h.timer.armed(),
        vec![(
            task.id,
            Attempt::Check,
            h.clock_now() + chrono::Duration::seconds(1)
        )],
        "asked again shortly"
    );
    // With `max_checks: 1`, the one check it has is still made, and decides.
    h.clock.advance(secs(1));
    assert_eq!(
        h.fire_check_now(&task).await,
        DeliverOutcome::Checked(Status::Scheduled)
    );
    assert_eq!(h.now_of(&task).await.checks.len(), 1);
}
