//! Flow counters, destination slots and order keys on a real PostgreSQL database: the
//! core's flow contract, and two servers (two stores, each with its own pool) racing for
//! the same limits, where holding across servers is the point.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use tokio::task::JoinSet;

use boomerang_core::domain::{Destination, FlowKey, OrderKey, TaskId, TenantId};
use boomerang_core::metrics::NoMetrics;
use boomerang_core::ports::{
    DestinationSlots, FlowCounters, FlowFigures, OrderKeys, SlotHolder, StoreError,
};
use boomerang_core::testing::unique_tenant;
use boomerang_postgres::{connect, migrate, PgSettings, PgStore};

/// Callers racing for the slots.
const TAKERS: usize = 50;
/// The limit they race for.
const LIMIT: u32 = 5;
/// Takes each caller makes.
const ROUNDS: usize = 3;

/// A fresh migrated database's URL.
async fn database() -> String {
    let url = boomerang_postgres::testing::fresh_database().await;
    migrate::migrate(&pool(&url)).await.unwrap();
    url
}

fn pool(url: &str) -> Pool {
    connect::pool(&PgSettings::new(url)).unwrap()
}

/// A server's store on the database at `url`, with a pool of its own.
fn server(url: &str, id: &str) -> Arc<PgStore> {
    Arc::new(PgStore::new(
        pool(url),
        id.into(),
        Duration::from_secs(5),
        Arc::new(NoMetrics),
    ))
}

/// Two servers on one fresh database, and a pool to look at its tables with.
async fn two_servers() -> (Arc<PgStore>, Arc<PgStore>, Pool) {
    let url = database().await;
    (
        server(&url, "server-a"),
        server(&url, "server-b"),
        pool(&url),
    )
}

/// How many rows of `sql`'s table hold a slot of (`tenant`, `name`) unexpired at `now`.
async fn held(db: &Pool, sql: &str, tenant: &TenantId, name: &str, now: DateTime<Utc>) -> i64 {
    let client = db.get().await.unwrap();
    let row = client
        .query_one(sql, &[&tenant.as_str(), &name, &now.timestamp_millis()])
        .await
        .unwrap();
    row.get(0)
}

const FLOW_SLOTS_HELD: &str =
    "SELECT count(*) FROM flow_slots WHERE tenant = $1 AND key = $2 AND until_ms > $3";
const DESTINATION_SLOTS_HELD: &str = "SELECT count(*) FROM destination_slots
     WHERE tenant = $1 AND destination = $2 AND until_ms > $3";

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_900_000_000, 0).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_flow_counters_honour_the_contract() {
    let store = server(&database().await, "contract");
    boomerang_core::testing::flow_contract::check_flow_counters(store, "postgres").await;
}

/// One server's side of a slot race: a limit's take, free and count in the table.
#[async_trait::async_trait]
trait SlotRace: Send + Sync {
    async fn take(&self, holder: &SlotHolder, now: DateTime<Utc>) -> Result<bool, StoreError>;
    async fn free(&self, holder: &SlotHolder) -> Result<(), StoreError>;
    /// How many of the limit's slots the table holds, unexpired at `now`.
    async fn held(&self, db: &Pool, now: DateTime<Utc>) -> i64;
}

struct FlowRace(Arc<PgStore>, TenantId, FlowKey);

#[async_trait::async_trait]
impl SlotRace for FlowRace {
    async fn take(&self, holder: &SlotHolder, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let until = now + chrono::Duration::seconds(30);
        (self
            .0
            .take_slot(&self.1, &self.2, LIMIT, holder, now, until))
        .await
    }

    async fn free(&self, holder: &SlotHolder) -> Result<(), StoreError> {
        self.0.free_slot(&self.1, &self.2, holder).await
    }

    async fn held(&self, db: &Pool, now: DateTime<Utc>) -> i64 {
        held(db, FLOW_SLOTS_HELD, &self.1, self.2.as_str(), now).await
    }
}

struct DestinationRace(Arc<PgStore>, TenantId, Destination);

#[async_trait::async_trait]
impl SlotRace for DestinationRace {
    async fn take(&self, holder: &SlotHolder, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let lease = (now, now + chrono::Duration::seconds(30));
        (self
            .0
            .take_destination_slot(&self.1, &self.2, LIMIT, holder, lease))
        .await
    }

    async fn free(&self, holder: &SlotHolder) -> Result<(), StoreError> {
        self.0.free_destination_slot(&self.1, &self.2, holder).await
    }

    async fn held(&self, db: &Pool, now: DateTime<Utc>) -> i64 {
        held(db, DESTINATION_SLOTS_HELD, &self.1, self.2.as_str(), now).await
    }
}

/// [`TAKERS`] callers, half on each server, each take a slot [`ROUNDS`] times (looking
/// again until one comes free), hold it a moment and free it. Never more than [`LIMIT`]
/// are held: neither as the callers count themselves (a caller counts itself in once its
/// take is answered, and out before it frees) nor in the table after each take. And the
/// limit is used: at some point all of its slots are held at once.
async fn race(sides: [Arc<dyn SlotRace>; 2], db: Pool) {
    let holding = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut takers = JoinSet::new();
    for n in 0..TAKERS {
        let side = sides[n % 2].clone();
        let (holding, most, db) = (holding.clone(), most.clone(), db.clone());
        takers.spawn(async move {
            for _ in 0..ROUNDS {
                let holder = SlotHolder::new(&TaskId::new());
                let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
                while !side.take(&holder, Utc::now()).await.unwrap() {
                    assert!(tokio::time::Instant::now() < deadline, "never got a slot");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let now_holding = holding.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now_holding, Ordering::SeqCst);
                assert!(now_holding <= LIMIT as usize, "{now_holding} held at once");
                let in_table = side.held(&db, Utc::now()).await;
                assert!(in_table <= i64::from(LIMIT), "{in_table} held in the table");
                tokio::time::sleep(Duration::from_millis(10)).await;
                holding.fetch_sub(1, Ordering::SeqCst);
                side.free(&holder).await.unwrap();
            }
        });
    }
    while let Some(done) = takers.join_next().await {
        done.unwrap();
    }
    assert_eq!(
        most.load(Ordering::SeqCst),
        LIMIT as usize,
        "the limit is used"
    );
    assert_eq!(sides[0].held(&db, Utc::now()).await, 0, "every slot freed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn flow_slots_hold_across_servers() {
    let (a, b, db) = two_servers().await;
    let (tenant, key) = (unique_tenant("slots"), FlowKey::parse("race").unwrap());
    let side = |s: Arc<PgStore>| -> Arc<dyn SlotRace> {
        Arc::new(FlowRace(s, tenant.clone(), key.clone()))
    };
    race([side(a), side(b)], db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn destination_slots_hold_across_servers() {
    let (a, b, db) = two_servers().await;
    let tenant = unique_tenant("dest");
    let destination = Destination::of("https://slow.example/hook");
    let side = |s: Arc<PgStore>| -> Arc<dyn SlotRace> {
        Arc::new(DestinationRace(s, tenant.clone(), destination.clone()))
    };
    race([side(a), side(b)], db).await;
}

/// A flow's and a destination's slots are apart, and so are two tenants': each has its
/// own limit. A slot whose holder never freed it is taken over by the other server once
/// its lease ends, and the expired rows go with that take.
#[tokio::test]
async fn expired_slots_are_taken_over_and_removed() {
    let (a, b, db) = two_servers().await;
    let (tenant, other) = (unique_tenant("expiry"), unique_tenant("expiry"));
    let key = FlowKey::parse("https://slow.example/hook").unwrap();
    let destination = Destination::of("https://slow.example/hook");
    let (now, until) = (t0(), t0() + chrono::Duration::seconds(10));
    let holders: Vec<SlotHolder> = (0..3).map(|_| SlotHolder::new(&TaskId::new())).collect();
    for h in &holders[..2] {
        assert!(a.take_slot(&tenant, &key, 2, h, now, until).await.unwrap());
        let lease = (now, until);
        assert!(a
            .take_destination_slot(&tenant, &destination, 2, h, lease)
            .await
            .unwrap());
    }
    let late = &holders[2];
    assert!(!b
        .take_slot(&tenant, &key, 2, late, now, until)
        .await
        .unwrap());
    assert!(!b
        .take_destination_slot(&tenant, &destination, 2, late, (now, until))
        .await
        .unwrap());
    assert!(b
        .take_slot(&other, &key, 2, late, now, until)
        .await
        .unwrap());

    let later = until + chrono::Duration::seconds(1);
    let after = later + chrono::Duration::seconds(10);
    assert!(b
        .take_slot(&tenant, &key, 2, late, later, after)
        .await
        .unwrap());
    let lease = (later, after);
    assert!(b
        .take_destination_slot(&tenant, &destination, 2, late, lease)
        .await
        .unwrap());
    let client = db.get().await.unwrap();
    for table in ["flow_slots", "destination_slots"] {
        let sql = format!("SELECT holder FROM {table} WHERE tenant = $1");
        let rows = client.query(&sql, &[&tenant.as_str()]).await.unwrap();
        let left: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(
            left,
            vec![late.as_str().to_string()],
            "expired slots go ({table})"
        );
    }
    // The holder's own slot is renewed, not taken twice.
    let renewed = after + chrono::Duration::seconds(10);
    assert!(b
        .take_slot(&tenant, &key, 1, late, later, renewed)
        .await
        .unwrap());
    assert_eq!(
        held(&db, FLOW_SLOTS_HELD, &tenant, key.as_str(), after).await,
        1
    );
}

/// Asks on both servers at once each get their own place in the window; a new window
/// starts again from one, and the windows that ended a while ago go.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rate_windows_count_across_servers() {
    let (a, b, db) = two_servers().await;
    let (tenant, key) = (unique_tenant("rate"), FlowKey::parse("rate").unwrap());
    let window = t0();
    let mut asks = JoinSet::new();
    for n in 0..100 {
        let store = if n % 2 == 0 { a.clone() } else { b.clone() };
        let (tenant, key) = (tenant.clone(), key.clone());
        asks.spawn(async move { store.ask_start(&tenant, &key, window).await.unwrap() });
    }
    let mut places = Vec::new();
    while let Some(place) = asks.join_next().await {
        places.push(place.unwrap());
    }
    places.sort_unstable();
    assert_eq!(places, (1..=100).collect::<Vec<u64>>());

    let next = window + chrono::Duration::seconds(1);
    assert_eq!(b.ask_start(&tenant, &key, next).await.unwrap(), 1);
    // A server whose clock runs a little behind still counts in the window it asks for.
    assert_eq!(a.ask_start(&tenant, &key, window).await.unwrap(), 101);
    let much_later = window + chrono::Duration::minutes(5);
    assert_eq!(a.ask_start(&tenant, &key, much_later).await.unwrap(), 1);
    let client = db.get().await.unwrap();
    let rows = client
        .query(
            "SELECT window_ms FROM flow_windows WHERE tenant = $1",
            &[&tenant.as_str()],
        )
        .await
        .unwrap();
    let windows: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        windows,
        vec![much_later.timestamp_millis()],
        "old windows go"
    );
}

/// Notes written on one server are counted and taken on the other; a tenant's flows are
/// listed by key with what waits and what is in flight, and no other tenant's.
#[tokio::test]
async fn waiting_and_figures_are_shared() {
    let (a, b, _db) = two_servers().await;
    let (tenant, other) = (unique_tenant("figures"), unique_tenant("figures"));
    let (busy, queued) = (
        FlowKey::parse("b-busy").unwrap(),
        FlowKey::parse("a-queued").unwrap(),
    );
    let now = t0();
    let until = now + chrono::Duration::seconds(30);
    let holder = SlotHolder::new(&TaskId::new());
    assert!(a
        .take_slot(&tenant, &busy, 3, &holder, now, until)
        .await
        .unwrap());
    let waiter = boomerang_core::domain::AttemptRef::delivery(tenant.clone(), TaskId::new(), 1);
    a.note_waiting(&tenant, &queued, &waiter, (now, until))
        .await
        .unwrap();
    let elsewhere = boomerang_core::domain::AttemptRef::delivery(other.clone(), TaskId::new(), 1);
    a.note_waiting(&other, &queued, &elsewhere, (now, until))
        .await
        .unwrap();

    let figures = b.figures(&tenant, now).await.unwrap();
    let expected = vec![
        FlowFigures {
            key: queued.clone(),
            waiting: 1,
            in_flight: 0,
        },
        FlowFigures {
            key: busy.clone(),
            waiting: 0,
            in_flight: 1,
        },
    ];
    assert_eq!(figures, expected);
    assert_eq!(
        b.flow_figures(&tenant, &busy, now).await.unwrap(),
        expected[1]
    );
    // Past its lease the slot counts for nothing, and the flow is not listed.
    assert_eq!(b.figures(&tenant, until).await.unwrap(), vec![]);

    assert_eq!(
        b.take_waiting(&tenant, &queued, now).await.unwrap(),
        vec![waiter]
    );
    assert_eq!(
        b.flow_figures(&tenant, &queued, now).await.unwrap().waiting,
        0
    );
    assert_eq!(
        a.flow_figures(&other, &queued, now).await.unwrap().waiting,
        1
    );
    let unknown = FlowKey::parse("never-named").unwrap();
    let none = a.flow_figures(&tenant, &unknown, now).await.unwrap();
    assert_eq!(none, FlowFigures::none(unknown));
}

/// Waiting for a slot freed by another server is looking again shortly, never the whole
/// of `at_most`.
#[tokio::test]
async fn a_waiter_looks_again_shortly() {
    let (a, _b, _db) = two_servers().await;
    let (tenant, key) = (unique_tenant("look"), FlowKey::parse("look").unwrap());
    let started = std::time::Instant::now();
    a.slot_freed(&tenant, &key, Duration::from_secs(5)).await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "waited {:?}",
        started.elapsed()
    );
}

/// 100 registrations on two servers at once take places 1 to 100, none twice; the head is
/// the lowest place held, and the line goes on as places are left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn order_places_are_given_once_across_servers() {
    let (a, b, _db) = two_servers().await;
    let (tenant, key) = (unique_tenant("order"), OrderKey::parse("line").unwrap());
    let mut takes = JoinSet::new();
    for n in 0..100 {
        let store = if n % 2 == 0 { a.clone() } else { b.clone() };
        let (tenant, key) = (tenant.clone(), key.clone());
        takes.spawn(async move {
            let task = TaskId::new();
            let seq = store.take_place(&tenant, &key, task, t0()).await.unwrap();
            (seq, task)
        });
    }
    let mut places = Vec::new();
    while let Some(place) = takes.join_next().await {
        places.push(place.unwrap());
    }
    places.sort_unstable();
    let seqs: Vec<u64> = places.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, (1..=100).collect::<Vec<u64>>(), "each place once");

    let head = b.head(&tenant, &key).await.unwrap().unwrap();
    assert_eq!((head.seq, head.task, head.at), (1, places[0].1, t0()));
    a.leave(&tenant, &key, 1).await.unwrap();
    a.leave(&tenant, &key, 1).await.unwrap();
    a.leave(&tenant, &key, 50).await.unwrap();
    let line = b.line(&tenant, &key).await.unwrap();
    assert_eq!(line.backlog, 98);
    let head = line.head.unwrap();
    assert_eq!((head.seq, head.task), (2, places[1].1));
    // A place given later is greater, whatever was left.
    let task = TaskId::new();
    assert_eq!(b.take_place(&tenant, &key, task, t0()).await.unwrap(), 101);
}

/// A tenant's keys are listed by key, a page at a time, each with its head and backlog;
/// a key whose line emptied shows no head, and a key no one named shows an empty line.
#[tokio::test]
async fn order_keys_are_listed_by_key() {
    let (a, b, _db) = two_servers().await;
    let (tenant, other) = (unique_tenant("keys"), unique_tenant("keys"));
    let key = |k: &str| OrderKey::parse(k).unwrap();
    let mut firsts = Vec::new();
    for (k, places) in [("c", 1), ("a", 3), ("b", 2)] {
        for n in 0..places {
            let task = TaskId::new();
            a.take_place(&tenant, &key(k), task, t0()).await.unwrap();
            if n == 0 {
                firsts.push((k, task));
            }
        }
    }
    b.take_place(&other, &key("a"), TaskId::new(), t0())
        .await
        .unwrap();
    b.leave(&tenant, &key("c"), 1).await.unwrap();

    let page = b.order_keys(&tenant, None, 2).await.unwrap();
    let listed: Vec<(String, u64, Option<u64>)> = page
        .iter()
        .map(|s| (s.key.to_string(), s.backlog, s.head.as_ref().map(|h| h.seq)))
        .collect();
    assert_eq!(
        listed,
        vec![("a".into(), 3, Some(1)), ("b".into(), 2, Some(1))]
    );
    let first_of = |k: &str| firsts.iter().find(|(f, _)| *f == k).unwrap().1;
    assert_eq!(page[0].head.as_ref().unwrap().task, first_of("a"));
    let rest = b.order_keys(&tenant, Some(&page[1].key), 2).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(
        (
            rest[0].key.as_str(),
            rest[0].backlog,
            rest[0].head.is_none()
        ),
        ("c", 0, true)
    );
    let line = a.line(&tenant, &key("nobody")).await.unwrap();
    assert_eq!((line.backlog, line.head), (0, None));
    assert!(a.head(&tenant, &key("nobody")).await.unwrap().is_none());
}
