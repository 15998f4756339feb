//! The lease loader on a real PostgreSQL database: a backlog is leased oldest first, page
//! after page until two pages are in hand, so the deliveries never wait on a lease.

use std::sync::Arc;
use std::time::Duration;

use boomerang_core::clock::SystemClock;
use boomerang_core::domain::{TaskId, TenantId};
use boomerang_core::engine::EngineSettings;
use boomerang_core::metrics::NoMetrics;
use boomerang_core::ports::TaskStore;
use boomerang_core::testing::harness::ScriptedWebhooks;
use boomerang_core::testing::sample_task;
use boomerang_embedded::{Fire, LoadSettings};
use boomerang_postgres::servers::Servers;
use boomerang_postgres::testing::{fresh_database, run_sql};
use boomerang_postgres::{
    connect, migrate, postgres, PgSettings, PgStore, PostgresBackend, PostgresConfig,
};
use chrono::{DateTime, Utc};

/// Tasks due at each of `due`, written by a server that has since stopped and whose rows
/// were freed: nobody's, as after a downtime. Their ids, in the order given.
async fn stored(url: &str, due: &[DateTime<Utc>]) -> Vec<TaskId> {
    let settings = PgSettings {
        server: Some("earlier".into()),
        ..PgSettings::new(url)
    };
    let pool = connect::pool(&settings).unwrap();
    migrate::migrate(&pool).await.unwrap();
    Servers::new(pool.clone(), "earlier".into(), Duration::from_secs(10))
        .beat()
        .await
        .unwrap();
    let store = PgStore::new(
        pool,
        "earlier".into(),
        Duration::from_secs(2),
        Arc::new(NoMetrics),
    );
    let tenant = TenantId::parse("local").unwrap();
    let mut ids = Vec::new();
    for at in due {
        let task = sample_task(&tenant, None, *at);
        store.create(&task).await.unwrap();
        ids.push(task.id);
    }
    run_sql(url, "UPDATE tasks SET owner = NULL").await;
    ids
}

/// A server on the database at `url`, its loader not yet running, leasing `page` rows at
/// a time.
async fn server(url: &str, page: usize) -> PostgresBackend {
    postgres(PostgresConfig {
        database: PgSettings::new(url),
        api_key: "key".into(),
        signing_secret: None,
        webhooks: Arc::new(ScriptedWebhooks::default()),
        metrics: Arc::new(NoMetrics),
        metrics_view: None,
        load: LoadSettings {
            ahead: Duration::from_secs(2),
            page,
            window: 10_000,
            repair_every: Duration::from_secs(3600),
        },
        server_lease: Duration::from_secs(10),
        clock: Arc::new(SystemClock),
        settings: EngineSettings::default(),
        spans: None,
    })
    .await
    .unwrap()
}

/// Every fire that comes within `within` of the one before.
async fn drain(backend: &mut PostgresBackend, within: Duration) -> Vec<Fire> {
    let mut fires = Vec::new();
    while let Ok(Some(fire)) = tokio::time::timeout(within, backend.fires.recv()).await {
        fires.push(fire);
    }
    fires
}

#[tokio::test]
async fn a_backlog_is_leased_page_after_page_until_two_pages_are_in_hand() {
    let url = fresh_database().await;
    // 250 overdue, the oldest first.
    let due: Vec<_> = (0..250)
        .map(|i| Utc::now() - chrono::Duration::milliseconds(60_000 - 10 * i))
        .collect();
    let ids = stored(&url, &due).await;
    let mut backend = server(&url, 100).await;
    let (engine, loader) = (backend.engine.clone(), backend.loader.clone());

    // Nothing in hand: one page, then the next while the first is being delivered.
    assert_eq!(loader.load(&engine).await.unwrap(), 100, "nothing in hand");
    assert_eq!(loader.load(&engine).await.unwrap(), 100, "one page in hand");
    assert_eq!(loader.load(&engine).await.unwrap(), 0, "two pages in hand");
    let first = drain(&mut backend, Duration::from_millis(300)).await;
    assert_eq!(first.len(), 200);
    drop(first); // their deliveries end

    // The rest, less than a page: the loader stops at the end of the backlog.
    assert_eq!(loader.load(&engine).await.unwrap(), 50, "the rest");
    let rest = drain(&mut backend, Duration::from_millis(300)).await;
    assert_eq!(
        loader.load(&engine).await.unwrap(),
        0,
        "nothing leased twice"
    );
    let seen: Vec<TaskId> = rest.iter().map(|f| f.attempt.task_id).collect();
    assert_eq!(seen, ids[200..], "oldest first");
}
