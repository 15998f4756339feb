//! Each step of an attempt, alone, on the in-memory harness.

use super::call::judge;
use super::destination_gate::HeldSlots;
use super::outcome::Step;
use super::steps::Claim;
use std::sync::Arc;

use crate::domain::{AttemptRecord, Destination, Task, TaskId, Verdict};
use crate::engine::error::EngineError;
use crate::ports::{DestinationSlots, SlotHolder};
use crate::testing::harness::*;
use crate::testing::MemoryDestinationSlots;

/// A harness with one task due now, as stored.
async fn due_task(timer: RecordingTimer) -> (Harness, Task) {
    let h = harness_with(ScriptedWebhooks::default(), timer, t0());
    let task = h.register(FireTime::Now, RetryPolicy::default()).await;
    (h, task)
}

/// The claim `task`'s first attempt makes, written.
async fn written_claim(h: &Harness, task: &Task) -> Claim {
    let Step::Continue(claim) = h
        .engine
        .take_claim(&task.attempt_ref(1), task)
        .await
        .unwrap()
    else {
        panic!("the claim was refused");
    };
    let written = h
        .engine
        .write_claim(&claim, &HeldSlots::default())
        .await
        .unwrap();
    assert_eq!(written, Step::Continue(()));
    claim
}

/// The claimed attempt's next state and record, for a response of `code`.
fn answered(h: &Harness, claim: &Claim, code: u16) -> (Task, AttemptRecord) {
    let span = (claim.started, h.clock_now());
    let verdict = (h.engine).record_verdict(&claim.claimed, status(code), span, "w");
    verdict.unwrap()
}

fn local_error() -> WebhookResult {
    WebhookResult {
        error: Some(WebhookError::Local("out of open files".into())),
        ..WebhookResult::default()
    }
}

#[tokio::test]
async fn the_stop_line_stops_a_call_that_could_not_end_before_it() {
    let (h, task) = due_task(RecordingTimer::durable()).await;
    let at = task.attempt_ref(1);
    assert_eq!(
        h.engine.check_stop_line(&at, &task).await.unwrap(),
        Step::Continue(())
    );
    // A line drawn a minute ahead; 55 s later, the task's call (up to 10 s) could no
    // longer end before it.
    h.engine
        .deliver_until(Some(h.clock_now() + chrono::Duration::seconds(60)));
    h.clock.advance(secs(55));
    h.timer.clear();
    assert_eq!(
        h.engine.check_stop_line(&at, &task).await.unwrap(),
        Step::Done(DeliverOutcome::Stopped)
    );
    // Left due, armed again at once for another worker.
    assert_eq!(
        h.timer.armed(),
        vec![(task.id, Attempt::Delivery(1), h.clock_now())]
    );
}

#[tokio::test]
async fn a_task_of_no_schedule_has_no_occurrence_to_take() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let step = h.engine.take_occurrence(&task.attempt_ref(1), &task).await;
    assert_eq!(step.unwrap(), Step::Continue(()));
}

#[tokio::test]
async fn an_early_fire_is_armed_again_for_its_time() {
    let h = harness(ScriptedWebhooks::default());
    let task = h
        .register(FireTime::After(secs(60)), RetryPolicy::default())
        .await;
    h.timer.clear();
    let step = h.engine.take_claim(&task.attempt_ref(1), &task).await;
    assert!(matches!(step.unwrap(), Step::Done(DeliverOutcome::Early)));
    let due = h.clock_now() + chrono::Duration::seconds(60);
    assert_eq!(h.timer.armed(), vec![(task.id, Attempt::Delivery(1), due)]);
}

/// A fire that came early and cannot arm its time again fails, so that the timer that
/// brought it (a queue message, not deleted) comes again: it is not let go with nothing
/// in its place.
#[tokio::test]
async fn an_early_fire_that_cannot_arm_again_fails() {
    let h = harness(ScriptedWebhooks::default());
    let task = h
        .register(FireTime::After(secs(60)), RetryPolicy::default())
        .await;
    h.timer.clear();
    h.timer.fail_next(1);
    let step = h.engine.take_claim(&task.attempt_ref(1), &task).await;
    assert!(matches!(step, Err(EngineError::Timer(_))), "{step:?}");
    let failed = h.engine.deliver(task.attempt_ref(1)).await;
    assert!(failed.is_ok(), "the timer works again: {failed:?}");
    assert_eq!(h.timer.armed().len(), 1);
}

#[tokio::test]
async fn a_fire_ahead_of_the_task_or_behind_it_is_stale() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    // A check's timer, on a task that is not held; and the attempt after its current one.
    for at in [task.check_ref(), task.attempt_ref(2)] {
        let step = h.engine.take_claim(&at, &task).await;
        assert!(matches!(step.unwrap(), Step::Done(DeliverOutcome::Stale)));
    }
}

#[tokio::test]
async fn a_claim_holds_a_lease_of_the_timeout_and_the_margin() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let step = h.engine.take_claim(&task.attempt_ref(1), &task).await;
    let Step::Continue(claim) = step.unwrap() else {
        panic!("the claim was refused");
    };
    assert_eq!(claim.claimed.status, Status::Delivering);
    assert_eq!(claim.started, h.clock_now());
    // 10 s of timeout, 30 s of margin.
    assert_eq!(
        claim.lease_until,
        h.clock_now() + chrono::Duration::seconds(40)
    );
    assert_eq!(claim.read, task.version);
    // Nothing is written yet.
    assert_eq!(h.status_of(&task).await, Status::Scheduled);
}

#[tokio::test]
async fn a_task_of_no_flow_passes_the_flow_gate() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let step = (h.engine)
        .pass_flow_gate(&task.attempt_ref(1), &task, h.clock_now())
        .await;
    assert!(matches!(step.unwrap(), Step::Continue(None)));
}

#[tokio::test]
async fn a_claim_written_over_a_newer_write_reads_again() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let step = h.engine.take_claim(&task.attempt_ref(1), &task).await;
    let Step::Continue(claim) = step.unwrap() else {
        panic!("the claim was refused");
    };
    h.engine.cancel(&h.tenant, &task.id).await.unwrap();
    let written = h
        .engine
        .write_claim(&claim, &HeldSlots::default())
        .await
        .unwrap();
    assert_eq!(written, Step::Reread);
    assert_eq!(h.status_of(&task).await, Status::Canceled);
}

#[tokio::test]
async fn a_call_that_left_the_machine_is_not_given_back() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let claim = written_claim(&h, &task).await;
    let step = h.engine.give_back_local(&claim.claimed, &status(500)).await;
    assert_eq!(step.unwrap(), Step::Continue(()));
    assert_eq!(h.status_of(&task).await, Status::Delivering);
}

#[tokio::test]
async fn a_call_that_never_left_the_machine_is_given_back_uncounted() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let claim = written_claim(&h, &task).await;
    let step = h
        .engine
        .give_back_local(&claim.claimed, &local_error())
        .await;
    assert_eq!(step.unwrap(), Step::Done(DeliverOutcome::GivenBack));
    let stored = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(stored.task.status, Status::Scheduled);
    assert_eq!(stored.task.attempt, 1);
    assert!(stored.attempts.is_empty());
    let events = h.metrics.0.lock().unwrap().clone();
    assert!(events.contains(&MetricEvent::GivenBack));
}

#[tokio::test]
async fn the_verdict_makes_the_next_state_and_the_record() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let claim = written_claim(&h, &task).await;
    let span = (claim.started, h.clock_now());
    let (next, record) = (h.engine)
        .record_verdict(&claim.claimed, status(204), span, "worker-7")
        .unwrap();
    assert_eq!(next.status, Status::Succeeded);
    assert_eq!(record.status_code, Some(204));
    assert_eq!(record.worker.as_deref(), Some("worker-7"));
    let (next, _) = (h.engine)
        .record_verdict(&claim.claimed, status(500), span, "worker-7")
        .unwrap();
    assert_eq!(next.status, Status::Scheduled);
    assert_eq!(next.attempt, 2);
}

#[tokio::test]
async fn only_a_failed_task_sends_a_dead_letter() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let next = h.engine.dead_letter_if_failed(task.clone()).await;
    assert_eq!(next.status, Status::Scheduled);
    assert!(h.dead_letters.letters().is_empty());
}

#[tokio::test]
async fn a_task_owing_no_notice_raises_no_alert() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let claim = written_claim(&h, &task).await;
    let (next, record) = answered(&h, &claim, 200);
    let after = h
        .engine
        .alert_if_owed(&claim.claimed, next.clone(), &record)
        .await;
    assert_eq!(after.status, next.status);
    assert_eq!(after.version, next.version);
    assert_eq!(h.stored().await.len(), 1);
}

#[tokio::test]
async fn an_attempt_written_after_another_worker_took_it_over_is_stale() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let claim = written_claim(&h, &task).await;
    let at = task.attempt_ref(1);
    let (next, record) = answered(&h, &claim, 200);
    // The lease ran out and another worker's claim was written meanwhile.
    h.clock.advance(secs(60));
    let stored = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
    let Step::Continue(theirs) = h.engine.take_claim(&at, &stored).await.unwrap() else {
        panic!("the takeover was refused");
    };
    h.engine
        .write_claim(&theirs, &HeldSlots::default())
        .await
        .unwrap();
    let ended = h
        .engine
        .arm_and_write(&at, &claim.claimed, next, &record)
        .await;
    assert_eq!(ended.unwrap(), Step::Done(DeliverOutcome::Stale));
    // The other worker's claim stands.
    let stored = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
    assert_eq!(stored.version, theirs.claimed.version);
}

#[tokio::test]
async fn an_attempt_written_in_time_ends_attempted() {
    let (h, task) = due_task(RecordingTimer::default()).await;
    let claim = written_claim(&h, &task).await;
    let at = task.attempt_ref(1);
    let (next, record) = answered(&h, &claim, 200);
    let ended = h
        .engine
        .arm_and_write(&at, &claim.claimed, next, &record)
        .await;
    assert_eq!(
        ended.unwrap(),
        Step::Done(DeliverOutcome::Attempted(Status::Succeeded))
    );
    let stored = h.engine.get(&h.tenant, &task.id).await.unwrap();
    assert_eq!(stored.attempts.len(), 1);
}

#[tokio::test]
async fn responses_are_judged_by_the_tasks_rules() {
    let (_h, task) = due_task(RecordingTimer::default()).await;
    let refused = WebhookResult {
        error: Some(WebhookError::Refused("private address".into())),
        ..WebhookResult::default()
    };
    assert!(matches!(judge(&refused, &task), Verdict::Fail(_)));
    assert!(matches!(
        judge(&local_error(), &task),
        Verdict::Retry { .. }
    ));
    assert_eq!(judge(&status(200), &task), Verdict::Success);
    let unmatched = WebhookResult {
        body_matches: false,
        ..status(200)
    };
    assert!(matches!(judge(&unmatched, &task), Verdict::Retry { .. }));
    // 410 is permanent under every policy.
    assert!(matches!(judge(&status(410), &task), Verdict::Fail(_)));
    assert!(matches!(judge(&status(503), &task), Verdict::Retry { .. }));
}

/// A task due now on a harness whose tenant is limited to `limit` calls at once to a
/// destination, in slots shared as a fleet's are.
async fn shared_slots_task(limit: usize) -> (Harness, Task, Arc<MemoryDestinationSlots>) {
    let slots = Arc::new(MemoryDestinationSlots::default());
    let h = harness_shared_slots(limit, slots.clone());
    let task = h.register(FireTime::Now, RetryPolicy::default()).await;
    (h, task, slots)
}

#[tokio::test]
async fn a_shared_destination_slot_is_held_until_freed() {
    let (h, task, slots) = shared_slots_task(2).await;
    let destination = Destination::of(&task.spec.request.url);
    let seat = h.engine.take_lane(&task.attempt_ref(1), &task).await;
    let lease = h.clock_now() + chrono::Duration::seconds(40);
    let step = (h
        .engine
        .take_slots(&task.attempt_ref(1), &task, &seat.place, lease))
    .await;
    let Step::Continue(held) = step.unwrap() else {
        panic!("the slots were refused");
    };
    assert_eq!(slots.held(&h.tenant, &destination, h.clock_now()), 1);
    h.engine.free_slots(&task, &held).await;
    assert_eq!(slots.held(&h.tenant, &destination, h.clock_now()), 0);
}

/// With the limit's slots held elsewhere, the attempt is put off unclaimed (2 s on), and
/// holds nothing.
#[tokio::test]
async fn a_full_destination_puts_the_attempt_off() {
    let (h, task, slots) = shared_slots_task(1).await;
    let destination = Destination::of(&task.spec.request.url);
    let seat = h.engine.take_lane(&task.attempt_ref(1), &task).await;
    let lease = h.clock_now() + chrono::Duration::seconds(40);
    let other = SlotHolder::new(&TaskId::new());
    let taken =
        slots.take_destination_slot(&h.tenant, &destination, 1, &other, (h.clock_now(), lease));
    assert!(taken.await.unwrap());
    h.timer.clear();
    let step = (h
        .engine
        .take_slots(&task.attempt_ref(1), &task, &seat.place, lease))
    .await;
    assert!(matches!(
        step.unwrap(),
        Step::Done(DeliverOutcome::Deferred)
    ));
    let again = h.clock_now() + chrono::Duration::seconds(2);
    assert_eq!(
        h.timer.armed(),
        vec![(task.id, Attempt::Delivery(1), again)]
    );
    assert_eq!(
        slots.held(&h.tenant, &destination, h.clock_now()),
        1,
        "only the other's"
    );
    assert_eq!(h.status_of(&task).await, Status::Scheduled);
}

/// A claim that loses to a newer write frees the slot it took; a whole delivery frees its
/// slot when its call ends.
#[tokio::test]
async fn a_claim_that_is_not_written_frees_its_destination_slot() {
    let (h, task, slots) = shared_slots_task(2).await;
    let destination = Destination::of(&task.spec.request.url);
    let seat = h.engine.take_lane(&task.attempt_ref(1), &task).await;
    let at = task.attempt_ref(1);
    let Step::Continue(claim) = h.engine.take_claim(&at, &task).await.unwrap() else {
        panic!("the claim was refused");
    };
    let step = (h
        .engine
        .take_slots(&at, &task, &seat.place, claim.lease_until))
    .await;
    let Step::Continue(held) = step.unwrap() else {
        panic!("the slots were refused");
    };
    h.engine.cancel(&h.tenant, &task.id).await.unwrap();
    let written = h.engine.write_claim(&claim, &held).await.unwrap();
    assert_eq!(written, Step::Reread);
    assert_eq!(slots.held(&h.tenant, &destination, h.clock_now()), 0);

    let delivered = h.register(FireTime::Now, RetryPolicy::default()).await;
    let outcome = h.engine.deliver(delivered.attempt_ref(1)).await.unwrap();
    assert_eq!(outcome, DeliverOutcome::Attempted(Status::Succeeded));
    assert_eq!(slots.held(&h.tenant, &destination, h.clock_now()), 0);
}
