//! The store's smaller ports (definitions, schedules, breakers, bulk jobs, flow pauses,
//! dead letters) and the tenant directory, on a real PostgreSQL database, with two
//! servers where a race between them is the point.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use deadpool_postgres::Pool;

use boomerang_core::domain::{
    Breaker, BreakerSettings, BulkAction, BulkJob, BulkPlan, CatchUp, DeadLetter, DefinitionName,
    Destination, FlowKey, Policy, Recurrence, RetryPolicy, Schedule, SecretSet, SigningSecret,
    TaskFilter, TaskId, Template, TenantId,
};
use boomerang_core::metrics::NoMetrics;
use boomerang_core::ports::{
    Breakers, BulkJobs, DeadLetters, Definitions, FlowPauses, ReplaceSecretsError, ScheduleStore,
    SigningKeys, StoreError, Tenants,
};
use boomerang_core::testing::{plain_spec, unique_tenant};
use boomerang_postgres::tenants::PgTenants;
use boomerang_postgres::{connect, migrate, PgSettings, PgStore};

/// A migrated fresh database's pool.
async fn database() -> Pool {
    let url = boomerang_postgres::testing::fresh_database().await;
    let pool = connect::pool(&PgSettings::new(url)).unwrap();
    migrate::migrate(&pool).await.unwrap();
    pool
}

/// A server's store on `pool`.
fn server(pool: &Pool, id: &str) -> Arc<PgStore> {
    Arc::new(PgStore::new(
        pool.clone(),
        id.into(),
        Duration::from_secs(5),
        Arc::new(NoMetrics),
    ))
}

fn name(n: &str) -> DefinitionName {
    DefinitionName::parse(n).unwrap()
}

#[tokio::test]
async fn definitions_are_kept_per_tenant_and_per_kind() {
    let store = server(&database().await, "a");
    let (tenant, other) = (unique_tenant("defs"), unique_tenant("defs"));
    let policies: &dyn Definitions<Policy> = &*store;
    let templates: &dyn Definitions<Template> = &*store;
    let breakers: &dyn Definitions<BreakerSettings> = &*store;
    let policy = |n: u32| Policy {
        retry: RetryPolicy::default().with_max_attempts(n).unwrap(),
        flow: None,
    };
    let template = Template(serde_json::from_str(r#"{"expect_body":"ok"}"#).unwrap());
    let settings = BreakerSettings {
        failures: 7,
        ..BreakerSettings::default()
    };

    assert_eq!(
        policies.definition(&tenant, &name("pay")).await.unwrap(),
        None
    );
    for (n, attempts) in [("pay", 3), ("default", 2), ("pay", 5)] {
        policies
            .put_definition(&tenant, &name(n), &policy(attempts))
            .await
            .unwrap();
    }
    templates
        .put_definition(&tenant, &name("pay"), &template)
        .await
        .unwrap();
    breakers
        .put_definition(&tenant, &name("default"), &settings)
        .await
        .unwrap();

    assert_eq!(
        policies.definition(&tenant, &name("pay")).await.unwrap(),
        Some(policy(5)),
        "replaced"
    );
    assert_eq!(
        policies.definitions(&tenant).await.unwrap(),
        vec![(name("default"), policy(2)), (name("pay"), policy(5))],
        "by name"
    );
    assert_eq!(
        templates.definitions(&tenant).await.unwrap(),
        vec![(name("pay"), template.clone())],
        "a template may share a policy's name"
    );
    assert_eq!(
        breakers
            .definition(&tenant, &name("default"))
            .await
            .unwrap(),
        Some(settings)
    );
    assert_eq!(
        policies.definition(&other, &name("pay")).await.unwrap(),
        None
    );
    assert!(policies.definitions(&other).await.unwrap().is_empty());

    assert!(policies
        .delete_definition(&tenant, &name("pay"))
        .await
        .unwrap());
    assert!(!policies
        .delete_definition(&tenant, &name("pay"))
        .await
        .unwrap());
    assert_eq!(
        policies.definition(&tenant, &name("pay")).await.unwrap(),
        None
    );
    assert_eq!(
        templates.definition(&tenant, &name("pay")).await.unwrap(),
        Some(template),
        "the template of that name stays"
    );
}

fn schedule(tenant: &TenantId) -> Schedule {
    let spec = plain_spec("https://example.com/hook", "{}", RetryPolicy::default());
    let every = Recurrence::every(Duration::from_secs(60)).unwrap();
    Schedule::new(
        tenant.clone(),
        every,
        None,
        None,
        CatchUp::One,
        spec,
        Utc::now(),
    )
    .unwrap()
}

#[tokio::test]
async fn schedules_are_updated_conditionally_and_listed_newest_first() {
    let store = server(&database().await, "a");
    let (tenant, other) = (unique_tenant("sched"), unique_tenant("sched"));
    let first = schedule(&tenant);
    store.create_schedule(&first).await.unwrap();
    assert!(matches!(
        store.create_schedule(&first).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store.schedule(&tenant, &first.id).await.unwrap().as_ref(),
        Some(&first)
    );
    assert_eq!(store.schedule(&other, &first.id).await.unwrap(), None);

    let paused = first.pause(Utc::now()).unwrap();
    assert!(paused.version > first.version);
    store.update_schedule(&paused, first.version).await.unwrap();
    assert!(matches!(
        store.update_schedule(&paused, first.version).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store.schedule(&tenant, &first.id).await.unwrap(),
        Some(paused.clone())
    );
    assert!(store.delete_schedule(&tenant, &first.id).await.unwrap());
    assert!(!store.delete_schedule(&tenant, &first.id).await.unwrap());
    assert!(
        matches!(
            store.update_schedule(&paused, paused.version).await,
            Err(StoreError::Conflict)
        ),
        "a deleted schedule is a conflict"
    );

    let mut made = Vec::new();
    for _ in 0..5 {
        let s = schedule(&tenant);
        store.create_schedule(&s).await.unwrap();
        made.push(s.id);
    }
    store.create_schedule(&schedule(&other)).await.unwrap();
    made.sort_by(|a, b| b.cmp(a));
    let (mut listed, mut cursor) = (Vec::new(), None);
    for expected_len in [2, 2, 1] {
        let page = store.schedules(&tenant, cursor, 2).await.unwrap();
        assert_eq!(page.schedules.len(), expected_len);
        listed.extend(page.schedules.iter().map(|s| s.id));
        cursor = page.next_cursor;
    }
    assert_eq!(cursor, None, "the last page says so");
    assert_eq!(listed, made, "newest first, the tenant's only");
}

#[tokio::test]
async fn of_two_servers_opening_a_breaker_at_once_exactly_one_wins() {
    let pool = database().await;
    let (a, b) = (server(&pool, "a"), server(&pool, "b"));
    let (tenant, other) = (unique_tenant("brk"), unique_tenant("brk"));
    let mut open = Breaker::default();
    open.open_by_hand(Utc::now());
    for n in 0..20 {
        let at = Destination::of(&format!("https://d{n}.example/x"));
        let (won_a, won_b) = tokio::join!(
            a.save_breaker(&tenant, &at, &open, None),
            b.save_breaker(&tenant, &at, &open, None)
        );
        assert!(won_a.unwrap() ^ won_b.unwrap(), "one winner at {at}");
    }
    let at = Destination::of("https://d0.example/x");
    let read = a.breaker(&tenant, &at).await.unwrap().unwrap();
    assert_eq!(read.breaker, open);
    let closed = Breaker::default();
    let (won_a, won_b) = tokio::join!(
        a.save_breaker(&tenant, &at, &closed, Some(read.version)),
        b.save_breaker(&tenant, &at, &closed, Some(read.version))
    );
    assert!(
        won_a.unwrap() ^ won_b.unwrap(),
        "one winner from one version"
    );
    let again = b.breaker(&tenant, &at).await.unwrap().unwrap();
    assert!(again.version > read.version);
    assert_eq!(again.breaker, closed);

    let listed = a.open_breakers(&tenant).await.unwrap();
    assert_eq!(listed.len(), 19, "the closed one is not listed");
    assert!(listed.iter().all(|(d, br)| d != &at && br == &open));
    assert!(a.open_breakers(&other).await.unwrap().is_empty());
}

#[tokio::test]
async fn bulk_jobs_are_saved_conditionally_and_running_ones_found() {
    let store = server(&database().await, "a");
    let (tenant, other) = (unique_tenant("bulk"), unique_tenant("bulk"));
    let plan = BulkPlan::new(BulkAction::Retry, TaskFilter::default(), None, true).unwrap();
    let now = Utc::now();
    let first = BulkJob::new(tenant.clone(), plan.clone(), now);
    let second = BulkJob::new(tenant.clone(), plan.clone(), now);
    let others = BulkJob::new(other.clone(), plan, now);
    for job in [&first, &second, &others] {
        store.create_job(job).await.unwrap();
    }
    assert!(matches!(
        store.create_job(&first).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(store.job(&other, &first.id).await.unwrap(), None);
    let mut expected = vec![first.id, second.id];
    expected.sort_by(|a, b| b.cmp(a));
    let listed: Vec<_> = store.jobs(&tenant).await.unwrap();
    assert_eq!(listed.iter().map(|j| j.id).collect::<Vec<_>>(), expected);

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
    assert!(!running.contains(&(tenant.clone(), first.id)));
    assert!(running.contains(&(tenant.clone(), second.id)));
    assert_eq!(store.job(&tenant, &first.id).await.unwrap(), Some(finished));
}

#[tokio::test]
async fn a_pause_is_seen_at_once_by_every_server() {
    let pool = database().await;
    let (a, b) = (server(&pool, "a"), server(&pool, "b"));
    let (tenant, other) = (unique_tenant("pause"), unique_tenant("pause"));
    let key = FlowKey::parse("partner").unwrap();
    assert!(!b.flow_paused(&tenant, &key).await.unwrap());
    a.set_flow_paused(&tenant, &key, true).await.unwrap();
    a.set_flow_paused(&tenant, &key, true).await.unwrap();
    assert!(a.flow_paused(&tenant, &key).await.unwrap());
    assert!(b.flow_paused(&tenant, &key).await.unwrap());
    assert!(!b.flow_paused(&other, &key).await.unwrap());
    assert_eq!(b.paused_flows(&tenant).await.unwrap(), vec![key.clone()]);
    assert!(b.paused_flows(&other).await.unwrap().is_empty());
    b.set_flow_paused(&tenant, &key, false).await.unwrap();
    assert!(!a.flow_paused(&tenant, &key).await.unwrap());
    assert!(a.paused_flows(&tenant).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_dead_letter_sent_twice_is_kept_once() {
    let pool = database().await;
    let store = server(&pool, "a");
    let mut letter = DeadLetter {
        task_id: TaskId::new(),
        tenant: unique_tenant("dlq"),
        url: "https://example.com/hook".into(),
        attempts: 3,
        last_error: Some("HTTP 500".into()),
        failed_at: Utc::now(),
    };
    store.send(&letter).await.unwrap();
    letter.attempts = 4;
    store.send(&letter).await.unwrap();
    let client = pool.get().await.unwrap();
    let rows = client
        .query(
            "SELECT doc FROM dead_letters WHERE task_id = $1",
            &[&letter.task_id.to_string()],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let kept: DeadLetter = serde_json::from_str(rows[0].get(0)).unwrap();
    assert_eq!(kept.attempts, 4, "the later send's record");
}

fn default_tenant() -> TenantId {
    TenantId::parse(boomerang_postgres::tenants::TENANT).unwrap()
}

#[tokio::test]
async fn the_api_key_is_checked_and_the_first_secret_kept() {
    let pool = database().await;
    let given = SigningSecret::generate();
    let (tenants, secrets) = PgTenants::open(pool.clone(), "key-1", Some(given.clone()))
        .await
        .unwrap();
    assert_eq!(secrets, SecretSet::single(given, None));
    assert_eq!(
        tenants.authenticate("key-1").await.unwrap(),
        Some(default_tenant())
    );
    assert_eq!(tenants.authenticate("key-2").await.unwrap(), None);
    assert_eq!(tenants.authenticate("").await.unwrap(), None);
    assert_eq!(tenants.alert_target(&default_tenant()).await.unwrap(), None);
    assert_eq!(
        tenants.destination_limit(&default_tenant()).await.unwrap(),
        None
    );
    let stranger = TenantId::parse("stranger").unwrap();
    assert_eq!(tenants.signing_secrets(&stranger).await.unwrap(), None);

    // A second server given another secret signs with the database's.
    let (later, later_secrets) =
        PgTenants::open(pool.clone(), "key-1", Some(SigningSecret::generate()))
            .await
            .unwrap();
    assert_eq!(later_secrets, secrets);
    let read = later.signing_secrets(&default_tenant()).await.unwrap();
    assert_eq!(read, Some(secrets.clone()));
    let (_, none_given) = PgTenants::open(pool, "key-1", None).await.unwrap();
    assert_eq!(none_given, secrets);
}

#[tokio::test]
async fn a_rotation_is_conditional_and_seen_by_every_server_within_a_second() {
    let pool = database().await;
    let (here, secrets) = PgTenants::open(pool.clone(), "k", None).await.unwrap();
    let (there, _) = PgTenants::open(pool.clone(), "k", None).await.unwrap();
    let tenant = default_tenant();
    let now = Utc::now();
    let grace = Duration::from_secs(3600);
    let rotated = secrets
        .rotate(SigningSecret::generate(), grace, now)
        .unwrap();

    here.replace_signing_secrets(&tenant, &secrets, &rotated)
        .await
        .unwrap();
    assert_eq!(
        here.signing_secrets(&tenant).await.unwrap(),
        Some(rotated.clone()),
        "seen at once where it was made"
    );
    // `there` may still answer its copy of the old set, but not past a second.
    let stale = secrets
        .rotate(SigningSecret::generate(), grace, now)
        .unwrap();
    assert!(matches!(
        there
            .replace_signing_secrets(&tenant, &secrets, &stale)
            .await,
        Err(ReplaceSecretsError::Changed)
    ));
    assert_eq!(
        there.signing_secrets(&tenant).await.unwrap(),
        Some(rotated.clone()),
        "a lost change reads the table's again"
    );
    let (_, fresh) = PgTenants::open(pool.clone(), "k", None).await.unwrap();
    assert_eq!(fresh, rotated);

    // A rotation made elsewhere while this server holds a copy.
    let (other, _) = PgTenants::open(pool, "k", None).await.unwrap();
    let again = rotated
        .rotate(SigningSecret::generate(), grace, now)
        .unwrap();
    here.replace_signing_secrets(&tenant, &rotated, &again)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(other.signing_secrets(&tenant).await.unwrap(), Some(again));
}

#[tokio::test]
async fn of_two_rotations_at_once_exactly_one_wins() {
    let pool = database().await;
    let (a, secrets) = PgTenants::open(pool.clone(), "k", None).await.unwrap();
    let (b, _) = PgTenants::open(pool, "k", None).await.unwrap();
    let tenant = default_tenant();
    for _ in 0..5 {
        let old = a.signing_secrets(&tenant).await.unwrap().unwrap();
        let old_b = b.signing_secrets(&tenant).await.unwrap().unwrap();
        assert_eq!(old, old_b, "both read the same set");
        let now = Utc::now();
        let grace = Duration::from_secs(60);
        let for_a = old.rotate(SigningSecret::generate(), grace, now).unwrap();
        let for_b = old.rotate(SigningSecret::generate(), grace, now).unwrap();
        let (by_a, by_b) = tokio::join!(
            a.replace_signing_secrets(&tenant, &old, &for_a),
            b.replace_signing_secrets(&tenant, &old, &for_b)
        );
        let winner = match (by_a, by_b) {
            (Ok(()), Err(ReplaceSecretsError::Changed)) => for_a,
            (Err(ReplaceSecretsError::Changed), Ok(())) => for_b,
            other => panic!("not one winner: {other:?}"),
        };
        assert_eq!(a.signing_secrets(&tenant).await.unwrap(), Some(winner));
        // Keep the set small: retire what the rotation kept in force.
        let read = b.signing_secrets(&tenant).await.unwrap().unwrap();
        let ids: Vec<_> = read.in_force(now).skip(1).map(|e| e.id()).collect();
        let mut set = read.clone();
        for id in ids {
            set = set.retire(&id, now).unwrap();
        }
        b.replace_signing_secrets(&tenant, &read, &set)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    assert_ne!(a.signing_secrets(&tenant).await.unwrap(), Some(secrets));
}
