//! The task-store contract, run against every store adapter.

use std::sync::Arc;

use boomerang::store::{MemoryStore, SqliteStore};
use boomerang::testing::store_contract;

#[tokio::test]
async fn memory_store_honours_the_contract() {
    store_contract(Arc::new(MemoryStore::default())).await;
}

#[tokio::test]
async fn sqlite_store_honours_the_contract() {
    let dir = std::env::temp_dir().join(format!("boomerang-contract-{}", ulid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(&dir.join("boomerang.db")).unwrap();
    store_contract(Arc::new(store)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn ulid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
    )
}
