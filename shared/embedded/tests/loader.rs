//! The loader and the repair pass on a real SQLite file: stored work comes back a page at
//! a time, oldest first, within its window of memory, never twice; what lost its timer is
//! found again, and what the engine put off is not.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use boomerang_core::clock::SystemClock;
use boomerang_core::domain::{AttemptRef, SigningSecret, TaskId, TenantId};
use boomerang_core::engine::EngineSettings;
use boomerang_core::metrics::NoMetrics;
use boomerang_core::ports::{TaskStore, Timer};
use boomerang_core::testing::harness::ScriptedWebhooks;
use boomerang_core::testing::sample_task;
use boomerang_embedded::{
    embedded, EmbeddedBackend, EmbeddedConfig, Fire, LoadSettings, SqliteStore, StaticTenants,
    DB_FILE,
};
use chrono::{DateTime, Utc};

/// A data directory removed when the test ends.
struct DataDir(PathBuf);

impl DataDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("boomerang-loader-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        DataDir(dir)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tenant() -> TenantId {
    TenantId::parse("local").unwrap()
}

/// Writes tasks due at each of `due` into the data directory, as an earlier run of the
/// server would have (nothing of them is in memory); their ids, in the order given. The
/// writes go in together, so they share commits.
async fn stored(dir: &DataDir, due: &[DateTime<Utc>]) -> Vec<TaskId> {
    let store = SqliteStore::open(&dir.0.join(DB_FILE)).unwrap();
    let tasks: Vec<_> = due
        .iter()
        .map(|at| sample_task(&tenant(), None, *at))
        .collect();
    let mut writes = tokio::task::JoinSet::new();
    for task in tasks.clone() {
        let store = store.clone();
        writes.spawn(async move { store.create(&task).await.map(|_| ()) });
    }
    while let Some(written) = writes.join_next().await {
        written.unwrap().unwrap();
    }
    tasks.iter().map(|t| t.id).collect()
}

/// The server's backend on the directory, its loader not yet running.
fn backend(dir: &DataDir, load: LoadSettings) -> EmbeddedBackend {
    embedded(EmbeddedConfig {
        data_dir: &dir.0,
        tenants: Arc::new(StaticTenants::new(
            "key",
            tenant(),
            SigningSecret::generate(),
        )),
        webhooks: Arc::new(ScriptedWebhooks::default()),
        metrics: Arc::new(NoMetrics),
        metrics_view: None,
        spans: None,
        load,
        clock: Arc::new(SystemClock),
        settings: EngineSettings::default(),
    })
    .unwrap()
}

fn settings(page: usize, window: usize) -> LoadSettings {
    LoadSettings {
        ahead: Duration::from_secs(2),
        page,
        window,
        repair_every: Duration::from_secs(3600),
    }
}

/// Every fire that comes within `within` of the one before.
async fn drain(backend: &mut EmbeddedBackend, within: Duration) -> Vec<Fire> {
    let mut fires = Vec::new();
    while let Ok(Some(fire)) = tokio::time::timeout(within, backend.fires.recv()).await {
        fires.push(fire);
    }
    fires
}

fn ms_ago(ms: i64) -> DateTime<Utc> {
    Utc::now() - chrono::Duration::milliseconds(ms)
}

#[tokio::test]
async fn overdue_work_comes_back_a_page_at_a_time_oldest_first_and_never_twice() {
    let dir = DataDir::new();
    // 250 overdue, written newest first; 20 due in an hour.
    let overdue: Vec<_> = (0..250).map(|i| ms_ago(10_000 + 10 * i)).collect();
    let far: Vec<_> = (0..20)
        .map(|_| Utc::now() + chrono::Duration::hours(1))
        .collect();
    let mut ids = stored(&dir, &overdue).await;
    ids.reverse(); // oldest first
    stored(&dir, &far).await;
    let mut backend = backend(&dir, settings(100, 10_000));
    let (engine, loader) = (backend.engine.clone(), backend.loader.clone());

    let mut seen: Vec<TaskId> = Vec::new();
    for (round, page) in [100, 100, 50].into_iter().enumerate() {
        assert_eq!(loader.load(&engine).await.unwrap(), page, "round {round}");
        // With a page in hand, another load takes nothing more of the backlog.
        assert_eq!(loader.load(&engine).await.unwrap(), 0, "round {round}");
        let fires = drain(&mut backend, Duration::from_millis(200)).await;
        assert_eq!(fires.len(), page, "round {round}: one page");
        assert_eq!(backend.timer.in_hand(), page);
        seen.extend(fires.iter().map(|f| f.attempt.task_id));
        drop(fires); // their deliveries end
    }
    assert_eq!(seen, ids, "oldest first, each once");
    assert_eq!(loader.load(&engine).await.unwrap(), 0, "nothing read twice");
    assert_eq!(backend.timer.pending(), 0, "the far work stays on disk");
}

#[tokio::test]
async fn many_tasks_due_on_one_millisecond_are_paged_through_once_each() {
    let dir = DataDir::new();
    let at = ms_ago(5_000);
    let ids: HashSet<TaskId> = stored(&dir, &[at; 1_050]).await.into_iter().collect();
    let mut backend = backend(&dir, settings(100, 10_000));
    let (engine, loader) = (backend.engine.clone(), backend.loader.clone());
    let mut seen = HashSet::new();
    while seen.len() < ids.len() {
        assert!(loader.load(&engine).await.unwrap() > 0, "a page each time");
        for fire in drain(&mut backend, Duration::from_millis(100)).await {
            assert!(seen.insert(fire.attempt.task_id), "read twice");
        }
    }
    assert_eq!(seen, ids);
    assert_eq!(loader.load(&engine).await.unwrap(), 0);
}

#[tokio::test]
async fn work_falling_due_after_a_restart_is_not_behind_the_backlog() {
    let dir = DataDir::new();
    let backlog: Vec<_> = (0..500).map(|i| ms_ago(60_000 - i)).collect();
    stored(&dir, &backlog).await;
    let soon: Vec<_> = (0..5)
        .map(|_| Utc::now() + chrono::Duration::seconds(1))
        .collect();
    let soon: HashSet<TaskId> = stored(&dir, &soon).await.into_iter().collect();
    let mut backend = backend(&dir, settings(100, 10_000));
    let (engine, loader) = (backend.engine.clone(), backend.loader.clone());

    loader.load(&engine).await.unwrap();
    // One page of the backlog is in hand, and the work due soon is held for its time,
    // although 400 older tasks are still unread.
    assert_eq!(backend.timer.in_hand(), 100);
    assert_eq!(backend.timer.pending(), 5);
    let mut fired = HashSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while fired.len() < soon.len() {
        loader.load(&engine).await.unwrap();
        let fire = tokio::time::timeout_at(deadline, backend.fires.recv())
            .await
            .expect("the tasks due soon fire within 10 s")
            .unwrap();
        if soon.contains(&fire.attempt.task_id) {
            fired.insert(fire.attempt.task_id);
        } else {
            std::mem::forget(fire); // a backlog fire, still in hand
        }
    }
    assert_eq!(
        backend.timer.in_hand(),
        100,
        "no more of the backlog meanwhile"
    );
}

#[tokio::test]
async fn work_put_off_does_not_hold_the_window_for_others() {
    let dir = DataDir::new();
    let soon: Vec<_> = (0..100)
        .map(|_| Utc::now() + chrono::Duration::seconds(1))
        .collect();
    stored(&dir, &soon).await;
    let backend = backend(&dir, settings(50, 200));
    let (engine, loader) = (backend.engine.clone(), backend.loader.clone());
    // A paused destination's 200 attempts, put off for an hour.
    let later = Utc::now() + chrono::Duration::hours(1);
    for _ in 0..200 {
        let attempt = AttemptRef::delivery(tenant(), TaskId::new(), 1);
        backend.timer.put_off(attempt, later).await.unwrap();
    }
    loader.load(&engine).await.unwrap();
    assert_eq!(
        backend.timer.pending(),
        300,
        "the tasks due soon are loaded"
    );
    assert_eq!(backend.timer.parked(), 200);
}

#[tokio::test]
async fn work_due_soon_is_held_ahead_of_its_time_within_the_window() {
    let dir = DataDir::new();
    let soon: Vec<_> = (0..300)
        .map(|i| Utc::now() + chrono::Duration::milliseconds(1500 + i))
        .collect();
    let ids: HashSet<TaskId> = stored(&dir, &soon).await.into_iter().collect();
    let mut backend = backend(&dir, settings(50, 200));
    let (engine, loader) = (backend.engine.clone(), backend.loader.clone());

    loader.load(&engine).await.unwrap();
    let held = backend.timer.pending();
    assert!(
        (150..=200).contains(&held),
        "{held} held: pages up to the window"
    );
    // As fires drain, the loader takes the rest.
    let running = tokio::spawn(loader.run(engine));
    let mut seen = HashSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while seen.len() < ids.len() {
        let fire = tokio::time::timeout_at(deadline, backend.fires.recv())
            .await
            .expect("every task fires within 30 s")
            .unwrap();
        assert!(seen.insert(fire.attempt.task_id), "a task fired twice");
        assert!(backend.timer.pending() + backend.timer.in_hand() <= 200);
    }
    assert_eq!(seen, ids);
    running.abort();
}

#[tokio::test]
async fn the_repair_pass_rearms_a_lost_fire_but_not_work_put_off() {
    let dir = DataDir::new();
    let ids = stored(&dir, &[ms_ago(2000), ms_ago(1000)]).await;
    let mut backend = backend(&dir, settings(100, 10_000));
    let (engine, loader) = (backend.engine.clone(), backend.loader.clone());
    loader.load(&engine).await.unwrap();
    let fires = drain(&mut backend, Duration::from_millis(200)).await;
    assert_eq!(fires.len(), 2);
    let (lost, put_off): (AttemptRef, AttemptRef) =
        (fires[0].attempt.clone(), fires[1].attempt.clone());
    assert_eq!((lost.task_id, put_off.task_id), (ids[0], ids[1]));
    // One's delivery puts it off for an hour; the other's ends without a word.
    let later = Utc::now() + chrono::Duration::hours(1);
    backend.timer.put_off(put_off.clone(), later).await.unwrap();
    drop(fires);

    let report = loader.repair(&engine).await.unwrap();
    assert_eq!(report.rearmed, 1, "only the lost one: {report:?}");
    let again = drain(&mut backend, Duration::from_millis(200)).await;
    let again: Vec<_> = again.iter().map(|f| f.attempt.clone()).collect();
    assert_eq!(again, vec![lost]);
    assert!(backend.timer.has(&put_off), "still held for its hour");
}
