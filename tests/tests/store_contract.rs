//! The task-store contract, run against every store adapter.

use std::sync::Arc;

use boomerang_core::testing::MemoryStore;
use boomerang_core::testing::{store_atomicity_contract, store_contract};
use boomerang_embedded::SqliteStore;

#[tokio::test]
async fn memory_store_honours_the_contract() {
    let store = Arc::new(MemoryStore::default());
    store_contract(store.clone()).await;
    store_atomicity_contract(store).await;
}

#[tokio::test]
async fn sqlite_store_honours_the_contract() {
    let dir = std::env::temp_dir().join(format!("boomerang-contract-{}", ulid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(&dir.join("boomerang.db")).unwrap();
    let store = Arc::new(store);
    store_contract(store.clone()).await;
    store_atomicity_contract(store.clone()).await;
    boomerang_core::testing::flow_contract::check_flow_pauses(store, "sqlite").await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn ulid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
    )
}

/// Group commit: concurrent writes share commits (fewer commits than writes), and each
/// write is answered only after the commit that holds it, which a separate connection to
/// the file then sees.
#[tokio::test]
async fn sqlite_commits_concurrent_writes_together_and_answers_after_the_commit() {
    use boomerang_core::ports::TaskStore;
    let dir = std::env::temp_dir().join(format!("boomerang-group-{}", ulid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("boomerang.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let tenant = boomerang_core::testing::unique_tenant("group");
    let before = store.commits();
    let writes: Vec<_> = (0..200)
        .map(|_| {
            let (store, path) = (store.clone(), path.clone());
            let task = boomerang_core::testing::sample_task(&tenant, None, chrono::Utc::now());
            tokio::spawn(async move {
                store.create(&task).await.unwrap();
                // Acknowledged: it must already be in the file, for anyone to read.
                let other = rusqlite::Connection::open(&path).unwrap();
                let found: i64 = other
                    .query_row(
                        "SELECT count(*) FROM tasks WHERE id = ?1",
                        [task.id.to_string()],
                        |r| r.get(0),
                    )
                    .unwrap();
                assert_eq!(found, 1, "acknowledged before its commit");
            })
        })
        .collect();
    for w in writes {
        w.await.unwrap();
    }
    let commits = store.commits() - before;
    assert!(
        commits < 200,
        "200 writes took {commits} commits: no batching"
    );
    println!("200 concurrent registrations in {commits} commits");
    let _ = std::fs::remove_dir_all(&dir);
}
