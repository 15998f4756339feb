//! Custody on the AWS path under the faults production sees, with real emulators (behind
//! the fault proxy) and real receivers: brownouts (seconds per call) of SQS and of
//! DynamoDB while callbacks are registered and delivered; a minute's bucket fire that
//! begins and fails while SQS is down, fired again by the sweeper's check; an unreadable
//! item in the sweep's range and in a bucket, set aside while the rest is repaired; and
//! work due 13–14 minutes ahead, which the timer queue holds and the check must not fire
//! as "never fired". Each prints what was lost (none may be), the duplicate calls, and how
//! long after the last fault everything was delivered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use aws_sdk_dynamodb::types::AttributeValue;
use boomerang_aws::backend::aws;
use boomerang_aws::buckets::{BucketFire, PARTITIONS_OVERDUE_AFTER};
use boomerang_aws::lambda::{check_bucket_fires, DeliveryEvent};
use boomerang_aws::messages::{BucketWork, TimerMessage};
use boomerang_aws::settings::SWEEP_LAG;
use boomerang_aws::triggers::TriggerEmulator;
use boomerang_aws::{emulator_config, AwsBackend, AwsSettings};
use boomerang_client::Client;
use boomerang_core::clock::{Clock, ManualClock};
use boomerang_core::domain::{Attempt, Task, TenantId};
use boomerang_core::engine::{FireTime, NewTask};
use boomerang_core::metrics::MetricEvent;
use boomerang_core::testing::harness::RecordedMetrics;
use boomerang_e2e::aws::{
    dev_config, dynalite_endpoint, fresh_moto_resources, moto_endpoint, take_timer_messages,
};
use boomerang_e2e::fault_proxy::{Fault, FaultProxy, Rule, Service};
use boomerang_e2e::{callback, wait_for, Callback, Receiver, Server};
use chrono::{DateTime, DurationRound, Utc};

/// How long delivery may take once the faults end before the test fails.
const PATIENCE: Duration = Duration::from_secs(120);

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

/// Calls beyond one per path, once each of `paths` was called; `None` while some were not.
fn duplicates_once_all_called(rx: &Receiver, paths: &[String]) -> Option<usize> {
    let mut calls: HashMap<String, usize> = HashMap::new();
    for r in rx.received() {
        *calls.entry(r.path).or_default() += 1;
    }
    let all = paths.iter().all(|p| calls.contains_key(p));
    all.then(|| calls.values().map(|c| c - 1).sum())
}

/// Waits until each of `paths` was called; prints the figures every test here prints and
/// asserts that none was lost. Returns the duplicate calls.
async fn report(rx: &Receiver, paths: &[String], last_fault: Instant) -> usize {
    let waited =
        boomerang_e2e::try_wait_for(PATIENCE, || async { duplicates_once_all_called(rx, paths) })
            .await;
    let called: std::collections::HashSet<String> =
        rx.received().into_iter().map(|r| r.path).collect();
    let lost = paths.iter().filter(|p| !called.contains(*p)).count();
    let duplicates = waited.unwrap_or_default();
    // One line, so that tests running side by side do not mix their figures.
    println!(
        "{}: lost: {lost}, duplicates: {duplicates}, full repair: {:.1} s after the last fault",
        std::thread::current().name().unwrap_or("test"),
        last_fault.elapsed().as_secs_f64()
    );
    assert_eq!(lost, 0, "every acknowledged callback is delivered");
    duplicates
}

// Brownouts through the real server.

/// Callbacks registered a second while a brownout lasts.
const RATE: u32 = 10;

/// Registers `RATE` callbacks a second for `lasting`, each to its own path on `rx`, under
/// an idempotency key, each sent again until acknowledged (as a client would); returns the
/// paths.
async fn register_throughout(api: &Client, rx: &Receiver, lasting: Duration) -> Vec<String> {
    let started = Instant::now();
    let mut sent = Vec::new();
    let mut paths = Vec::new();
    let mut n = 0u32;
    while started.elapsed() < lasting {
        let path = format!("/t/{n}");
        let request = callback(rx.url(&path)).delay("1s");
        let (api, key) = (api.clone(), format!("brownout-{n}"));
        sent.push(tokio::spawn(async move {
            let deadline = Instant::now() + PATIENCE;
            loop {
                match api.create(&request, Some(&key)).await {
                    Ok(_) => return,
                    Err(e) if Instant::now() < deadline && e.status().is_none_or(|s| s >= 500) => {
                        tokio::time::sleep(Duration::from_millis(500)).await
                    }
                    Err(e) => panic!("registration {key} refused: {e}"),
                }
            }
        }));
        paths.push(path);
        n += 1;
        tokio::time::sleep_until((started + Duration::from_secs(1) * n / RATE).into()).await;
    }
    for registration in sent {
        registration.await.expect("a registration");
    }
    paths
}

/// A brownout of `service` behind `upstream`: a third of its calls take 2 s longer, for
/// 15 s, while callbacks are registered and delivered.
async fn brownout(service: Service, upstream: &str) {
    let window = Duration::from_secs(15);
    let proxy = FaultProxy::start(upstream).await;
    let rx = Receiver::always(200).await;
    let server = Server::aws_through(&proxy, service);
    let slow = Fault::Latency(Duration::from_secs(2));
    proxy.inject(Rule::every(service, slow, window).share(0.33));
    let paths = register_throughout(&server.api(), &rx, window).await;
    let last_fault = Instant::now();
    assert!(proxy.injected() > 0, "calls were slowed");
    println!(
        "{} callbacks registered through {} slowed calls",
        paths.len(),
        proxy.injected()
    );
    let duplicates = report(&rx, &paths, last_fault).await;
    assert!(duplicates <= paths.len() / 10, "{duplicates} duplicates");
}

#[tokio::test]
async fn an_sqs_brownout_loses_nothing() {
    brownout(Service::Sqs, &moto_endpoint()).await;
}

#[tokio::test]
async fn a_dynamodb_brownout_loses_nothing() {
    brownout(Service::DynamoDb, &dynalite_endpoint()).await;
}

// Custody of buckets and the sweep, on a backend in this process with a clock the test
// moves.

/// The backend on fresh moto resources, every call through `proxy`, its metrics kept; a
/// clock ten seconds past a minute, and a key (so a signing secret) for the tenant.
async fn backend_through(
    what: &str,
    proxy: &FaultProxy,
) -> (AwsBackend, Arc<ManualClock>, Arc<RecordedMetrics>) {
    let settings = fresh_moto_resources(what).await;
    let now = Utc::now()
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap()
        + chrono::Duration::seconds(10);
    let clock = Arc::new(ManualClock::new(now));
    let (backend, metrics) = backend_on(&settings, &proxy.url, clock.clone());
    backend.tenants.mint_key(&acme()).await.unwrap();
    (backend, clock, metrics)
}

fn backend_on(
    settings: &AwsSettings,
    endpoint: &str,
    clock: Arc<ManualClock>,
) -> (AwsBackend, Arc<RecordedMetrics>) {
    let metrics = Arc::new(RecordedMetrics(Mutex::new(Vec::new())));
    let mut config = dev_config(settings, clock);
    config.metrics = metrics.clone();
    let backend = aws(&emulator_config(endpoint), config).expect("aws backend");
    (backend, metrics)
}

async fn register(backend: &AwsBackend, url: String, at: DateTime<Utc>) -> Task {
    let mut spec = boomerang_core::testing::sample_task(&acme(), None, Utc::now()).spec;
    spec.request.url = url;
    spec.on_failure = None;
    let task = NewTask {
        spec,
        retry_from: Default::default(),
        when: FireTime::At(at),
        idempotency_key: None,
        request_hash: "h".into(),
    };
    backend.engine.register(&acme(), task).await.unwrap().task
}

fn minute_of(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(chrono::Duration::minutes(1)).unwrap()
}

fn set_aside(metrics: &RecordedMetrics) -> usize {
    (metrics.0.lock().unwrap().iter())
        .map(|e| match e {
            MetricEvent::SetAside { count } => *count,
            _ => 0,
        })
        .sum()
}

fn repaired(metrics: &RecordedMetrics) -> usize {
    (metrics.0.lock().unwrap().iter())
        .map(|e| match e {
            MetricEvent::SweepRepaired { count } => *count,
            _ => 0,
        })
        .sum()
}

/// Drains the timer queue (as its event source mapping would) until `done` holds.
async fn drain_until(emulator: &TriggerEmulator, what: &str, done: impl Fn() -> bool) {
    wait_for(what, PATIENCE, || async {
        if let Err(e) = emulator.drain_queue_once().await {
            eprintln!("draining the timer queue failed: {e}");
        }
        done().then_some(())
    })
    .await;
}

/// A minute's fire begins (its schedule has sent it to the timer queue, and the delivery
/// function takes it) while SQS refuses every send: it reads the minute but cannot arm it,
/// and fails. The queue would bring the fire back when its visibility ends; sooner, once
/// SQS is back and the fire is a minute overdue, the sweeper's check finds the minute not
/// done and fires it again; every callback of the minute is delivered once.
#[tokio::test]
async fn a_fire_that_fails_while_sqs_is_down_is_fired_again_by_the_check() {
    const TASKS: usize = 20;
    let proxy = FaultProxy::start(&moto_endpoint()).await;
    let (backend, clock, metrics) = backend_through("custodyfire", &proxy).await;
    let rx = Receiver::always(200).await;
    let due = clock.now() + chrono::Duration::minutes(20);
    let minute = minute_of(due);
    let mut paths = Vec::new();
    for i in 0..TASKS {
        let path = format!("/m/{i}");
        let at = due + chrono::Duration::milliseconds(i as i64 * 100);
        register(&backend, rx.url(&path), at).await;
        paths.push(path);
    }
    let emulator = TriggerEmulator::for_backend(&backend);

    // The fire comes two minutes early, and is taken into the outage.
    clock.set(minute - chrono::Duration::minutes(2));
    assert_eq!(emulator.fire_due_schedules().await.unwrap(), 1, "it fired");
    proxy.inject(
        Rule::every(Service::Sqs, Fault::Outage, Duration::from_secs(3600))
            .on(&["SendMessage", "SendMessageBatch"]),
    );
    assert_eq!(
        emulator.drain_queue_once().await.unwrap(),
        1,
        "the fire was taken"
    );
    assert!(proxy.injected() > 0, "its sends were refused");
    proxy.lift_all();
    let last_fault = Instant::now();
    assert!(rx.received().is_empty());

    // Before its fire is a minute overdue the check leaves it; then it fires it again.
    clock.set(minute + chrono::Duration::seconds(30));
    check_bucket_fires(&backend.engine, &backend.buckets).await;
    assert_eq!(repaired(&metrics), 0, "not overdue yet");
    clock.set(minute + chrono::Duration::seconds(65));
    check_bucket_fires(&backend.engine, &backend.buckets).await;
    assert_eq!(repaired(&metrics), 1, "the minute fired again");
    drain_until(&emulator, "the minute delivered", || {
        duplicates_once_all_called(&rx, &paths).is_some()
    })
    .await;
    let duplicates = report(&rx, &paths, last_fault).await;
    assert_eq!(duplicates, 0);

    // Done now: the next checks fire nothing more.
    clock.set(minute + chrono::Duration::minutes(3));
    check_bucket_fires(&backend.engine, &backend.buckets).await;
    assert_eq!(repaired(&metrics), 1, "each minute fired again once");
}

/// A minute too large for one invocation hands its partitions on, and their chains are
/// lost (their messages taken off the queue and dropped). While the chains may still be
/// under way the check waits at that minute; then it fires again only the partitions
/// whose chains never ended, and every callback of the minute is delivered once.
#[tokio::test]
async fn a_lost_partition_chain_is_fired_again_alone() {
    const TASKS: usize = 40;
    let proxy = FaultProxy::start(&moto_endpoint()).await;
    let (backend, clock, metrics) = backend_through("chains", &proxy).await;
    let rx = Receiver::always(200).await;
    let due = clock.now() + chrono::Duration::minutes(20);
    let minute = minute_of(due);
    let mut paths = Vec::new();
    for i in 0..TASKS {
        let path = format!("/c/{i}");
        let at = due + chrono::Duration::milliseconds(i as i64 * 100);
        register(&backend, rx.url(&path), at).await;
        paths.push(path);
    }
    let small = BucketFire {
        store: backend.store.clone(),
        timer: backend.timer.clone(),
        max_per_fire: 5,
    };
    // Late in its window, so no attempt waits any more.
    clock.set(minute + chrono::Duration::seconds(30));
    let first = small.run(BucketWork::whole(minute)).await.unwrap();
    assert!(first.handed_on >= 1, "{first:?}");
    let queue = &backend.settings.timer_queue_url;
    let want = first.armed + first.handed_on;
    let taken = take_timer_messages(&backend.sqs, queue, want, Duration::from_secs(20)).await;
    let delivery = backend.delivery();
    let mut dropped = 0;
    for message in taken {
        match message {
            TimerMessage::Bucket { .. } => dropped += 1,
            attempt => delivery.message(attempt, None).await.unwrap(),
        }
    }
    assert_eq!(dropped, first.handed_on, "every chain lost");
    let last_fault = Instant::now();

    clock.set(minute + chrono::Duration::seconds(65));
    check_bucket_fires(&backend.engine, &backend.buckets).await;
    assert_eq!(repaired(&metrics), 0, "its chains may still be under way");
    clock.set(minute + PARTITIONS_OVERDUE_AFTER + chrono::Duration::seconds(5));
    check_bucket_fires(&backend.engine, &backend.buckets).await;
    assert_eq!(
        repaired(&metrics),
        first.handed_on,
        "only the partitions handed on"
    );
    let emulator = TriggerEmulator::for_backend(&backend);
    drain_until(&emulator, "the minute delivered", || {
        duplicates_once_all_called(&rx, &paths).is_some()
    })
    .await;
    let duplicates = report(&rx, &paths, last_fault).await;
    assert_eq!(duplicates, 0, "claims send each attempt once");
    clock.set(minute + chrono::Duration::minutes(8));
    check_bucket_fires(&backend.engine, &backend.buckets).await;
    assert_eq!(repaired(&metrics), first.handed_on, "done now");
}

/// Overwrites one attribute of a stored task with a value of the wrong type: the item can
/// no longer be read as a task.
async fn corrupt(backend: &AwsBackend, task: &Task) {
    let ddb = aws_sdk_dynamodb::Client::new(&emulator_config(&moto_endpoint()));
    let pk = backend.store.task_pk(&acme(), &task.id).await.unwrap();
    let key = boomerang_aws::keys::task(pk, &task.id);
    ddb.update_item()
        .table_name(&backend.settings.table)
        .set_key(Some(key.to_item()))
        .update_expression("SET #a = :bad")
        .expression_attribute_names("#a", boomerang_aws::attr::ATTEMPT)
        .expression_attribute_values(":bad", AttributeValue::S("not a number".into()))
        .send()
        .await
        .expect("corrupted");
}

/// Ten tasks whose timers failed to arm (SQS down when they were registered) lie in the
/// sweep's range, and one of them is corrupt. The sweep sets that one aside (counted, and
/// not read again) and repairs the other nine. A bucket with an entry that names no task
/// is fired too: the entry is set aside, the minute's real tasks are armed.
#[tokio::test]
async fn a_corrupt_item_is_set_aside_while_the_rest_is_repaired() {
    const TASKS: usize = 10;
    let proxy = FaultProxy::start(&moto_endpoint()).await;
    let (backend, clock, metrics) = backend_through("corrupt", &proxy).await;
    let rx = Receiver::always(200).await;
    proxy.inject(
        Rule::every(Service::Sqs, Fault::Outage, Duration::from_secs(3600))
            .on(&["SendMessage", "SendMessageBatch"]),
    );
    let due = clock.now() + chrono::Duration::seconds(5);
    let mut tasks = Vec::new();
    for i in 0..TASKS {
        let task = register(&backend, rx.url(&format!("/s/{i}")), due).await;
        assert!(!task.timer_armed, "its timer failed to arm");
        tasks.push(task);
    }
    proxy.lift_all();
    let last_fault = Instant::now();
    let bad = tasks.remove(3);
    corrupt(&backend, &bad).await;

    clock.set(due + SWEEP_LAG + chrono::Duration::seconds(1));
    let swept = boomerang_aws::lambda::sweep(&backend.engine, None, -SWEEP_LAG)
        .await
        .expect("an unreadable item stops no sweep");
    assert_eq!(swept.rearmed, TASKS - 1);
    assert_eq!(set_aside(&metrics), 1, "the corrupt item counted");
    let again = boomerang_aws::lambda::sweep(&backend.engine, None, -SWEEP_LAG)
        .await
        .unwrap();
    assert_eq!(again.rearmed, 0);
    assert_eq!(set_aside(&metrics), 1, "and not read again");

    // A bucket holding an entry that names no task, beside real ones.
    let far = clock.now() + chrono::Duration::minutes(30);
    let minute = minute_of(far);
    let mut paths: Vec<String> = (0..TASKS)
        .filter(|i| *i != 3)
        .map(|i| format!("/s/{i}"))
        .collect();
    for i in 0..3 {
        let path = format!("/b/{i}");
        register(&backend, rx.url(&path), far).await;
        paths.push(path);
    }
    let ddb = aws_sdk_dynamodb::Client::new(&emulator_config(&moto_endpoint()));
    let sort_key = boomerang_aws::keys::bucket_sort_key(far, Attempt::Delivery(1));
    ddb.put_item()
        .table_name(&backend.settings.table)
        .item(
            boomerang_aws::attr::PK,
            AttributeValue::S("T#acme#zz".into()),
        )
        .item(boomerang_aws::attr::SK, AttributeValue::S("no task".into()))
        .item(
            boomerang_aws::attr::DUE_SHARD,
            AttributeValue::S(boomerang_aws::keys::bucket_partition(0)),
        )
        .item(
            boomerang_aws::attr::DUE_AT,
            AttributeValue::N(sort_key.to_string()),
        )
        .send()
        .await
        .expect("an entry that names no task");
    clock.set(far);
    let fire = backend.buckets.run(BucketWork::whole(minute)).await;
    let fire = fire.expect("an unreadable entry stops no fire");
    assert_eq!((fire.armed, fire.set_aside), (3, 1));

    let emulator = TriggerEmulator::for_backend(&backend);
    drain_until(&emulator, "the rest delivered", || {
        duplicates_once_all_called(&rx, &paths).is_some()
    })
    .await;
    report(&rx, &paths, last_fault).await;
    assert_eq!(
        rx.count("/s/3"),
        0,
        "the corrupt one is left for an operator"
    );
}

/// Attempts due 13–14 minutes after their write are armed on the timer queue (its delay
/// holds up to 15 minutes) and, in case the writer's clock stepped back, also indexed in
/// their minute's bucket, whose schedule is never made. When that minute's fire would be a
/// minute overdue, the sweeper's check must not take it for a lost fire and fire it (a
/// false repair, and every attempt armed twice), nor may the sweep find them.
#[tokio::test]
async fn work_due_thirteen_to_fourteen_minutes_ahead_causes_no_false_repair() {
    const TASKS: usize = 12;
    let proxy = FaultProxy::start(&moto_endpoint()).await;
    let (backend, clock, metrics) = backend_through("nearlimit", &proxy).await;
    let rx = Receiver::always(200).await;
    let written = clock.now();
    let mut tasks = Vec::new();
    for i in 0..TASKS {
        let wait = chrono::Duration::seconds(13 * 60 + 5 * i as i64);
        tasks.push(register(&backend, rx.url(&format!("/q/{i}")), written + wait).await);
    }
    assert!(tasks.iter().all(|t| t.timer_armed), "held by the queue");
    let sqs = &backend.sqs;
    let delayed = sqs
        .get_queue_attributes()
        .queue_url(&backend.settings.timer_queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .unwrap();
    let delayed = delayed.attributes().and_then(|a| {
        a.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesDelayed)
    });
    assert_eq!(
        delayed.map(String::as_str),
        Some(TASKS.to_string().as_str())
    );

    // Past the last of their minutes' fires, overdue: nothing to repair.
    let last = written + chrono::Duration::seconds(14 * 60);
    clock.set(minute_of(last) + chrono::Duration::minutes(2));
    let first_check = minute_of(written) - chrono::Duration::minutes(1);
    // The check's cursor starts before the write, as on a table in use.
    backend
        .store
        .set_bucket_fires_checked_from(first_check)
        .await
        .unwrap();
    check_bucket_fires(&backend.engine, &backend.buckets).await;
    let swept = boomerang_aws::lambda::sweep(&backend.engine, None, -SWEEP_LAG)
        .await
        .unwrap();
    assert_eq!(swept.rearmed, 0, "nothing in the sweep's range");
    assert_eq!(repaired(&metrics), 0, "no false repair");
    let emulator = TriggerEmulator::for_backend(&backend);
    assert_eq!(
        emulator.drain_queue_once().await.unwrap(),
        0,
        "nothing fired again"
    );

    // Their delays end (SQS counts them in real time; here the test hands the messages
    // over as the queue's event source mapping would once they end): each called once.
    let started = Instant::now();
    let mut batch = SqsEvent::default();
    batch.records = (tasks.iter().enumerate())
        .map(|(i, task)| {
            let mut record = SqsMessage::default();
            record.message_id = Some(format!("m-{i}"));
            record.body = Some(serde_json::to_string(&task.attempt_ref(1)).unwrap());
            record
        })
        .collect();
    for chunk in batch.records.chunks(10) {
        let mut part = SqsEvent::default();
        part.records = chunk.to_vec();
        let event = DeliveryEvent::Queue(part.into());
        backend.delivery().handle(event, None).await.unwrap();
    }
    let paths: Vec<String> = (0..TASKS).map(|i| format!("/q/{i}")).collect();
    let duplicates = report(&rx, &paths, started).await;
    assert_eq!(duplicates, 0);
}
