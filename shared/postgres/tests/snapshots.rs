//! A task is read as one snapshot: its attempts and its status from the same moment.

use std::sync::Arc;
use std::time::Duration;

use boomerang_core::metrics::NoMetrics;
use boomerang_postgres::servers::Servers;
use boomerang_postgres::{connect, migrate, PgSettings, PgStore};

/// The store contract's race ([`boomerang_core::testing::reads_are_snapshots`]) on
/// PostgreSQL.
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
    boomerang_core::testing::reads_are_snapshots(store, 300).await;
}
