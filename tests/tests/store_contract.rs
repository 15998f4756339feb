//! The task-store contract, run against every store adapter.

use std::sync::Arc;

use boomerang::store::{MemoryStore, SqliteStore};
use boomerang::testing::{store_atomicity_contract, store_contract};

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
    store_atomicity_contract(store).await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn ulid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
    )
}
