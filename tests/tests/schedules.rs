//! Schedules and replace-by-key on each real backend, on a manual clock (the engine's
//! scenarios, with real HTTP to a local receiver): the SQLite store, and DynamoDB with the
//! AWS timers on moto. Daylight-saving changes both ways, pause/resume/delete and a missed
//! occurrence, and a burst of replace registrations.

use std::sync::Arc;

use boomerang_core::clock::ManualClock;
use boomerang_core::domain::{SigningSecret, TenantId};
use boomerang_core::engine::{Engine, EngineSettings};
use boomerang_core::metrics::NoMetrics;
use boomerang_core::testing::schedules::{self, Scene};
use boomerang_e2e::aws::{fresh_moto_resources, moto_backend};
use boomerang_e2e::{Receiver, Reply};
use boomerang_embedded::{EmbeddedConfig, LoadSettings, StaticTenants};
use boomerang_webhook::{DestinationPolicy, HttpWebhooks};
use chrono::Utc;

/// An engine on a fresh SQLite file (its timer's fires are left unread: the scene fires
/// what is due itself).
fn sqlite_engine(clock: Arc<ManualClock>) -> (Arc<Engine>, TenantId, tempdir::Dir) {
    let dir = tempdir::Dir::new("schedules");
    let tenant = TenantId::parse("local").unwrap();
    let backend = boomerang_embedded::embedded(EmbeddedConfig {
        data_dir: dir.path(),
        tenants: Arc::new(StaticTenants::new(
            "key",
            tenant.clone(),
            SigningSecret::generate(),
        )),
        webhooks: Arc::new(
            HttpWebhooks::new(
                DestinationPolicy {
                    dev: true,
                    ..Default::default()
                },
                2 * boomerang_core::engine::DEFAULT_PER_DESTINATION,
            )
            .unwrap(),
        ),
        metrics: Arc::new(NoMetrics),
        metrics_view: None,
        spans: None,
        load: LoadSettings {
            ahead: std::time::Duration::from_secs(60),
            ..LoadSettings::default()
        },
        clock,
        settings: EngineSettings::default(),
    })
    .unwrap();
    (backend.engine, tenant, dir)
}

/// A data directory removed when the test ends.
mod tempdir {
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new(what: &str) -> Dir {
            let path = std::env::temp_dir().join(format!("boomerang-{what}-{}", ulid::Ulid::new()));
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

async fn on_sqlite(play: impl AsyncFnOnce(&Scene<'_>)) {
    let receiver = Receiver::start(|_, _| Reply::status(200)).await;
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let (engine, tenant, _dir) = sqlite_engine(clock.clone());
    let scene = Scene {
        engine: &engine,
        clock: &clock,
        tenant,
        url: receiver.url("/scheduled"),
    };
    play(&scene).await;
}

async fn on_aws(what: &str, play: impl AsyncFnOnce(&Scene<'_>)) {
    let receiver = Receiver::start(|_, _| Reply::status(200)).await;
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let settings = fresh_moto_resources(what).await;
    let backend = moto_backend(&settings, clock.clone());
    let tenant = TenantId::parse(format!("t{}", ulid::Ulid::new()).to_lowercase()).unwrap();
    backend.tenants.mint_key(&tenant).await.unwrap();
    let scene = Scene {
        engine: &backend.engine,
        clock: &clock,
        tenant,
        url: receiver.url("/scheduled"),
    };
    play(&scene).await;
}

#[tokio::test]
async fn sqlite_a_daily_local_time_across_both_daylight_saving_changes() {
    on_sqlite(schedules::daylight_saving_both_ways).await;
}

#[tokio::test]
async fn sqlite_pause_resume_delete_and_a_missed_occurrence() {
    on_sqlite(schedules::pause_resume_delete_and_catch_up).await;
}

#[tokio::test]
async fn sqlite_rapid_registrations_of_a_key_replace_one_task() {
    on_sqlite(schedules::replace_by_key).await;
}

#[tokio::test]
async fn aws_a_daily_local_time_across_both_daylight_saving_changes() {
    on_aws("sched-dst", schedules::daylight_saving_both_ways).await;
}

#[tokio::test]
async fn aws_pause_resume_delete_and_a_missed_occurrence() {
    on_aws("sched-pause", schedules::pause_resume_delete_and_catch_up).await;
}

#[tokio::test]
async fn aws_rapid_registrations_of_a_key_replace_one_task() {
    on_aws("sched-replace", schedules::replace_by_key).await;
}
