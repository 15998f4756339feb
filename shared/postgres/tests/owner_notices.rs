//! The owner notices: a server claims the attempts of rows it owns without reading them
//! again only while it hears of every change other servers make to them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use deadpool_postgres::Pool;

use boomerang_core::domain::Task;
use boomerang_core::metrics::NoMetrics;
use boomerang_core::ports::{StoreError, TaskStore};
use boomerang_core::testing::{sample_task, unique_tenant};
use boomerang_postgres::servers::Servers;
use boomerang_postgres::{connect, migrate, PgSettings, PgStore};

const LEASE: Duration = Duration::from_secs(10);

/// A server's settings on the database at `url`, naming it `id`.
fn settings(url: &str, id: &str) -> PgSettings {
    PgSettings {
        server: Some(id.into()),
        ..PgSettings::new(url)
    }
}

/// Server `id`'s store on the database at `url`, alive in `servers` and listening for
/// its notices.
async fn server(url: &str, id: &str) -> (Arc<PgStore>, Pool) {
    let pool = connect::pool(&settings(url, id)).unwrap();
    Servers::new(pool.clone(), id.into(), LEASE)
        .beat()
        .await
        .unwrap();
    let store = Arc::new(PgStore::new(
        pool.clone(),
        id.into(),
        Duration::from_secs(60),
        Arc::new(NoMetrics),
    ));
    store.listen(settings(url, id), LEASE);
    (store, pool)
}

/// [`server`], once it hears its notices: its own probe, sent as it begins to listen, has
/// come back (a listener started after this does not hear it).
async fn listening_server(url: &str, id: &str) -> (Arc<PgStore>, Pool) {
    let (store, pool) = server(url, id).await;
    wait_for(&format!("server {id} hears its notices"), || {
        store.hears_notices()
    })
    .await;
    (store, pool)
}

async fn database() -> String {
    let url = boomerang_postgres::testing::fresh_database().await;
    migrate::migrate(&connect::pool(&PgSettings::new(&url)).unwrap())
        .await
        .unwrap();
    url
}

async fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A task due in a second, registered through `store` (which owns it: it is near).
async fn owned_task(store: &PgStore) -> Task {
    let task = sample_task(
        &unique_tenant("notices"),
        None,
        Utc::now() + chrono::Duration::seconds(1),
    );
    store.create(&task).await.unwrap();
    assert!(store.owns(&task.id));
    task
}

/// The task's row moved on a version by a session naming itself `as_server`.
async fn move_row(pool: &Pool, task: &Task, owner: &str) {
    let client = pool.get().await.unwrap();
    client
        .execute(
            "UPDATE tasks SET version = version + 1, owner = $2 WHERE id = $1",
            &[&task.id.to_string(), &owner],
        )
        .await
        .unwrap();
}

/// Every notice heard on `heard` up to now. Notices arrive in the order their
/// transactions committed: everything committed before has been heard once a marker,
/// sent after it, is.
async fn told_so_far(
    listener: &tokio_postgres::Client,
    heard: &mut tokio::sync::mpsc::UnboundedReceiver<tokio_postgres::Notification>,
) -> Vec<String> {
    listener
        .execute("SELECT pg_notify('boomerang_owners', 'marker')", &[])
        .await
        .unwrap();
    let mut told = Vec::new();
    loop {
        let notice = tokio::time::timeout(Duration::from_secs(10), heard.recv())
            .await
            .expect("the marker within 10 s")
            .expect("the listening connection open");
        match notice.payload() {
            "marker" => return told,
            payload => told.push(payload.to_string()),
        }
    }
}

fn claimed(task: &Task) -> Task {
    let mut claimed = task.clone();
    claimed.version += 1;
    claimed
}

#[tokio::test]
async fn a_change_by_another_server_is_heard_and_the_next_claim_reads_the_row() {
    let url = database().await;
    let (a, _) = listening_server(&url, "a").await;
    let (_b, b_pool) = server(&url, "b").await;
    let task = owned_task(&a).await;

    move_row(&b_pool, &task, "b").await;

    wait_for("a hears that b took its row", || !a.owns(&task.id)).await;
    let refused = a.claim(&claimed(&task), task.version).await;
    assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
}

#[tokio::test]
async fn what_a_server_heard_of_its_rows_is_claimed_without_reading_them() {
    let url = database().await;
    let (a, a_pool) = listening_server(&url, "a").await;
    let task = owned_task(&a).await;

    // A change no notice tells (made as server a itself): the claim does not read the
    // row, so it does not see it; the attempt's result, conditional on the version,
    // would.
    move_row(&a_pool, &task, "a").await;

    a.claim(&claimed(&task), task.version).await.unwrap();
}

#[tokio::test]
async fn after_the_notices_connection_is_lost_what_was_heard_before_is_read_again() {
    let url = database().await;
    let (a, a_pool) = listening_server(&url, "a").await;
    let task = owned_task(&a).await;

    let admin = a_pool.get().await.unwrap();
    let ended = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = 'boomerang notices' AND datname = current_database()",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(ended, 1, "one notices connection");
    wait_for("a notices it no longer hears", || !a.hears_notices()).await;
    wait_for("a hears again", || a.hears_notices()).await;
    // A change while a was not listening would not have been told: as if made then.
    move_row(&a_pool, &task, "a").await;

    let refused = a.claim(&claimed(&task), task.version).await;
    assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
}

/// The backlog a server holds alone is unowned in its rows: a change another server
/// makes to one of them is told to the holder all the same, and a change to a row due
/// after the holder's bound is not.
#[tokio::test]
async fn a_change_to_a_row_of_a_held_backlog_is_told_to_the_holder() {
    let url = database().await;
    // Both listening: neither's own probe is among what the listener below collects.
    let (_a, a_pool) = listening_server(&url, "a").await;
    let (b, b_pool) = listening_server(&url, "b").await;
    let at = |minutes| Utc::now() + chrono::Duration::minutes(minutes);
    // Beyond the writer's horizon (a minute): no server owns them.
    let inside = sample_task(&unique_tenant("held"), None, at(2));
    let outside = sample_task(&unique_tenant("held"), None, at(10));
    for task in [&inside, &outside] {
        b.create(task).await.unwrap();
        assert!(!b.owns(&task.id));
    }
    let bound = at(5).timestamp_millis();
    a_pool
        .get()
        .await
        .unwrap()
        .execute(
            "INSERT INTO backlog_holder (id, owner, below_ms) VALUES (1, 'a', $1)",
            &[&bound],
        )
        .await
        .unwrap();
    let (listener, mut heard) = boomerang_postgres::testing::owner_notices(&url).await;

    move_row(&b_pool, &outside, "b").await;
    move_row(&b_pool, &inside, "b").await;

    let told = told_so_far(&listener, &mut heard).await;
    assert_eq!(told, vec![format!("a {} b", inside.id)]);
}

#[tokio::test]
async fn a_take_over_tells_the_lapsed_server_and_it_gives_its_rows_up() {
    let url = database().await;
    let (a, a_pool) = listening_server(&url, "a").await;
    let (_b, b_pool) = server(&url, "b").await;
    let tasks = [owned_task(&a).await, owned_task(&a).await];
    let (listener, mut heard) = boomerang_postgres::testing::owner_notices(&url).await;
    // Server a's lease lapsed (it stopped beating), as far as the table says.
    a_pool
        .get()
        .await
        .unwrap()
        .execute(
            "UPDATE servers SET alive_until = now() - interval '1 minute' WHERE id = 'a'",
            &[],
        )
        .await
        .unwrap();

    let b = Servers::new(b_pool, "b".into(), LEASE);
    assert_eq!(b.take_over().await.unwrap(), 2);
    let told_a: Vec<String> = (told_so_far(&listener, &mut heard).await.into_iter())
        .filter(|told| told.starts_with("a "))
        .collect();
    assert_eq!(
        told_a,
        ["a * "],
        "one notice for the server, not one per row"
    );

    wait_for("a gives its rows up", || {
        tasks.iter().all(|t| !a.owns(&t.id))
    })
    .await;
}
