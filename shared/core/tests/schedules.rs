//! Schedules and replace-by-key in the engine, on the in-memory store (the same scenarios
//! run on each real backend in the e2e tests).

use boomerang_core::testing::harness::*;
use boomerang_core::testing::schedules;

#[tokio::test]
async fn a_daily_local_time_fires_once_a_day_across_both_daylight_saving_changes() {
    let h = harness(ScriptedWebhooks::default());
    schedules::daylight_saving_both_ways(&h.scene()).await;
}

#[tokio::test]
async fn pause_resume_delete_and_a_missed_occurrence() {
    let h = harness(ScriptedWebhooks::default());
    schedules::pause_resume_delete_and_catch_up(&h.scene()).await;
}

#[tokio::test]
async fn rapid_registrations_of_a_key_replace_one_task() {
    let h = harness(ScriptedWebhooks::default());
    schedules::replace_by_key(&h.scene()).await;
}

#[tokio::test]
async fn a_replacement_that_moves_the_fire_time_later_arms_no_timer_of_its_own() {
    let h = harness_with(ScriptedWebhooks::default(), RecordingTimer::durable(), t0());
    let key = boomerang_core::domain::BusinessKey::parse("debounced").unwrap();
    let keyed = |delay: u64| {
        let mut new = new_task(FireTime::After(secs(delay)), RetryPolicy::default());
        new.spec.key = Some(key.clone());
        new
    };
    let first = h
        .engine
        .submit(&h.tenant, Submission::replacing(keyed(10), None).unwrap())
        .await
        .unwrap();
    for n in 1..=20 {
        h.clock.set(t0() + chrono::Duration::seconds(n));
        h.engine
            .submit(&h.tenant, Submission::replacing(keyed(10), None).unwrap())
            .await
            .unwrap();
    }
    assert_eq!(
        h.timer.armed().len(),
        1,
        "the first registration's timer only"
    );
    // That timer fires early and is armed again for the task's time; the call happens once.
    h.clock.set(t0() + chrono::Duration::seconds(10));
    assert_eq!(h.fire_attempt(&first.task, 1).await, DeliverOutcome::Early);
    h.clock.set(t0() + chrono::Duration::seconds(30));
    assert_eq!(
        h.fire_attempt(&first.task, 1).await,
        DeliverOutcome::Attempted(Status::Succeeded)
    );
    assert_eq!(h.webhooks.calls(), 1);
    // Moving it earlier (a shorter delay) arms a timer for the earlier time.
    let second = h
        .engine
        .submit(&h.tenant, Submission::replacing(keyed(60), None).unwrap())
        .await
        .unwrap();
    h.engine
        .submit(&h.tenant, Submission::replacing(keyed(5), None).unwrap())
        .await
        .unwrap();
    let arms: Vec<_> = h
        .timer
        .armed()
        .into_iter()
        .filter(|(id, _, _)| *id == second.task.id)
        .collect();
    assert_eq!(arms.len(), 2, "{arms:?}");
}
