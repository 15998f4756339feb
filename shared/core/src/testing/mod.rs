//! Test doubles for the engine's ports (an in-memory store and dead letters, a recording
//! timer; the manual clock is in [`crate::clock`]) and the contracts every [`TaskStore`] and
//! [`crate::ports::Timer`] adapter must honour, as suites that each adapter's tests run.
//! Tenants are unique per run, so the suites can share a table with other tests.

pub mod flow_contract;
pub mod harness;
mod memory_dead_letters;
mod memory_store;
mod memory_tenants;
mod recording_timer;
pub mod schedules;

pub use memory_dead_letters::MemoryDeadLetters;
pub use memory_store::MemoryStore;
pub use memory_tenants::MemoryTenants;
pub use recording_timer::RecordingTimer;

/// A backend that is always ready: for the engine's unit tests.
pub struct AlwaysReady;

#[async_trait::async_trait]
impl crate::ports::Readiness for AlwaysReady {
    async fn failing(&self) -> Vec<String> {
        Vec::new()
    }
}

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::domain::{
    AlertTarget, AttemptOutcome, AttemptRecord, AttemptRef, CallbackRequest, Notify, PendingWork,
    RetryPolicy, Status, Task, TaskId, TaskSpec, TenantId, WorkKind,
};
use crate::ports::{CreateOutcome, ListQuery, PolicyStore, StoreError, SweepIndex, TaskStore};

/// What the store contract exercises: every capability a store of either backend has.
pub trait ContractStore: TaskStore + SweepIndex + PolicyStore {}

impl<S: TaskStore + SweepIndex + PolicyStore> ContractStore for S {}

/// A fresh tenant id no other test uses.
pub fn unique_tenant(prefix: &str) -> TenantId {
    TenantId::parse(format!("{prefix}-{}", ulid::Ulid::new())).expect("a valid tenant id")
}

/// A scheduled task due at `fire_at`.
pub fn sample_task(tenant: &TenantId, key: Option<&str>, fire_at: DateTime<Utc>) -> Task {
    let spec = TaskSpec {
        request: CallbackRequest {
            url: "https://example.com/hook".into(),
            method: "POST".into(),
            headers: vec![("x-trace".into(), "1".into())],
            body: "{\"n\":1}".into(),
        },
        timeout: Duration::from_secs(10),
        expect_body: None,
        retry: RetryPolicy::default(),
        metadata: [("order".to_string(), "42".to_string())].into(),
        key: None,
        on_failure: Some(AlertTarget {
            url: "https://example.com/alerts".into(),
            headers: vec![("x-team".into(), "payments".into())],
        }),
        notify: Notify::Every,
        alert_of: None,
        hold: None,
        flow: None,
        occurrence: None,
    };
    let key = key.map(str::to_string);
    // The digest is only kept with an idempotency key (it is only ever compared then).
    let hash = if key.is_some() { "hash" } else { "" };
    Task::new_scheduled(tenant.clone(), spec, key, hash.into(), fire_at, fire_at)
}

/// The behaviour every store must have, one caller at a time.
pub async fn store_contract(store: Arc<dyn ContractStore>) {
    create_get_round_trip(&*store).await;
    idempotent_create(&*store).await;
    conditional_update(&*store).await;
    attempts_are_kept_in_order(&*store).await;
    every_finished_attempt_is_kept(&*store).await;
    list_is_scoped_filtered_and_paged(&*store).await;
    long_lists_page_in_order(&*store).await;
    lists_by_business_key(&*store).await;
    policies_are_kept_per_tenant(&*store).await;
    due_finds_only_work_to_do(&*store).await;
    a_claim_is_seen_and_wins_against_stale_writes(&*store).await;
}

/// Races: concurrent registrations with one idempotency key, and concurrent claims of one
/// version, each with exactly one winner. (moto's conditional writes are not atomic under
/// concurrency, so the DynamoDB adapter runs this against dynalite.)
pub async fn store_atomicity_contract(store: Arc<dyn ContractStore>) {
    concurrent_idempotent_creates_have_one_winner(store.clone()).await;
    concurrent_claims_have_one_winner(store.clone(), ClaimBy::Update).await;
    concurrent_claims_have_one_winner(store, ClaimBy::Claim).await;
}

/// `claim` (which a store may keep in memory) is read back by `get`, refuses a stale
/// version, makes a write from the version before it lose (a cancel racing the
/// delivery), and ends with `finish_attempt`.
async fn a_claim_is_seen_and_wins_against_stale_writes(store: &dyn ContractStore) {
    let tenant = unique_tenant("claim-seen");
    let now = millis(Utc::now());
    let task = sample_task(&tenant, None, now);
    store.create(&task).await.unwrap();
    let claimed = task.claim(1, now, Duration::from_secs(40)).unwrap();
    store.claim(&claimed, task.version).await.unwrap();
    assert_eq!(
        store.get(&task.tenant, &task.id).await.unwrap(),
        Some(claimed.clone())
    );
    assert!(matches!(
        store.claim(&claimed, task.version).await,
        Err(StoreError::Conflict)
    ));
    let canceled = task.cancel(now).unwrap();
    assert!(matches!(
        store.update(&canceled, task.version).await,
        Err(StoreError::Conflict)
    ));
    let done = claimed
        .after_attempt(&crate::domain::Verdict::Success, now, 0.5)
        .unwrap();
    let record = claimed.attempt_record(&done, now, now, Some(200), None);
    store
        .finish_attempt(&record, &done, claimed.version)
        .await
        .unwrap();
    assert_eq!(
        store.get(&task.tenant, &task.id).await.unwrap(),
        Some(done.clone())
    );
    assert_eq!(
        store.attempts(&task.tenant, &task.id).await.unwrap(),
        vec![record]
    );
    assert!(matches!(
        store.claim(&claimed, task.version).await,
        Err(StoreError::Conflict)
    ));
}

fn millis(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).expect("in range")
}

async fn create_get_round_trip(store: &dyn ContractStore) {
    let tenant = unique_tenant("roundtrip");
    let task = sample_task(&tenant, None, millis(Utc::now()));
    assert!(matches!(
        store.create(&task).await.unwrap(),
        CreateOutcome::Created
    ));
    assert_eq!(
        store.get(&task.tenant, &task.id).await.unwrap(),
        Some(task.clone())
    );
    assert_eq!(store.get(&tenant, &TaskId::new()).await.unwrap(), None);
    let other = unique_tenant("roundtrip");
    assert_eq!(
        store.get(&other, &task.id).await.unwrap(),
        None,
        "another tenant does not find it"
    );
    assert_eq!(store.details(&other, &task.id).await.unwrap(), None);
}

async fn idempotent_create(store: &dyn ContractStore) {
    let tenant = unique_tenant("idem");
    let now = millis(Utc::now());
    let first = sample_task(&tenant, Some("key"), now);
    let again = sample_task(&tenant, Some("key"), now);
    assert!(matches!(
        store.create(&first).await.unwrap(),
        CreateOutcome::Created
    ));
    match store.create(&again).await.unwrap() {
        CreateOutcome::Existing(t) => assert_eq!(t.id, first.id),
        other => panic!("expected the existing task, got {other:?}"),
    }
    assert_eq!(
        store.get(&again.tenant, &again.id).await.unwrap(),
        None,
        "the loser is not stored"
    );
    let other = sample_task(&unique_tenant("idem"), Some("key"), now);
    assert!(matches!(
        store.create(&other).await.unwrap(),
        CreateOutcome::Created
    ));
}

async fn concurrent_idempotent_creates_have_one_winner(store: Arc<dyn ContractStore>) {
    let tenant = unique_tenant("race");
    let now = millis(Utc::now());
    let handles: Vec<_> = (0..20)
        .map(|_| {
            let (store, task) = (store.clone(), sample_task(&tenant, Some("same"), now));
            tokio::spawn(async move { store.create(&task).await })
        })
        .collect();
    let mut created = 0;
    let mut ids = std::collections::HashSet::new();
    for h in handles {
        match h.await.unwrap().unwrap() {
            CreateOutcome::Created => created += 1,
            CreateOutcome::Existing(t) => {
                ids.insert(t.id);
            }
        }
    }
    assert_eq!(created, 1, "exactly one registration wins");
    assert!(ids.len() <= 1, "every loser sees the same winner");
    let page = store
        .list(
            &tenant,
            &ListQuery {
                limit: 50,
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.tasks.len(), 1);
}

async fn conditional_update(store: &dyn ContractStore) {
    let tenant = unique_tenant("update");
    let now = millis(Utc::now());
    let task = sample_task(&tenant, None, now);
    store.create(&task).await.unwrap();
    let next = task.claim(1, now, Duration::ZERO).unwrap();
    assert!(matches!(
        store.update(&next, 7).await,
        Err(StoreError::Conflict)
    ));
    store.update(&next, 1).await.unwrap();
    assert_eq!(
        store.get(&task.tenant, &task.id).await.unwrap(),
        Some(next.clone())
    );
    assert!(matches!(
        store.update(&next, 1).await,
        Err(StoreError::Conflict)
    ));
    let ghost = sample_task(&tenant, None, now);
    assert!(matches!(
        store.update(&ghost, 1).await,
        Err(StoreError::Conflict)
    ));
}

/// How a racing worker writes its claim: `update` (what every store has), or `claim`
/// (which a store may keep in memory).
#[derive(Clone, Copy)]
enum ClaimBy {
    Update,
    Claim,
}

async fn concurrent_claims_have_one_winner(store: Arc<dyn ContractStore>, by: ClaimBy) {
    let tenant = unique_tenant("claim");
    let now = millis(Utc::now());
    let task = sample_task(&tenant, None, now);
    store.create(&task).await.unwrap();
    let handles: Vec<_> = (0..20)
        .map(|i| {
            let store = store.clone();
            let mut claim = task.claim(1, now, Duration::from_secs(30)).unwrap();
            claim.last_error = Some(format!("worker {i}"));
            tokio::spawn(async move {
                match by {
                    ClaimBy::Update => store.update(&claim, 1).await.is_ok(),
                    ClaimBy::Claim => store.claim(&claim, 1).await.is_ok(),
                }
            })
        })
        .collect();
    let mut winners = 0;
    for h in handles {
        winners += h.await.unwrap() as u32;
    }
    assert_eq!(winners, 1, "exactly one claim succeeds");
}

async fn attempts_are_kept_in_order(store: &dyn ContractStore) {
    let tenant = unique_tenant("attempts");
    let now = millis(Utc::now());
    let task = sample_task(&tenant, None, now);
    store.create(&task).await.unwrap();
    let record = |n: u32, code: u16| AttemptRecord {
        task_id: task.id,
        number: n,
        scheduled_at: now,
        started_at: now,
        lateness_ms: 5,
        duration_ms: 12,
        status_code: Some(code),
        error: None,
        response_excerpt: Some("ok".into()),
        outcome: AttemptOutcome::Retrying,
        worker: Some("host-1:42".into()),
    };
    for n in [2, 1, 10] {
        store.put_attempt(&tenant, &record(n, 500)).await.unwrap();
    }
    store.put_attempt(&tenant, &record(2, 503)).await.unwrap();
    let got = store.attempts(&task.tenant, &task.id).await.unwrap();
    let numbers: Vec<_> = got.iter().map(|a| (a.number, a.status_code)).collect();
    assert_eq!(
        numbers,
        vec![(1, Some(500)), (2, Some(503)), (10, Some(500))]
    );
    assert!(store
        .attempts(&tenant, &TaskId::new())
        .await
        .unwrap()
        .is_empty());
}

/// Twelve attempts, each claimed and finished as `deliver` does: every record is kept,
/// in order, with the task's last state (a store may keep the first few records inside the
/// task and later ones apart).
async fn every_finished_attempt_is_kept(store: &dyn ContractStore) {
    let tenant = unique_tenant("finish");
    let mut now = millis(Utc::now());
    let mut task = sample_task(&tenant, None, now);
    task.spec.retry = task.spec.retry.clone().with_max_attempts(13).unwrap();
    store.create(&task).await.unwrap();
    for n in 1..=12u32 {
        let claimed = task.claim(n, now, Duration::from_secs(40)).unwrap();
        store.claim(&claimed, task.version).await.unwrap();
        let verdict = crate::domain::Verdict::Retry {
            error: format!("HTTP 50{}", n % 10),
            retry_after: None,
        };
        let later = now + chrono::Duration::milliseconds(25);
        let next = claimed.after_attempt(&verdict, later, 0.5).unwrap();
        let record = claimed.attempt_record(&next, now, later, Some(500), Some("no".into()));
        store
            .finish_attempt(&record, &next, claimed.version)
            .await
            .unwrap();
        now = next.next_attempt_at.unwrap();
        task = next;
    }
    let got = store.attempts(&task.tenant, &task.id).await.unwrap();
    assert_eq!(
        got.iter().map(|a| a.number).collect::<Vec<_>>(),
        (1..=12).collect::<Vec<_>>()
    );
    assert!(got.iter().all(|a| a.outcome == AttemptOutcome::Retrying));
    assert_eq!(got[11].error.as_deref(), Some("HTTP 502"));
    assert_eq!(store.get(&task.tenant, &task.id).await.unwrap(), Some(task));
}

/// Named policies: stored (with their flow), replaced, listed by name, removed, and per
/// tenant.
async fn policies_are_kept_per_tenant(store: &dyn ContractStore) {
    use crate::domain::{FlowSpec, Policy, PolicyName};
    let (tenant, other) = (unique_tenant("policies"), unique_tenant("policies"));
    let name = |n: &str| PolicyName::parse(n).unwrap();
    let with_attempts = |n: u32| Policy {
        retry: RetryPolicy::default().with_max_attempts(n).unwrap(),
        flow: (n > 3).then(|| FlowSpec::new("partner", Some(50), None, Some(3)).unwrap()),
    };
    assert_eq!(
        store.policy(&tenant, &name("payments")).await.unwrap(),
        None
    );
    store
        .put_policy(&tenant, &name("payments"), &with_attempts(3))
        .await
        .unwrap();
    store
        .put_policy(&tenant, &name("default"), &with_attempts(2))
        .await
        .unwrap();
    store
        .put_policy(&tenant, &name("payments"), &with_attempts(5))
        .await
        .unwrap();
    assert_eq!(
        store.policy(&tenant, &name("payments")).await.unwrap(),
        Some(with_attempts(5)),
        "replaced"
    );
    assert_eq!(store.policy(&other, &name("payments")).await.unwrap(), None);
    let listed = store.policies(&tenant).await.unwrap();
    assert_eq!(
        listed,
        vec![
            (name("default"), with_attempts(2)),
            (name("payments"), with_attempts(5))
        ]
    );
    assert!(store
        .delete_policy(&tenant, &name("payments"))
        .await
        .unwrap());
    assert!(!store
        .delete_policy(&tenant, &name("payments"))
        .await
        .unwrap());
    assert_eq!(
        store.policy(&tenant, &name("payments")).await.unwrap(),
        None
    );
    assert!(store.policies(&other).await.unwrap().is_empty());
}

/// A business key finds the tenant's tasks with it, newest first, filtered and paged like
/// any list, and nothing of another key or tenant.
async fn lists_by_business_key(store: &dyn ContractStore) {
    let tenant = unique_tenant("by-key");
    let now = millis(Utc::now());
    let key = |k: &str| Some(crate::domain::BusinessKey::parse(k).unwrap());
    let with_key = |tenant: &TenantId, k: Option<crate::domain::BusinessKey>| {
        let mut task = sample_task(tenant, None, now);
        task.spec.key = k;
        task
    };
    let mut ids = Vec::new();
    for i in 0..3 {
        let mut task = with_key(&tenant, key("order-42"));
        if i == 1 {
            task = task.cancel(now).unwrap();
        }
        store.create(&task).await.unwrap();
        ids.push(task.id);
    }
    for other in [
        with_key(&tenant, key("order-43")),
        with_key(&tenant, None),
        with_key(&unique_tenant("by-key"), key("order-42")),
    ] {
        store.create(&other).await.unwrap();
    }
    ids.sort_by(|a, b| b.cmp(a));
    let q = |status, limit, cursor| ListQuery {
        status,
        key: key("order-42"),
        limit,
        cursor,
    };
    let all = store.list(&tenant, &q(None, 10, None)).await.unwrap();
    assert_eq!(all.tasks.iter().map(|t| t.id).collect::<Vec<_>>(), ids);
    assert!(all.tasks.iter().all(|t| t.spec.key == key("order-42")));
    let first = store.list(&tenant, &q(None, 2, None)).await.unwrap();
    let rest = store
        .list(&tenant, &q(None, 2, first.next_cursor))
        .await
        .unwrap();
    assert_eq!(
        first
            .tasks
            .iter()
            .chain(&rest.tasks)
            .map(|t| t.id)
            .collect::<Vec<_>>(),
        ids
    );
    assert_eq!(rest.next_cursor, None);
    let canceled = store
        .list(&tenant, &q(Some(Status::Canceled), 10, None))
        .await
        .unwrap();
    assert_eq!(canceled.tasks.len(), 1);
}

/// Forty tasks (one with attempt records of its own), read in pages of seven: every task
/// once, newest first, nothing else.
async fn long_lists_page_in_order(store: &dyn ContractStore) {
    let tenant = unique_tenant("long-list");
    let now = millis(Utc::now());
    let mut ids = Vec::new();
    for _ in 0..40 {
        let task = sample_task(&tenant, None, now);
        store.create(&task).await.unwrap();
        ids.push(task.id);
    }
    let record = AttemptRecord {
        task_id: ids[0],
        number: 11,
        scheduled_at: now,
        started_at: now,
        lateness_ms: 0,
        duration_ms: 1,
        status_code: Some(500),
        error: None,
        response_excerpt: None,
        outcome: AttemptOutcome::Retrying,
        worker: None,
    };
    store.put_attempt(&tenant, &record).await.unwrap();
    ids.sort_by(|a, b| b.cmp(a));
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let query = ListQuery {
            limit: 7,
            cursor,
            ..ListQuery::default()
        };
        let page = store.list(&tenant, &query).await.unwrap();
        assert!(page.tasks.len() <= 7);
        seen.extend(page.tasks.iter().map(|t| t.id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, ids);
}

async fn list_is_scoped_filtered_and_paged(store: &dyn ContractStore) {
    let tenant = unique_tenant("list");
    let now = millis(Utc::now());
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut t = sample_task(&tenant, None, now);
        if i % 2 == 1 {
            t = t.cancel(now).unwrap();
        }
        store.create(&t).await.unwrap();
        ids.push(t.id);
        // ULIDs minted in the same millisecond are still ordered, but be explicit.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    store
        .create(&sample_task(&unique_tenant("list"), None, now))
        .await
        .unwrap();
    ids.reverse(); // newest first
    let q = |limit, cursor, status| ListQuery {
        status,
        limit,
        cursor,
        key: None,
    };
    let first = store.list(&tenant, &q(2, None, None)).await.unwrap();
    assert_eq!(
        first.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        ids[..2]
    );
    let second = store
        .list(&tenant, &q(2, first.next_cursor, None))
        .await
        .unwrap();
    assert_eq!(
        second.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        ids[2..4]
    );
    let last = store
        .list(&tenant, &q(2, second.next_cursor, None))
        .await
        .unwrap();
    assert_eq!(
        last.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        ids[4..]
    );
    assert_eq!(last.next_cursor, None);
    let canceled = store
        .list(&tenant, &q(10, None, Some(Status::Canceled)))
        .await
        .unwrap();
    assert_eq!(canceled.tasks.len(), 2);
    assert!(canceled.tasks.iter().all(|t| t.status == Status::Canceled));
}

/// The store indexes exactly [`Task::pending_work`]: `due(cutoff)` finds every task whose
/// pending work is due by the cutoff, and nothing else.
async fn due_finds_only_work_to_do(store: &dyn ContractStore) {
    let tenant = unique_tenant("due");
    let now = millis(Utc::now());
    let minute = chrono::Duration::minutes(1);
    let lease = |m: i64| Duration::from_secs((m * 60) as u64);
    let overdue = sample_task(&tenant, None, now - minute);
    let later = sample_task(&tenant, None, now + minute * 30);
    // Claimed two minutes ago with a one-minute lease: the worker died.
    let stalled = sample_task(&tenant, None, now - minute * 2)
        .claim(1, now - minute * 2, lease(1))
        .unwrap();
    let working = sample_task(&tenant, None, now - minute)
        .claim(1, now, lease(1))
        .unwrap();
    let mut pending = sample_task(&tenant, None, now - minute)
        .claim(1, now - minute, lease(1))
        .unwrap();
    pending.status = Status::Failed;
    pending.next_attempt_at = None;
    pending.lease_until = None;
    pending.dead_letter_pending = true;
    // Failed, its dead letter sent but its alert still owed (and one alert raised before).
    let mut owing = pending.clone();
    owing.id = TaskId::new();
    owing.dead_letter_pending = false;
    owing.alert_pending = true;
    owing.alerts = vec![TaskId::new(), TaskId::new()];
    // Held, its hold timed out and one check made: the next check is due.
    let mut held = sample_task(&tenant, None, now + minute);
    held.spec.hold = Some(
        crate::domain::HoldSpec::new(
            Duration::from_secs(30),
            Some("https://example.com/tx".into()),
            crate::domain::OnUnknown::Release,
            Some(5),
        )
        .unwrap(),
    );
    let mut held = held.hold_from(now - minute).unwrap();
    held.checks.push(crate::domain::CheckRecord {
        number: 1,
        at: now - minute,
        duration_ms: 12,
        status_code: Some(503),
        decision: None,
        error: Some("HTTP 503".into()),
    });
    held.check_at = Some(now - minute / 2);
    // Held with its timeout ahead.
    let mut waiting = sample_task(&tenant, None, now - minute);
    waiting.spec.hold = held.spec.hold.clone();
    let waiting = waiting.hold_from(now).unwrap();
    let done = working
        .after_attempt(&crate::domain::Verdict::Success, now, 0.5)
        .unwrap();
    let done = Task {
        id: TaskId::new(),
        ..done
    };
    let all = [
        &overdue, &later, &stalled, &working, &pending, &owing, &held, &waiting, &done,
    ];
    for t in all {
        store.create(t).await.unwrap();
    }
    assert_eq!(
        store.get(&tenant, &owing.id).await.unwrap().as_ref(),
        Some(&owing),
        "an owed alert and the alerts raised are kept"
    );
    assert_eq!(
        store.get(&tenant, &held.id).await.unwrap().as_ref(),
        Some(&held),
        "a hold, its checks and its next check are kept"
    );
    let ours: Vec<TaskId> = all.iter().map(|t| t.id).collect();
    let mine = |items: Vec<PendingWork>| {
        let mut v: Vec<_> = items
            .into_iter()
            .filter(|w| ours.contains(&w.attempt.task_id))
            .map(|w| (w.attempt.task_id, w.kind))
            .collect();
        v.sort();
        v
    };
    let mut expected = vec![
        (overdue.id, WorkKind::Attempt),
        (stalled.id, WorkKind::LeaseExpiry),
        (pending.id, WorkKind::DeadLetter),
        (owing.id, WorkKind::DeadLetter),
        (held.id, WorkKind::Check),
    ];
    expected.sort();
    let due = store.due(now, 10_000).await.unwrap().work;
    assert_eq!(mine(due.clone()), expected);
    let item = due
        .iter()
        .find(|w| w.attempt.task_id == overdue.id)
        .unwrap();
    assert_eq!(item, &overdue.pending_work().unwrap());
    assert_eq!(
        (item.attempt.clone(), item.due_at),
        (overdue.attempt_ref(1), now - minute)
    );
    let check = due.iter().find(|w| w.attempt.task_id == held.id).unwrap();
    assert_eq!(
        (check.attempt.attempt, check.due_at),
        (crate::domain::CHECK_ATTEMPT, now - minute / 2),
        "a check's timer carries the checks' attempt number"
    );

    expected.push((later.id, WorkKind::Attempt));
    expected.push((working.id, WorkKind::LeaseExpiry));
    expected.push((waiting.id, WorkKind::Check));
    expected.sort();
    let ahead = store.due(now + minute * 31, 10_000).await.unwrap().work;
    assert_eq!(
        mine(ahead),
        expected,
        "a positive lookahead loads later work, and leases that end within it"
    );
}

/// Watches a timer's fires, however the adapter delivers them.
#[async_trait::async_trait]
pub trait TimerProbe: Send {
    /// The next fire, or `None` if nothing fired within `within`.
    async fn next_fire(&mut self, within: Duration) -> Option<AttemptRef>;
}

/// Waits for the fire of `attempt`, skipping others (duplicates are allowed).
async fn await_fire(probe: &mut dyn TimerProbe, attempt: &AttemptRef) -> std::time::Instant {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "timer never fired for {attempt:?}");
        if probe.next_fire(left).await.as_ref() == Some(attempt) {
            return std::time::Instant::now();
        }
    }
}

/// Waits for the first fire of each of `attempts`, in any order, skipping others.
async fn await_fires(
    probe: &mut dyn TimerProbe,
    attempts: &[&AttemptRef],
) -> std::collections::HashMap<AttemptRef, std::time::Instant> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut fired = std::collections::HashMap::new();
    while fired.len() < attempts.len() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            !left.is_zero(),
            "timer never fired for some of {attempts:?}"
        );
        if let Some(got) = probe.next_fire(left).await {
            if attempts.contains(&&got) {
                fired.entry(got).or_insert_with(std::time::Instant::now);
            }
        }
    }
    fired
}

/// The contract of every [`crate::ports::Timer`]: a fire for each armed attempt, never early (to the
/// second), overdue attempts at once, arming the same attempt twice is harmless, and an
/// attempt put off fires then.
pub async fn timer_contract(timer: Arc<dyn crate::ports::Timer>, probe: &mut dyn TimerProbe) {
    let tenant = unique_tenant("timer");
    let attempt = |n| AttemptRef::new(tenant.clone(), TaskId::new(), n);
    let (a, b, c, d) = (attempt(1), attempt(4), attempt(2), attempt(3));
    let armed_at = std::time::Instant::now();
    timer
        .arm(a.clone(), Utc::now() + chrono::Duration::seconds(2))
        .await
        .unwrap();
    timer
        .arm(b.clone(), Utc::now() - chrono::Duration::seconds(30))
        .await
        .unwrap();
    let due_c = Utc::now() + chrono::Duration::seconds(1);
    timer.arm(c.clone(), due_c).await.unwrap();
    timer.arm(c.clone(), due_c).await.unwrap();
    timer
        .put_off(d.clone(), Utc::now() + chrono::Duration::seconds(1))
        .await
        .unwrap();

    let fired_b = await_fire(probe, &b).await;
    assert!(
        fired_b - armed_at < Duration::from_secs(10),
        "an overdue attempt fires at once"
    );
    let fired = await_fires(probe, &[&c, &d, &a]).await;
    let since = |x: &AttemptRef| fired[x] - armed_at;
    assert!(since(&c) >= Duration::from_millis(900), "never early");
    assert!(
        since(&d) >= Duration::from_millis(900),
        "a put-off attempt fires no earlier than it was put off to"
    );
    assert!(since(&a) >= Duration::from_millis(1900), "never early");
}
