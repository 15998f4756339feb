//! Per-tenant limits: requests a second, and unfinished tasks.

use boomerang_core::domain::Task;
use boomerang_core::engine::Registration;
use boomerang_core::testing::harness::*;
use boomerang_core::testing::schedules::Scene;

fn limits(requests_per_second: u32, max_pending: u64) -> TenantLimits {
    TenantLimits {
        requests_per_second,
        max_pending,
    }
}

#[tokio::test]
async fn a_tenant_over_its_rate_is_told_when_to_come_back_and_others_are_not() {
    let h = harness_tenant_limits(limits(2, 100));
    // Two seconds' worth may be saved up: four at once.
    for _ in 0..4 {
        h.engine.admit_request(&h.tenant).unwrap();
    }
    let refused = h.engine.admit_request(&h.tenant).unwrap_err();
    let EngineError::Limited { retry_after, .. } = refused else {
        panic!("{refused:?}");
    };
    assert_eq!(retry_after, Duration::from_secs(1));
    let other = TenantId::parse("globex").unwrap();
    h.engine.admit_request(&other).unwrap();
    // A second later, two more.
    h.clock.advance(Duration::from_secs(1));
    h.engine.admit_request(&h.tenant).unwrap();
    h.engine.admit_request(&h.tenant).unwrap();
    assert!(h.engine.admit_request(&h.tenant).is_err());
}

/// A tenant limited to two unfinished tasks, with two due in an hour; the first of them.
async fn at_a_limit_of_two() -> (Harness, Task) {
    let h = harness_tenant_limits(limits(1000, 2));
    let later = FireTime::After(Duration::from_secs(3600));
    let first = h.register(later, RetryPolicy::default()).await;
    h.register(later, RetryPolicy::default()).await;
    (h, first)
}

#[tokio::test]
async fn a_tenant_at_its_limit_of_unfinished_tasks_registers_again_once_one_ends() {
    let (h, first) = at_a_limit_of_two().await;
    let later = FireTime::After(Duration::from_secs(3600));
    let refused = h
        .engine
        .register(&h.tenant, new_task(later, RetryPolicy::default()))
        .await;
    assert!(
        matches!(refused, Err(EngineError::Limited { .. })),
        "{refused:?}"
    );
    // Another tenant is not held to this one's count.
    let other = TenantId::parse("globex").unwrap();
    let theirs = h
        .engine
        .register(&other, new_task(later, RetryPolicy::default()))
        .await;
    assert!(theirs.is_ok(), "{theirs:?}");

    h.engine.cancel(&h.tenant, &first.id).await.unwrap();
    // The count is taken again from the store within five seconds.
    h.clock.advance(Duration::from_secs(5));
    let again = h
        .engine
        .register(&h.tenant, new_task(later, RetryPolicy::default()))
        .await;
    assert!(again.is_ok(), "{again:?}");
}

/// The tenant's schedule occurrences in `status`.
async fn occurrences(scene: &Scene<'_>, status: Status) -> Vec<Task> {
    let tasks = scene.tasks().await.into_iter();
    tasks
        .filter(|t| t.spec.occurrence.is_some() && t.status == status)
        .collect()
}

/// Occurrences are owed by a schedule the tenant has, so they are registered whatever its
/// count; one that comes due while the tenant is over its limit is skipped instead of
/// called, and the schedule goes on.
#[tokio::test]
async fn an_occurrence_due_past_the_tenants_limit_is_skipped_and_the_schedule_goes_on() {
    let (h, first) = at_a_limit_of_two().await;
    let scene = h.scene();
    h.engine
        .create_schedule(&h.tenant, scene.cron("0 * * * * *", "UTC"))
        .await
        .expect("a schedule is not refused for the count");

    h.clock.advance(Duration::from_secs(60));
    assert_eq!(scene.fire_due().await, vec![DeliverOutcome::Skipped]);
    assert_eq!(h.webhooks.calls(), 0);
    let skipped = occurrences(&scene, Status::Canceled).await;
    assert_eq!(skipped.len(), 1);
    assert!(
        (skipped[0].last_error.as_deref()).is_some_and(|e| e.contains("unfinished tasks")),
        "{:?}",
        skipped[0].last_error
    );
    assert_eq!(
        occurrences(&scene, Status::Scheduled).await.len(),
        1,
        "the next"
    );

    // Once the tenant is under its limit again, the next occurrence calls.
    h.engine.cancel(&h.tenant, &first.id).await.unwrap();
    h.clock.advance(Duration::from_secs(60));
    assert_eq!(
        scene.fire_due().await,
        vec![DeliverOutcome::Attempted(Status::Succeeded)]
    );
    assert_eq!(h.webhooks.calls(), 1);
}

/// `n` registrations of tasks due in an hour, made at once; their outcomes.
async fn register_at_once(h: &Harness, n: usize) -> Vec<Result<Registration, EngineError>> {
    let later = FireTime::After(Duration::from_secs(3600));
    futures_util::future::join_all(
        (0..n).map(|_| (h.engine).register(&h.tenant, new_task(later, RetryPolicy::default()))),
    )
    .await
}

/// Returns once a count is under way and the other registrations made at once with it
/// have had every chance to go on without it.
async fn while_a_count_is_under_way(h: &Harness) {
    while h.store.counts_made() == 0 {
        tokio::task::yield_now().await;
    }
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
}

/// Registrations that together find the tenant's count missing or stale make one count
/// in the store, not one each: with no count they wait for it, with an older one they go
/// on with that.
#[tokio::test]
async fn one_count_at_a_time_however_many_registrations_find_it_stale() {
    let h = harness_tenant_limits(limits(1000, 1000));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    h.store.gate_counts(Some(gate.clone()));
    let register_ten = || register_at_once(&h, 10);
    // No count yet: all ten wait for the one that counts.
    let deadline = Duration::from_secs(10);
    let counted_once = async {
        while_a_count_is_under_way(&h).await;
        assert_eq!(h.store.task_count(), 0, "registered with no count");
        gate.add_permits(1);
    };
    let (first, ()) = tokio::time::timeout(deadline, async {
        tokio::join!(register_ten(), counted_once)
    })
    .await
    .expect("registrations waiting on a count of their own");
    assert!(first.iter().all(Result::is_ok), "{first:?}");
    assert_eq!(h.store.counts_made(), 1);

    // Stale: one counts, and the other nine go on with the older count meanwhile.
    h.clock.advance(Duration::from_secs(5));
    let nine_went_on = async {
        while h.store.task_count() < 19 {
            tokio::task::yield_now().await;
        }
        gate.add_permits(1);
    };
    let (second, ()) = tokio::time::timeout(deadline, async {
        tokio::join!(register_ten(), nine_went_on)
    })
    .await
    .expect("registrations waiting on the count instead of the older one");
    assert!(second.iter().all(Result::is_ok), "{second:?}");
    assert_eq!(h.store.counts_made(), 2);
}

/// A count that fails fails the registrations that waited for it, rather than each
/// counting again in turn; the next registration counts afresh.
#[tokio::test]
async fn a_failed_count_fails_those_that_waited_for_it() {
    let h = harness_tenant_limits(limits(1000, 1000));
    let later = FireTime::After(Duration::from_secs(3600));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    h.store.gate_counts(Some(gate.clone()));
    let registrations = register_at_once(&h, 5);
    let fail_the_count = async {
        while_a_count_is_under_way(&h).await;
        gate.close();
    };
    let (refused, ()) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(registrations, fail_the_count)
    })
    .await
    .expect("the registrations answered");
    assert!(refused.iter().all(Result::is_err), "{refused:?}");
    assert_eq!((h.store.counts_made(), h.store.task_count()), (1, 0));

    h.store.gate_counts(None);
    h.register(later, RetryPolicy::default()).await;
    assert_eq!(h.store.counts_made(), 2);
}

/// Registrations admitted while a count is under way (on the older count) are still
/// counted once it lands: the count may have been read before they were written.
#[tokio::test]
async fn registrations_admitted_during_a_count_stay_counted_after_it() {
    let h = harness_tenant_limits(limits(1000, 3));
    let later = FireTime::After(Duration::from_secs(3600));
    h.register(later, RetryPolicy::default()).await;
    h.register(later, RetryPolicy::default()).await;
    h.clock.advance(Duration::from_secs(5));
    // The next registration counts (two tasks) and answers slowly; meanwhile a third is
    // admitted on the older count, and written.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    h.store.gate_counts(Some(gate.clone()));
    let counting = h
        .engine
        .register(&h.tenant, new_task(later, RetryPolicy::default()));
    let meanwhile = async {
        while h.store.counts_made() < 2 {
            tokio::task::yield_now().await;
        }
        let third = h
            .engine
            .register(&h.tenant, new_task(later, RetryPolicy::default()))
            .await;
        gate.add_permits(1);
        third
    };
    let (fourth, third) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(counting, meanwhile)
    })
    .await
    .expect("the registrations answered");
    assert!(third.is_ok(), "{third:?}");
    // Two counted, the third added since: a fourth is over the limit of three.
    assert!(
        matches!(fourth, Err(EngineError::Limited { .. })),
        "{fourth:?}"
    );
    assert_eq!(h.store.task_count(), 3);
}
