//! A task is read as one snapshot: its attempts and its status from the same moment.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use boomerang_core::domain::ids::Attempt;
use boomerang_core::domain::{Status, Verdict};
use boomerang_core::metrics::NoMetrics;
use boomerang_core::ports::TaskStore;
use boomerang_core::testing::{sample_task, unique_tenant};
use boomerang_postgres::servers::Servers;
use boomerang_postgres::{connect, migrate, PgSettings, PgStore};

/// A reader polls the task whose attempt is under way, on another thread, while each of
/// many is claimed and its outcome written: it never sees an attempt's result beside the
/// task still `delivering` it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_never_read_delivering_beside_its_attempts_result() {
    let url = boomerang_postgres::testing::fresh_database().await;
    let settings = PgSettings {
        server: Some("snapshots".into()),
        ..PgSettings::new(&url)
    };
    let pool = connect::pool(&settings).unwrap();
    migrate::migrate(&pool).await.unwrap();
    Servers::new(pool.clone(), "snapshots".into(), Duration::from_secs(10))
        .beat()
        .await
        .unwrap();
    let store = Arc::new(PgStore::new(
        pool,
        "snapshots".into(),
        Duration::from_secs(60),
        Arc::new(NoMetrics),
    ));
    let tenant = unique_tenant("snapshots");
    let now = chrono::DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let tasks: Vec<_> = (0..300).map(|_| sample_task(&tenant, None, now)).collect();
    for task in &tasks {
        store.create(task).await.unwrap();
    }
    // The index of the task whose attempt is under way, and whether they are all done.
    let current = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let reader = tokio::spawn({
        let (store, tenant) = (store.clone(), tenant.clone());
        let (current, done) = (current.clone(), done.clone());
        let ids: Vec<_> = tasks.iter().map(|t| t.id).collect();
        async move {
            let mut delivering = 0;
            while !done.load(Ordering::Relaxed) {
                let id = &ids[current.load(Ordering::Relaxed)];
                let (task, attempts) = store.details(&tenant, id).await.unwrap().unwrap();
                if task.status == Status::Delivering {
                    assert!(
                        attempts.is_empty(),
                        "read delivering beside {} attempt(s) recorded",
                        attempts.len()
                    );
                    delivering += 1;
                }
            }
            delivering
        }
    });
    for (i, task) in tasks.iter().enumerate() {
        current.store(i, Ordering::Relaxed);
        let claimed = task
            .claim(Attempt::Delivery(1), now, Duration::from_secs(30))
            .unwrap();
        store.claim(&claimed, task.version).await.unwrap();
        let next = claimed.after_attempt(&Verdict::Success, now, 0.5).unwrap();
        let record = claimed.attempt_record(&next, now, now, Some(200), None);
        store
            .finish_attempt(&record, &next, claimed.version)
            .await
            .unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let delivering = reader
        .await
        .expect("the reader never saw a state that never was");
    // The reader looked while attempts were under way (it saw some claimed).
    assert!(delivering > 0);
}
