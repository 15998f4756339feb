//! Schedules and replace-by-key in the engine, on the in-memory store (the same scenarios
//! run on each real backend in the e2e tests).

use boomerang_core::testing::harness::*;
use boomerang_core::testing::schedules::{self, Scene};

fn scene(h: &Harness) -> Scene<'_> {
    Scene {
        engine: &h.engine,
        clock: &h.clock,
        tenant: h.tenant.clone(),
        url: "https://example.com/hook".into(),
    }
}

#[tokio::test]
async fn a_daily_local_time_fires_once_a_day_across_both_daylight_saving_changes() {
    let h = harness(ScriptedWebhooks::default());
    schedules::daylight_saving_both_ways(&scene(&h)).await;
}

#[tokio::test]
async fn pause_resume_delete_and_a_missed_occurrence() {
    let h = harness(ScriptedWebhooks::default());
    schedules::pause_resume_delete_and_catch_up(&scene(&h)).await;
}

#[tokio::test]
async fn rapid_registrations_of_a_key_replace_one_task() {
    let h = harness(ScriptedWebhooks::default());
    schedules::replace_by_key(&scene(&h)).await;
}
