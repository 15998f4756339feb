//! The store contract: what every store must do, one caller at a time and in races.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::fixtures::{millis, sample_task, unique_tenant, ContractStore};
use crate::domain::ids::Attempt;
use crate::domain::{AttemptOutcome, AttemptRecord, RetryPolicy, TaskId};
use crate::ports::{CreateOutcome, ListQuery, StoreError};

/// The behaviour every store must have, one caller at a time.
pub async fn store_contract(store: Arc<dyn ContractStore>) {
    create_get_round_trip(&*store).await;
    idempotent_create(&*store).await;
    conditional_update(&*store).await;
    attempts_are_kept_in_order(&*store).await;
    every_finished_attempt_is_kept(&*store).await;
    super::list_suite::list_is_scoped_filtered_and_paged(&*store).await;
    super::list_suite::long_lists_page_in_order(&*store).await;
    super::list_suite::lists_by_business_key(&*store).await;
    policies_are_kept_per_tenant(&*store).await;
    breakers_are_written_conditionally(&*store).await;
    bulk_jobs_are_written_conditionally(&*store).await;
    order_places_are_given_in_order_and_the_head_is_the_lowest_held(&*store).await;
    super::due_suite::due_finds_only_work_to_do(&*store).await;
    a_claim_is_seen_and_wins_against_stale_writes(&*store).await;
}

/// A key's places are given in increasing order; the head is the lowest place held; a
/// place left is gone (leaving it twice is harmless); keys are listed per tenant, in key
/// order after a cursor, with their heads and backlogs.
async fn order_places_are_given_in_order_and_the_head_is_the_lowest_held(
    store: &dyn ContractStore,
) {
    use crate::domain::{OrderKey, TaskId};
    let (tenant, other) = (unique_tenant("order"), unique_tenant("order"));
    let (a, b) = (
        OrderKey::parse("a/1").unwrap(),
        OrderKey::parse("b 2").unwrap(),
    );
    let now = Utc::now();
    let tasks: Vec<TaskId> = (0..3).map(|_| TaskId::new()).collect();
    let mut seqs = Vec::new();
    for task in &tasks {
        seqs.push(store.take_place(&tenant, &a, *task, now).await.unwrap());
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let b_seq = store
        .take_place(&tenant, &b, TaskId::new(), now)
        .await
        .unwrap();
    store
        .take_place(&other, &a, TaskId::new(), now)
        .await
        .unwrap();
    let head = store.head(&tenant, &a).await.unwrap().unwrap();
    assert_eq!((head.seq, head.task), (seqs[0], tasks[0]));
    assert!((head.at - now).num_milliseconds().abs() < 1000);
    store.leave(&tenant, &a, seqs[0]).await.unwrap();
    store.leave(&tenant, &a, seqs[0]).await.unwrap();
    let head = store.head(&tenant, &a).await.unwrap().unwrap();
    assert_eq!((head.seq, head.task), (seqs[1], tasks[1]));
    let listed = store.order_keys(&tenant, None, 10).await.unwrap();
    let summary: Vec<(String, u64, Option<TaskId>)> = (listed.iter())
        .map(|k| {
            (
                k.key.to_string(),
                k.backlog,
                k.head.as_ref().map(|h| h.task),
            )
        })
        .collect();
    assert_eq!(summary[0], ("a/1".to_string(), 2, Some(tasks[1])));
    assert_eq!(summary[1].0, "b 2");
    assert_eq!(summary[1].1, 1);
    assert_eq!(summary.len(), 2, "another tenant's keys are not listed");
    let after = store.order_keys(&tenant, Some(&a), 10).await.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].key, b);
    let line = store.line(&tenant, &a).await.unwrap();
    assert_eq!((line.backlog, line.head.map(|h| h.seq)), (2, Some(seqs[1])));
    store.leave(&tenant, &b, b_seq).await.unwrap();
    assert_eq!(store.head(&tenant, &b).await.unwrap(), None);
    let unknown = OrderKey::parse("never").unwrap();
    let line = store.line(&tenant, &unknown).await.unwrap();
    assert_eq!((line.backlog, line.head), (0, None));
    // A place given after others were left is still greater than every earlier one.
    let later = store
        .take_place(&tenant, &a, TaskId::new(), now)
        .await
        .unwrap();
    assert!(later > seqs[2]);
}

/// Races: concurrent registrations with one idempotency key, and concurrent claims of one
/// version, each with exactly one winner. (moto's conditional writes are not atomic under
/// concurrency, so the DynamoDB adapter runs this against dynalite.)
pub async fn store_atomicity_contract(store: Arc<dyn ContractStore>) {
    concurrent_idempotent_creates_have_one_winner(store.clone()).await;
    concurrent_claims_have_one_winner(store.clone(), ClaimBy::Update).await;
    concurrent_claims_have_one_winner(store, ClaimBy::Claim).await;
}

/// A bulk job is written only from the version read; the tenant's are listed newest
/// first; a running one is found across tenants until it finishes.
async fn bulk_jobs_are_written_conditionally(store: &dyn ContractStore) {
    use crate::domain::{BulkAction, BulkJob, BulkPlan, TaskFilter};
    let (tenant, other) = (unique_tenant("jobs"), unique_tenant("jobs"));
    let plan = BulkPlan::new(BulkAction::Retry, TaskFilter::default(), None, true).unwrap();
    let now = Utc::now();
    let first = BulkJob::new(tenant.clone(), plan.clone(), now);
    let second = BulkJob::new(tenant.clone(), plan.clone(), now);
    let others = BulkJob::new(other.clone(), plan, now);
    for job in [&first, &second, &others] {
        store.create_job(job).await.unwrap();
    }
    assert_eq!(
        store.job(&tenant, &first.id).await.unwrap().as_ref(),
        Some(&first)
    );
    assert_eq!(
        store.job(&other, &first.id).await.unwrap(),
        None,
        "per tenant"
    );
    let listed: Vec<_> = (store.jobs(&tenant).await.unwrap().iter())
        .map(|j| j.id)
        .collect();
    // By id, newest first (two ids of one millisecond sort by their random part).
    let mut expected = vec![first.id, second.id];
    expected.sort_by(|a, b| b.cmp(a));
    assert_eq!(listed, expected, "newest first, the tenant's only");

    let claimed = first.claim("runner", now).unwrap();
    store.save_job(&claimed, first.version).await.unwrap();
    assert!(matches!(
        store.save_job(&claimed, first.version).await,
        Err(StoreError::Conflict)
    ));
    let running = store.running_jobs().await.unwrap();
    assert!(running.contains(&(tenant.clone(), first.id)));
    assert!(running.contains(&(other.clone(), others.id)));
    let finished = claimed.page_read(0, vec![], None, now).page_done(0, 0, now);
    assert!(!finished.is_running());
    store.save_job(&finished, claimed.version).await.unwrap();
    let running = store.running_jobs().await.unwrap();
    assert!(
        !running.contains(&(tenant.clone(), first.id)),
        "finished: not running"
    );
    assert!(running.contains(&(tenant.clone(), second.id)));
    let read = store.job(&tenant, &first.id).await.unwrap().unwrap();
    assert_eq!(read, finished);
}

/// A breaker's first write wins only where none was written; each later one only from the
/// version it read; open ones are listed per tenant.
async fn breakers_are_written_conditionally(store: &dyn ContractStore) {
    use crate::domain::{Breaker, Destination};
    let (tenant, other) = (unique_tenant("breakers"), unique_tenant("breakers"));
    let a = Destination::of("https://a.example/x");
    let b = Destination::of("https://b.example/y");
    let now = chrono::Utc::now();
    assert_eq!(store.breaker(&tenant, &a).await.unwrap(), None);
    let mut open = Breaker::default();
    open.open_by_hand(now);
    assert!(store.save_breaker(&tenant, &a, &open, None).await.unwrap());
    assert!(
        !store.save_breaker(&tenant, &a, &open, None).await.unwrap(),
        "written first"
    );
    let read = store.breaker(&tenant, &a).await.unwrap().unwrap();
    assert_eq!(read.breaker, open);
    assert!(store.save_breaker(&tenant, &b, &open, None).await.unwrap());
    let listed = store.open_breakers(&tenant).await.unwrap();
    assert_eq!(
        listed,
        vec![(a.clone(), open.clone()), (b.clone(), open.clone())]
    );
    assert!(store.open_breakers(&other).await.unwrap().is_empty());

    let closed = Breaker::default();
    let stale = Some(read.version + 1);
    assert!(!store
        .save_breaker(&tenant, &a, &closed, stale)
        .await
        .unwrap());
    assert!(store
        .save_breaker(&tenant, &a, &closed, Some(read.version))
        .await
        .unwrap());
    let again = store.breaker(&tenant, &a).await.unwrap().unwrap();
    assert_eq!(
        (again.breaker, again.version > read.version),
        (closed, true)
    );
    assert_eq!(store.open_breakers(&tenant).await.unwrap(), vec![(b, open)]);
}

/// `claim` (which a store may keep in memory) is read back by `get`, refuses a stale
/// version, makes a write from the version before it lose (a cancel racing the
/// delivery), and ends with `finish_attempt`.
async fn a_claim_is_seen_and_wins_against_stale_writes(store: &dyn ContractStore) {
    let tenant = unique_tenant("claim-seen");
    let now = millis(Utc::now());
    let task = sample_task(&tenant, None, now);
    store.create(&task).await.unwrap();
    let claimed = task
        .claim(Attempt::Delivery(1), now, Duration::from_secs(40))
        .unwrap();
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
    let next = task
        .claim(Attempt::Delivery(1), now, Duration::ZERO)
        .unwrap();
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
            let mut claim = task
                .claim(Attempt::Delivery(1), now, Duration::from_secs(30))
                .unwrap();
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
        let claimed = task
            .claim(Attempt::Delivery(n), now, Duration::from_secs(40))
            .unwrap();
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

/// Named definitions: stored (a policy with its flow), replaced, listed by name, removed,
/// per tenant, and per kind (a template may share a policy's name).
async fn policies_are_kept_per_tenant(store: &dyn ContractStore) {
    use crate::domain::{DefinitionName, FlowSpec, Policy, Template};
    use crate::ports::Definitions;
    let (tenant, other) = (unique_tenant("policies"), unique_tenant("policies"));
    let name = |n: &str| DefinitionName::parse(n).unwrap();
    let payments = name("payments");
    let with_attempts = |n: u32| Policy {
        retry: RetryPolicy::default().with_max_attempts(n).unwrap(),
        flow: (n > 3).then(|| FlowSpec::new("partner", Some(50), None, Some(3)).unwrap()),
    };
    let policies: &dyn Definitions<Policy> = store;
    let templates: &dyn Definitions<Template> = store;
    assert_eq!(policies.definition(&tenant, &payments).await.unwrap(), None);
    for (n, attempts) in [("payments", 3), ("default", 2), ("payments", 5)] {
        let policy = with_attempts(attempts);
        policies
            .put_definition(&tenant, &name(n), &policy)
            .await
            .unwrap();
    }
    assert_eq!(
        policies.definition(&tenant, &payments).await.unwrap(),
        Some(with_attempts(5)),
        "replaced"
    );
    assert_eq!(policies.definition(&other, &payments).await.unwrap(), None);
    let template = Template(serde_json::from_str(r#"{"expect_body":"success"}"#).unwrap());
    templates
        .put_definition(&tenant, &payments, &template)
        .await
        .unwrap();
    assert_eq!(
        policies.definitions(&tenant).await.unwrap(),
        vec![
            (name("default"), with_attempts(2)),
            (payments.clone(), with_attempts(5))
        ]
    );
    assert_eq!(
        templates.definitions(&tenant).await.unwrap(),
        vec![(payments.clone(), template.clone())]
    );
    assert!(policies
        .delete_definition(&tenant, &payments)
        .await
        .unwrap());
    assert!(!policies
        .delete_definition(&tenant, &payments)
        .await
        .unwrap());
    assert_eq!(policies.definition(&tenant, &payments).await.unwrap(), None);
    assert_eq!(
        templates.definition(&tenant, &payments).await.unwrap(),
        Some(template),
        "a template of the same name stays"
    );
    assert!(policies.definitions(&other).await.unwrap().is_empty());
}

/// A task read while its attempts end is one snapshot: never the result of an attempt
/// beside the task still `delivering` it. A reader polls the task whose attempt is under
/// way while each of `count` tasks is claimed and its outcome written (run it on a
/// multi-threaded runtime, so that the reader runs beside the writes).
pub async fn reads_are_snapshots(store: Arc<dyn crate::ports::TaskStore>, count: usize) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use crate::domain::{Status, Verdict};

    let tenant = unique_tenant("snapshots");
    let now = millis(Utc::now());
    let tasks: Vec<_> = (0..count)
        .map(|_| sample_task(&tenant, None, now))
        .collect();
    for task in &tasks {
        store.create(task).await.unwrap();
    }
    // The index of the task whose attempt is under way, and whether they are all done.
    let current = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let reader = tokio::spawn({
        let (store, tenant) = (store.clone(), tenant.clone());
        let (current, done) = (current.clone(), done.clone());
        let ids: Vec<_> = tasks.iter().map(|t| t.id).collect();
        async move {
            let mut delivering = 0;
            while !done.load(Ordering::Relaxed) {
                let id = &ids[current.load(Ordering::Relaxed)];
                let (task, attempts) = store.details(&tenant, id).await.unwrap().unwrap();
                if task.status == Status::Delivering {
                    assert!(
                        attempts.is_empty(),
                        "read delivering beside {} attempt(s) recorded",
                        attempts.len()
                    );
                    delivering += 1;
                }
            }
            delivering
        }
    });
    for (i, task) in tasks.iter().enumerate() {
        current.store(i, Ordering::Relaxed);
        let claimed = task
            .claim(Attempt::Delivery(1), now, Duration::from_secs(30))
            .unwrap();
        store.claim(&claimed, task.version).await.unwrap();
        let next = claimed.after_attempt(&Verdict::Success, now, 0.5).unwrap();
        let record = claimed.attempt_record(&next, now, now, Some(200), None);
        store
            .finish_attempt(&record, &next, claimed.version)
            .await
            .unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let delivering = reader
        .await
        .expect("the reader never saw a state that never was");
    // The reader looked while attempts were under way (it saw some claimed).
    assert!(delivering > 0);
}
