//! The task-store contract (with its due and list suites) and the flow pauses' contract,
//! on a real PostgreSQL database.

use std::sync::Arc;
use std::time::Duration;

use boomerang_core::metrics::NoMetrics;
use boomerang_core::testing::{store_atomicity_contract, store_contract};
use boomerang_postgres::{connect, migrate, PgSettings, PgStore};

async fn store() -> Arc<PgStore> {
    let url = boomerang_postgres::testing::fresh_database().await;
    let pool = connect::pool(&PgSettings::new(url)).unwrap();
    migrate::migrate(&pool).await.unwrap();
    Arc::new(PgStore::new(
        pool,
        "contract".into(),
        Duration::from_secs(5),
        Arc::new(NoMetrics),
    ))
}

#[tokio::test]
async fn postgres_store_honours_the_contract() {
    let store = store().await;
    store_contract(store.clone()).await;
    store_atomicity_contract(store.clone()).await;
    boomerang_core::testing::flow_contract::check_flow_pauses(store, "postgres").await;
}

/// Writes share commits, and each is answered only after the commit that holds it: a
/// second connection sees every acknowledged registration at once.
#[tokio::test]
async fn postgres_commits_concurrent_writes_together_and_answers_after_the_commit() {
    use boomerang_core::ports::TaskStore;
    let url = boomerang_postgres::testing::fresh_database().await;
    let pool = connect::pool(&PgSettings::new(url.clone())).unwrap();
    migrate::migrate(&pool).await.unwrap();
    let store = Arc::new(PgStore::new(
        pool.clone(),
        "group".into(),
        Duration::from_secs(5),
        Arc::new(NoMetrics),
    ));
    let tenant = boomerang_core::testing::unique_tenant("group");
    let writes: Vec<_> = (0..500)
        .map(|_| {
            let (store, pool) = (store.clone(), pool.clone());
            let task = boomerang_core::testing::sample_task(&tenant, None, chrono::Utc::now());
            tokio::spawn(async move {
                store.create(&task).await.unwrap();
                let other = pool.get().await.unwrap();
                let found: i64 = other
                    .query_one(
                        "SELECT count(*) FROM tasks WHERE id = $1",
                        &[&task.id.to_string()],
                    )
                    .await
                    .unwrap()
                    .get(0);
                assert_eq!(found, 1, "acknowledged before its commit");
            })
        })
        .collect();
    for w in writes {
        w.await.unwrap();
    }
}

/// A server refuses a database whose schema is newer than it knows.
#[tokio::test]
async fn a_schema_newer_than_the_server_knows_is_refused() {
    let url = boomerang_postgres::testing::fresh_database().await;
    let pool = connect::pool(&PgSettings::new(url)).unwrap();
    migrate::migrate(&pool).await.unwrap();
    // Migrating twice (a second server starting) changes nothing.
    migrate::migrate(&pool).await.unwrap();
    let client = pool.get().await.unwrap();
    let newer = migrate::known_version() as i32 + 1;
    client
        .execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             SELECT $1, 'from_the_future', applied_on, '0'
             FROM refinery_schema_history WHERE version = 1",
            &[&newer],
        )
        .await
        .unwrap();
    let refused = migrate::migrate(&pool).await.unwrap_err();
    assert!(
        refused.to_string().contains("newer"),
        "refused with: {refused}"
    );
}
