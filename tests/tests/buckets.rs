//! Far-future attempts through buckets, on moto: a minute's schedule fires two minutes
//! early and its fire arms each pending task of the minute through the timer queue; a
//! large minute is handed on partition by partition; a failed fire comes back through the
//! sweeper; a minute whose fire never came is found and fired by the sweeper's check; and
//! a per-task schedule from before buckets still delivers its attempt.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_scheduler::types::{
    ActionAfterCompletion, FlexibleTimeWindow, FlexibleTimeWindowMode, Target,
};
use boomerang_aws::bucket_schedules::{at_expression, bucket_schedule_name};
use boomerang_aws::buckets::BucketFire;
use boomerang_aws::messages::{BucketWork, TimerMessage};
use boomerang_aws::triggers::TriggerEmulator;
use boomerang_aws::AwsBackend;
use boomerang_core::clock::{Clock, ManualClock};
use boomerang_core::domain::{Status, Task, TenantId};
use boomerang_core::engine::{FireTime, NewTask};
use boomerang_e2e::aws::{fresh_moto_resources, moto, moto_backend, take_timer_messages};
use boomerang_e2e::{wait_for, Receiver};
use chrono::{DateTime, DurationRound, Utc};

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

async fn register(backend: &AwsBackend, url: &str, at: DateTime<Utc>) -> Task {
    let mut spec = boomerang_core::testing::sample_task(&acme(), None, Utc::now()).spec;
    spec.request.url = url.to_string();
    backend
        .engine
        .register(
            &acme(),
            NewTask {
                spec,
                retry_from: Default::default(),
                when: FireTime::At(at),
                idempotency_key: None,
                request_hash: "h".into(),
            },
        )
        .await
        .unwrap()
        .task
}

/// The backend on fresh resources, with a clock ten seconds past a minute, and a key
/// (so a signing secret) for the tenant.
async fn start(what: &str) -> (AwsBackend, Arc<ManualClock>, DateTime<Utc>) {
    let settings = fresh_moto_resources(what).await;
    let now = Utc::now()
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap()
        + chrono::Duration::seconds(10);
    let clock = Arc::new(ManualClock::new(now));
    let backend = moto_backend(&settings, clock.clone());
    backend.tenants.mint_key(&acme()).await.unwrap();
    (backend, clock, now)
}

/// Every timer message now on the queue (waiting up to `within` for delayed ones), deleted.
async fn take_messages(backend: &AwsBackend, want: usize, within: Duration) -> Vec<TimerMessage> {
    let queue = &backend.settings.timer_queue_url;
    take_timer_messages(&backend.sqs, queue, want, within).await
}

#[tokio::test]
async fn a_bucket_fire_arms_each_attempt_of_its_minute_with_the_rest_of_its_wait() {
    let (backend, clock, now) = start("bucket").await;
    let rx = Receiver::always(200).await;
    let due = now + chrono::Duration::minutes(20);
    let a = register(&backend, &rx.url("/a"), due).await;
    let b = register(&backend, &rx.url("/b"), due + chrono::Duration::seconds(30)).await;
    let canceled = register(&backend, &rx.url("/canceled"), due).await;
    backend.engine.cancel(&acme(), &canceled.id).await.unwrap();
    let later = register(
        &backend,
        &rx.url("/later"),
        due + chrono::Duration::minutes(5),
    )
    .await;
    for task in [&a, &b, &later] {
        assert!(task.timer_armed, "the bucket holds it");
    }
    let emulator = TriggerEmulator::for_backend(&backend);
    assert_eq!(emulator.fire_due_schedules().await.unwrap(), 0, "not yet");

    // Scheduler fires late in its window, three seconds before the first task is due.
    clock.set(due - chrono::Duration::seconds(3));
    assert_eq!(
        emulator.fire_due_schedules().await.unwrap(),
        1,
        "the minute's one schedule"
    );
    let fired = Instant::now();
    // Its fire goes to the timer queue, whose reader hands it to the delivery handler.
    assert_eq!(emulator.drain_queue_once().await.unwrap(), 1, "the fire");
    let mut first = take_messages(&backend, 2, Duration::from_secs(20)).await;
    assert!(
        fired.elapsed() >= Duration::from_millis(2500),
        "each attempt waits out the rest of its delay on the queue"
    );
    first.sort_by_key(|m| format!("{m:?}"));
    let mut expected = vec![
        TimerMessage::Attempt(a.attempt_ref(1)),
        TimerMessage::Attempt(canceled.attempt_ref(1)),
    ];
    expected.sort_by_key(|m| format!("{m:?}"));
    // The canceled task's entry is still in the minute (the fire reads no task); its
    // attempt finds it canceled.
    assert_eq!(first, expected);
    // The second is due 30 s later: its message is still delayed. Deliver them all.
    clock.set(due + chrono::Duration::seconds(31));
    backend.engine.deliver(a.attempt_ref(1)).await.unwrap();
    backend
        .engine
        .deliver(canceled.attempt_ref(1))
        .await
        .unwrap();
    let rest = take_messages(&backend, 1, Duration::from_secs(40)).await;
    assert_eq!(rest, vec![TimerMessage::Attempt(b.attempt_ref(1))]);
    backend.engine.deliver(b.attempt_ref(1)).await.unwrap();
    for (path, calls) in [("/a", 1), ("/b", 1), ("/canceled", 0), ("/later", 0)] {
        assert_eq!(rx.count(path), calls, "{path}");
    }
    assert_eq!(
        emulator.fire_due_schedules().await.unwrap(),
        0,
        "the schedule was deleted; the next minute's is not due"
    );
}

#[tokio::test]
async fn a_large_minute_is_handed_on_by_partition_and_every_task_armed_once() {
    let (backend, clock, now) = start("large").await;
    let minute = (now + chrono::Duration::minutes(30))
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap();
    let due = minute;
    let mut expected = BTreeMap::new();
    for i in 0..60 {
        let at = due + chrono::Duration::milliseconds(i * 900);
        let task = register(&backend, &format!("http://127.0.0.1:9/t{i}"), at).await;
        expected.insert(task.attempt_ref(1), 0);
    }
    let small = BucketFire {
        max_per_fire: 7,
        ..BucketFire::new(backend.store.clone(), backend.timer.clone())
    };
    clock.set(due + chrono::Duration::minutes(1)); // every attempt due: no delays
    let first = small.run(BucketWork::whole(minute)).await.unwrap();
    assert_eq!(first.read, 7, "one invocation reads its share");
    assert!(first.handed_on >= 1);

    let mut fires = 1;
    let mut pending_work = first.handed_on;
    let deadline = Instant::now() + Duration::from_secs(60);
    while expected.values().any(|&n| n == 0) || pending_work > 0 {
        assert!(
            Instant::now() < deadline,
            "the minute was never read to its end"
        );
        for message in take_messages(&backend, 1, Duration::from_secs(2)).await {
            match message {
                TimerMessage::Attempt(attempt) => {
                    *expected.get_mut(&attempt).expect("a task of the minute") += 1;
                }
                TimerMessage::Bucket { bucket } => {
                    pending_work -= 1;
                    assert_eq!(bucket.end - bucket.first, 1, "one partition per message");
                    let report = small.run(bucket).await.unwrap();
                    assert!(report.read <= 7);
                    pending_work += report.handed_on;
                    fires += 1;
                }
                other => panic!("only the minute's work and attempts: {other:?}"),
            }
        }
    }
    assert!(
        expected.values().all(|&n| n == 1),
        "each armed once: {expected:?}"
    );
    assert!(fires >= 60 / 7, "{fires} invocations");
}

/// A minute whose fire never came (its schedule lost) is found by the sweeper's check
/// once the fire is a minute overdue, and fired then, as bucket work on the timer queue; a
/// minute that fired is not fired again, and each minute is checked once.
#[tokio::test]
async fn a_minute_whose_fire_never_came_is_fired_by_the_sweepers_check() {
    let (backend, clock, now) = start("lostfire").await;
    let minute_of = |t: DateTime<Utc>| t.duration_trunc(chrono::Duration::minutes(1)).unwrap();
    let due = now + chrono::Duration::minutes(20);
    let lost = register(&backend, "http://127.0.0.1:9/lost", due).await;
    let later = due + chrono::Duration::minutes(1);
    register(&backend, "http://127.0.0.1:9/fired", later).await;
    // The first check on a table starts with the last overdue minute: none has entries.
    assert_eq!(backend.buckets.check_fires(clock.now()).await.unwrap(), 0);

    // The later minute fires (late in its window, so its attempt waits no more); the
    // earlier one's fire never comes.
    clock.set(later);
    let report = backend
        .buckets
        .run(BucketWork::whole(minute_of(later)))
        .await;
    assert_eq!(report.unwrap().armed, 1);
    assert_eq!(
        take_messages(&backend, 1, Duration::from_secs(10))
            .await
            .len(),
        1
    );

    clock.set(later + chrono::Duration::minutes(1) + chrono::Duration::seconds(5));
    assert_eq!(
        backend.buckets.check_fires(clock.now()).await.unwrap(),
        1,
        "only the minute that never fired"
    );
    let refire = TimerMessage::Bucket {
        bucket: BucketWork::whole(minute_of(due)),
    };
    assert_eq!(
        take_messages(&backend, 1, Duration::from_secs(10)).await,
        vec![refire]
    );
    // What the delivery function does with that message: the lost task is armed.
    let report = backend.buckets.run(BucketWork::whole(minute_of(due))).await;
    assert_eq!(report.unwrap().armed, 1);
    assert_eq!(
        take_messages(&backend, 1, Duration::from_secs(10)).await,
        vec![TimerMessage::Attempt(lost.attempt_ref(1))]
    );
    assert_eq!(
        backend.buckets.check_fires(clock.now()).await.unwrap(),
        0,
        "each minute is checked once"
    );
}

#[tokio::test]
async fn a_failed_bucket_fire_is_handed_back_by_the_sweeper() {
    let (backend, _, now) = start("refire").await;
    let minute = (now + chrono::Duration::hours(2))
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap();
    let work = TimerMessage::Bucket {
        bucket: BucketWork::whole(minute),
    };
    // What Scheduler puts in its dead-letter queue after its retries: the input inside.
    let dead = serde_json::json!({"detail": {"input": serde_json::to_string(&work).unwrap()}});
    let failures = backend.system_failures().expect("bootstrap makes one");
    backend
        .sqs
        .send_message()
        .queue_url(&failures.queue_url)
        .message_body(dead.to_string())
        .send()
        .await
        .unwrap();
    let report = boomerang_aws::lambda::sweep(
        &backend.engine,
        Some(&failures),
        -chrono::Duration::seconds(30),
    )
    .await
    .unwrap();
    assert_eq!(report.timers_redriven, 1);
    assert_eq!(
        take_messages(&backend, 1, Duration::from_secs(10)).await,
        vec![work]
    );
}

/// Schedules made per task before buckets keep working until they fire: the fire (two
/// minutes early) reaches `deliver`, which arms the rest of the wait through the queue.
#[tokio::test]
async fn a_per_task_schedule_from_before_buckets_still_delivers_its_attempt() {
    let (backend, clock, now) = start("legacy").await;
    let settings = backend.settings.clone();
    let rx = Receiver::always(200).await;
    let due = now + chrono::Duration::minutes(20);
    let task = register(&backend, &rx.url("/legacy"), due).await;
    // As the earlier release left it: no bucket schedule, one schedule for the attempt.
    let scheduler = aws_sdk_scheduler::Client::new(&moto());
    let minute = due.duration_trunc(chrono::Duration::minutes(1)).unwrap();
    scheduler
        .delete_schedule()
        .name(bucket_schedule_name(minute))
        .group_name(&settings.schedule_group)
        .send()
        .await
        .unwrap();
    scheduler
        .create_schedule()
        .name(format!("{}-1", task.id))
        .group_name(&settings.schedule_group)
        .schedule_expression(at_expression(minute - chrono::Duration::minutes(2)))
        .flexible_time_window(
            FlexibleTimeWindow::builder()
                .mode(FlexibleTimeWindowMode::Off)
                .build()
                .unwrap(),
        )
        .action_after_completion(ActionAfterCompletion::Delete)
        .target(
            Target::builder()
                // Such schedules invoked the delivery function.
                .arn("arn:aws:lambda:us-east-1:000000000000:function:delivery")
                .role_arn(&settings.scheduler_role_arn)
                .input(serde_json::to_string(&task.attempt_ref(1)).unwrap())
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    clock.set(due - chrono::Duration::seconds(2));
    let emulator = TriggerEmulator::for_backend(&backend);
    assert_eq!(emulator.fire_due_schedules().await.unwrap(), 1);
    assert_eq!(
        take_messages(&backend, 1, Duration::from_secs(20)).await,
        vec![TimerMessage::Attempt(task.attempt_ref(1))],
        "the rest of the wait, on the queue"
    );
    clock.set(due);
    backend.engine.deliver(task.attempt_ref(1)).await.unwrap();
    wait_for("the call", Duration::from_secs(10), || async {
        (rx.count("/legacy") == 1).then_some(())
    })
    .await;
    let stored = backend.engine.get(&acme(), &task.id).await.unwrap().task;
    assert_eq!(stored.status, Status::Succeeded);
}

/// Bucket work no fire wrote (a cursor that is not one, partitions out of range) is not
/// retried for ever: it is dropped, or reads nothing.
#[tokio::test]
async fn bucket_work_that_makes_no_sense_is_acknowledged() {
    let (backend, _, now) = start("odd").await;
    let delivery = backend.delivery();
    let minute = serde_json::to_value(now).unwrap();
    for odd in [
        serde_json::json!({"bucket": {"minute": minute, "first": 0, "end": 1, "after": "not a cursor"}}),
        serde_json::json!({"bucket": {"minute": minute, "first": 7, "end": 4294967295u32}}),
        serde_json::json!({"bucket": {"minute": minute, "first": 5, "end": 2}}),
        serde_json::json!({"bucket": {"minute": "+262142-12-31T23:59:00Z", "first": 0, "end": 8}}),
    ] {
        delivery
            .handle(serde_json::from_value(odd.clone()).unwrap(), None)
            .await
            .unwrap_or_else(|e| panic!("{odd}: {e}"));
    }
    assert!(take_messages(&backend, 1, Duration::from_secs(2))
        .await
        .is_empty());
}

/// A schedule made when there were fewer bucket partitions (its input names eight) still
/// fires the whole minute: entries written since may be in the partitions added.
#[tokio::test]
async fn a_schedule_from_fewer_partitions_reads_every_partition_of_its_minute() {
    use boomerang_aws::keys::bucket_shard;
    let (backend, clock, now) = start("grown").await;
    let due = now + chrono::Duration::minutes(20);
    let mut tasks = Vec::new();
    while !tasks.iter().any(|t: &Task| bucket_shard(&t.id) >= 8) {
        tasks.push(register(&backend, "https://example.com/hook", due).await);
    }
    let minute = due.duration_trunc(chrono::Duration::minutes(1)).unwrap();
    let old_input: BucketWork = serde_json::from_value(serde_json::json!({
        "minute": minute, "first": 0, "end": 8
    }))
    .unwrap();
    clock.set(due - chrono::Duration::seconds(3));
    let report = backend.buckets.run(old_input).await.unwrap();
    assert_eq!(
        report.armed,
        tasks.len(),
        "every entry of the minute, in all 16 partitions"
    );
    assert_eq!(
        take_messages(&backend, tasks.len(), Duration::from_secs(10))
            .await
            .len(),
        tasks.len()
    );
}
