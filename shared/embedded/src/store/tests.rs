use std::sync::Arc;

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection};

use boomerang_core::domain::{BulkAction, BulkJob, BulkPlan, TaskFilter, TenantId};
use boomerang_core::ports::{BulkJobs, Retention, SweepIndex, TaskStore};

use super::codec::encode;
use super::SqliteStore;
use boomerang_core::testing::sample_task;

/// A file written by the previous schema (one column per kind of pending work) is
/// migrated on open, and its pending work is found.
#[tokio::test]
async fn a_version_1_file_is_migrated_and_its_work_found() {
    let dir = std::env::temp_dir().join(format!("boomerang-migrate-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("boomerang.db");
    let now = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let task = sample_task(&TenantId::parse("old").unwrap(), None, now);
    {
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE tasks (id TEXT PRIMARY KEY, tenant TEXT NOT NULL,
                status TEXT NOT NULL, version INTEGER NOT NULL, attempt INTEGER NOT NULL,
                idempotency_key TEXT, next_fire_ms INTEGER, lease_ms INTEGER,
                dead_letter_pending INTEGER NOT NULL DEFAULT 0, doc TEXT NOT NULL);
             CREATE INDEX tasks_due ON tasks(next_fire_ms) WHERE status = 'scheduled';",
        )
        .unwrap();
        // Written the way version 1 wrote documents (`next_fire_at`).
        let doc = encode(&task)
            .unwrap()
            .replace("next_attempt_at", "next_fire_at");
        old.execute(
            "INSERT INTO tasks (id, tenant, status, version, attempt, next_fire_ms, doc)
             VALUES (?1, 'old', 'scheduled', 1, 1, ?2, ?3)",
            params![task.id.to_string(), now.timestamp_millis(), doc],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        store.get(&task.tenant, &task.id).await.unwrap(),
        Some(task.clone())
    );
    assert_eq!(
        store.due(now, 10).await.unwrap().work,
        vec![task.pending_work().unwrap()]
    );
    drop(store);
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.due(now, 10).await.unwrap().work.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Retention removes finished tasks and their attempts once they ended before the
/// cutoff, and keeps everything else: a pending task, a recent one, and a failed one
/// whose dead letter is not sent.
#[tokio::test]
async fn purge_removes_only_tasks_finished_before_the_cutoff() {
    let dir = std::env::temp_dir().join(format!("boomerang-purge-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(&dir.join("boomerang.db")).unwrap();
    let tenant = TenantId::parse("purge").unwrap();
    let t0 = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let minute = chrono::Duration::minutes(1);
    let finished_at = |at| {
        let task = sample_task(&tenant, None, t0);
        let done = task.cancel(at).unwrap();
        (task, done)
    };
    let (old, old_done) = finished_at(t0);
    let (recent, recent_done) = finished_at(t0 + minute * 10);
    let pending = sample_task(&tenant, None, t0 + minute * 60);
    let mut letter_due = sample_task(&tenant, None, t0).cancel(t0).unwrap();
    letter_due.dead_letter_pending = true;
    for (created, stored) in [(&old, &old_done), (&recent, &recent_done)] {
        store.create(created).await.unwrap();
        store.update(stored, created.version).await.unwrap();
    }
    store.create(&pending).await.unwrap();
    let mut unsent = sample_task(&tenant, None, t0);
    store.create(&unsent).await.unwrap();
    letter_due.id = unsent.id;
    letter_due.version = unsent.version + 1;
    store.update(&letter_due, unsent.version).await.unwrap();
    unsent = letter_due;
    let record = old_done.attempt_record(&old_done, t0, t0, Some(500), None);
    store.put_attempt(&tenant, &record).await.unwrap();
    // A bulk job finished at t0 goes with the tasks of its time; a running one stays.
    let plan = BulkPlan::new(BulkAction::Cancel, TaskFilter::default(), None, true).unwrap();
    let (old_job, running_job) = (
        BulkJob::new(tenant.clone(), plan.clone(), t0),
        BulkJob::new(tenant.clone(), plan, t0),
    );
    for job in [&old_job, &running_job] {
        store.create_job(job).await.unwrap();
    }
    let finished = (old_job.page_read(0, vec![], None, t0))
        .page_read(0, vec![], None, t0)
        .page_done(0, 0, t0);
    assert!(!finished.is_running());
    let mut finished = finished;
    finished.version = old_job.version + 1;
    store.save_job(&finished, old_job.version).await.unwrap();

    let removed = store.purge(t0 + minute * 5, 10).await.unwrap();
    assert_eq!(removed, 1);
    assert_eq!(store.get(&tenant, &old.id).await.unwrap(), None);
    assert!(store.attempts(&tenant, &old.id).await.unwrap().is_empty());
    for kept in [&recent.id, &pending.id, &unsent.id] {
        assert!(store.get(&tenant, kept).await.unwrap().is_some());
    }
    assert_eq!(store.purge(t0 + minute * 5, 10).await.unwrap(), 0);
    assert_eq!(store.job(&tenant, &old_job.id).await.unwrap(), None);
    assert!(store.job(&tenant, &running_job.id).await.unwrap().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A task read while its attempts end is one snapshot (the store contract's race, on the
/// embedded store).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_never_read_delivering_beside_its_attempts_result() {
    let dir = std::env::temp_dir().join(format!("boomerang-snapshot-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(&dir.join("boomerang.db")).unwrap();
    boomerang_core::testing::reads_are_snapshots(Arc::new(store), 500).await;
    let _ = std::fs::remove_dir_all(&dir);
}
