//! Faults on the AWS path, with real emulators and real receivers: timers that fail to arm
//! after the task is stored, one attempt fired by Scheduler and SQS at once, and a
//! dead-letter send that fails.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use boomerang_aws::bucket_schedules::{BucketSchedules, ScheduleTarget};
use boomerang_aws::buckets::BucketFire;
use boomerang_aws::lambda::{Delivery, QueueBatch};
use boomerang_aws::settings::SWEEP_LAG;
use boomerang_aws::triggers::TriggerEmulator;
use boomerang_aws::AwsSettings;
use boomerang_aws::AwsTimer;
use boomerang_aws::DynamoStore;
use boomerang_aws::DynamoTenants;
use boomerang_aws::SqsDeadLetters;
use boomerang_core::clock::{Clock, ManualClock, SystemClock};
use boomerang_core::domain::{DeadLetter, Status, TenantId};
use boomerang_core::engine::{Engine, EngineSettings, FireTime, NewTask, Ports, StorePorts};
use boomerang_core::ports::{DeadLetterError, DeadLetters};
use boomerang_e2e::aws::{
    dynalite, fresh_dynalite_table, fresh_moto_resources, moto, moto_backend,
};
use boomerang_e2e::{wait_for, Receiver};
use boomerang_webhook::{DestinationPolicy, HttpWebhooks};

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

fn new_task(url: &str, when: FireTime) -> NewTask {
    let tenant = acme();
    let mut spec = boomerang_core::testing::sample_task(&tenant, None, chrono::Utc::now()).spec;
    spec.request.url = url.to_string();
    NewTask {
        spec,
        retry_from: Default::default(),
        when,
        idempotency_key: None,
        request_hash: "h".into(),
    }
}

/// Arming fails after the task is stored; the sweeper (on a healthy engine sharing the
/// store) re-arms it once it is overdue, and the webhook is called.
async fn delivered_despite_a_broken_timer(break_it: impl Fn(&mut AwsSettings), wait: Duration) {
    let settings = fresh_moto_resources("fault").await;
    let rx = Receiver::always(200).await;
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let healthy = moto_backend(&settings, clock.clone());
    healthy.tenants.mint_key(&acme()).await.unwrap();
    let mut broken_settings = settings.clone();
    break_it(&mut broken_settings);
    let broken = moto_backend(&broken_settings, clock.clone());

    let task = broken
        .engine
        .register(&acme(), new_task(&rx.url("/late"), FireTime::After(wait)))
        .await
        .expect("stored even though the timer failed")
        .task;
    let emulator = TriggerEmulator::for_backend(&healthy);
    assert_eq!(
        emulator.fire_due_schedules().await.unwrap(),
        0,
        "no timer was armed"
    );
    assert_eq!(
        emulator.drain_queue_once().await.unwrap(),
        0,
        "no timer was armed"
    );

    clock.advance(wait + SWEEP_LAG.to_std().unwrap() + Duration::from_secs(1));
    let report = healthy.engine.sweep(-SWEEP_LAG).await.unwrap();
    assert_eq!(report.rearmed, 1);
    wait_for(
        "the repaired timer to fire",
        Duration::from_secs(20),
        || async {
            emulator.drain_queue_once().await.unwrap();
            (rx.count("/late") == 1).then_some(())
        },
    )
    .await;
    let task = healthy.engine.get(&acme(), &task.id).await.unwrap().task;
    assert_eq!(task.status, Status::Succeeded);
}

#[tokio::test]
async fn a_failed_create_schedule_is_repaired_by_the_sweeper() {
    delivered_despite_a_broken_timer(
        |s| s.schedule_group = "no-such-group".into(),
        Duration::from_secs(20 * 60),
    )
    .await;
}

#[tokio::test]
async fn a_failed_send_message_is_repaired_by_the_sweeper() {
    delivered_despite_a_broken_timer(
        |s| s.timer_queue_url = format!("{}-missing", s.timer_queue_url),
        Duration::from_secs(5),
    )
    .await;
}

/// A dead-letter queue that refuses the first send.
struct FailsOnce {
    inner: SqsDeadLetters,
    failed: AtomicBool,
}

#[async_trait]
impl DeadLetters for FailsOnce {
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError> {
        if !self.failed.swap(true, Ordering::SeqCst) {
            return Err(DeadLetterError("injected: queue unavailable".into()));
        }
        self.inner.send(letter).await
    }
}

/// Ports with the store on dynalite (atomic conditional writes) and queues on moto, and
/// the bucket fire on the same store and timer.
async fn atomic_ports(
    settings: &AwsSettings,
    dead_letters: Arc<dyn DeadLetters>,
    clock: Arc<dyn Clock>,
) -> (Ports, Arc<BucketFire>) {
    let table = fresh_dynalite_table("atomic").await;
    let ddb = aws_sdk_dynamodb::Client::new(&dynalite());
    let tenants = DynamoTenants::new(ddb.clone(), &table);
    tenants.mint_key(&acme()).await.unwrap();
    let sdk = moto();
    let store = Arc::new(DynamoStore::new(
        ddb,
        table,
        Duration::from_secs(7 * 24 * 3600),
    ));
    let schedules = BucketSchedules::new(
        aws_sdk_scheduler::Client::new(&sdk),
        ScheduleTarget::of(settings),
        store.clone(),
        clock.clone(),
    );
    let timer = Arc::new(AwsTimer::new(
        aws_sdk_sqs::Client::new(&sdk),
        schedules,
        settings,
        clock.clone(),
    ));
    let buckets = Arc::new(BucketFire::new(store.clone(), timer.clone()));
    let webhooks = HttpWebhooks::new(
        DestinationPolicy {
            dev: true,
            ..Default::default()
        },
        2 * boomerang_core::engine::DEFAULT_PER_DESTINATION,
    )
    .unwrap();
    let ports = Ports::new(
        StorePorts::of(store),
        timer,
        Arc::new(tenants),
        Arc::new(webhooks),
        dead_letters,
        Arc::new(boomerang_core::testing::AlwaysReady),
    )
    .with_clock(clock);
    (ports, buckets)
}

#[tokio::test]
async fn one_attempt_fired_by_scheduler_and_sqs_at_once_calls_the_webhook_once() {
    let settings = fresh_moto_resources("double").await;
    let sqs = aws_sdk_sqs::Client::new(&moto());
    let dead_letters = Arc::new(SqsDeadLetters::new(sqs, &settings.dead_letter_queue_url));
    let (ports, buckets) = atomic_ports(&settings, dead_letters, Arc::new(SystemClock)).await;
    let engine = Arc::new(Engine::new(ports, EngineSettings::default()));
    let delivery = Delivery {
        engine: engine.clone(),
        buckets,
    };
    let rx = boomerang_e2e::Receiver::start(|_, _| boomerang_e2e::Reply {
        delay: Duration::from_millis(200),
        ..boomerang_e2e::Reply::status(200)
    })
    .await;
    for round in 0..5 {
        let path = format!("/double-{round}");
        let task = engine
            .register(&acme(), new_task(&rx.url(&path), FireTime::Now))
            .await
            .unwrap()
            .task;
        let message = serde_json::to_value(task.attempt_ref(1)).unwrap();
        let mut record = SqsMessage::default();
        record.message_id = Some("m-1".into());
        record.body = Some(message.to_string());
        let mut batch = SqsEvent::default();
        batch.records = vec![record];
        let batch: QueueBatch = batch.into();
        let scheduled = serde_json::from_value(message).unwrap();
        let (scheduled, queued) = tokio::join!(
            delivery.handle(scheduled, None),
            delivery.queue(&batch, None)
        );
        scheduled.unwrap();
        assert!(queued.batch_item_failures.is_empty());
        assert_eq!(
            rx.count(&path),
            1,
            "round {round}: exactly one webhook call"
        );
        let stored = engine.get(&acme(), &task.id).await.unwrap().task;
        assert_eq!(stored.status, Status::Succeeded);
    }
}

#[tokio::test]
async fn a_dead_letter_send_that_fails_once_is_retried_into_one_record() {
    let settings = fresh_moto_resources("dlq").await;
    let sqs = aws_sdk_sqs::Client::new(&moto());
    let dead_letters = Arc::new(FailsOnce {
        inner: SqsDeadLetters::new(sqs.clone(), &settings.dead_letter_queue_url),
        failed: AtomicBool::new(false),
    });
    let (ports, _) = atomic_ports(&settings, dead_letters.clone(), Arc::new(SystemClock)).await;
    let engine = Engine::new(ports, EngineSettings::default());
    let rx = Receiver::always(410).await;
    let task = engine
        .register(&acme(), new_task(&rx.url("/gone"), FireTime::Now))
        .await
        .unwrap()
        .task;
    engine.deliver(task.attempt_ref(1)).await.unwrap();
    assert!(
        dead_letters.failed.load(Ordering::SeqCst),
        "the first send failed"
    );
    let stored = engine.get(&acme(), &task.id).await.unwrap().task;
    assert_eq!(
        (stored.status, stored.dead_letter_pending),
        (Status::Failed, false)
    );

    let mut letters = Vec::new();
    for _ in 0..3 {
        let out = sqs
            .receive_message()
            .queue_url(&settings.dead_letter_queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .message_attribute_names("All")
            .send()
            .await
            .unwrap();
        letters.extend(out.messages.unwrap_or_default());
    }
    assert_eq!(letters.len(), 1, "one record");
    let letter: DeadLetter = serde_json::from_str(letters[0].body().unwrap()).unwrap();
    assert_eq!((letter.task_id, letter.attempts), (task.id, 1));
    assert_eq!(letter.url, rx.url("/gone"));
    assert_eq!(letter.last_error.as_deref(), Some("HTTP 410 (permanent)"));
    let attr = letters[0]
        .message_attributes()
        .unwrap()
        .get("task_id")
        .unwrap();
    assert_eq!(attr.string_value(), Some(task.id.to_string().as_str()));
}

/// A timer message that keeps failing ends in the system-failures queue (five receives on
/// AWS). The task is armed, so it is not where the sweep looks: the sweeper hands the
/// message back to the timer queue, and the attempt is delivered.
#[tokio::test]
async fn a_timer_that_failed_over_and_over_is_handed_back_by_the_sweeper() {
    let settings = fresh_moto_resources("failures").await;
    let rx = Receiver::always(200).await;
    let backend = moto_backend(&settings, Arc::new(SystemClock));
    backend.tenants.mint_key(&acme()).await.unwrap();
    let task = backend
        .engine
        .register(&acme(), new_task(&rx.url("/redriven"), FireTime::Now))
        .await
        .unwrap()
        .task;
    assert!(
        task.timer_armed,
        "the timer is armed before the task is written"
    );

    // What SQS's redrive policy does after the fifth failed receive.
    let sqs = aws_sdk_sqs::Client::new(&moto());
    let got = sqs
        .receive_message()
        .queue_url(&settings.timer_queue_url)
        .wait_time_seconds(2)
        .send()
        .await
        .unwrap();
    let message = &got.messages()[0];
    let failures_url = settings.system_failures_queue_url.clone().unwrap();
    sqs.send_message()
        .queue_url(&failures_url)
        .message_body(message.body().unwrap())
        .send()
        .await
        .unwrap();
    sqs.delete_message()
        .queue_url(&settings.timer_queue_url)
        .receipt_handle(message.receipt_handle().unwrap())
        .send()
        .await
        .unwrap();

    let report = boomerang_aws::lambda::sweep(
        &backend.engine,
        backend.system_failures().as_ref(),
        chrono::Duration::zero(),
    )
    .await
    .unwrap();
    assert_eq!(
        report.rearmed, 0,
        "an armed task is not in the sweep's index"
    );
    assert_eq!(report.timers_redriven, 1);
    let emulator = TriggerEmulator::for_backend(&backend);
    wait_for(
        "the handed-back timer to fire",
        Duration::from_secs(20),
        || async {
            emulator.drain_queue_once().await.unwrap();
            (rx.count("/redriven") == 1).then_some(())
        },
    )
    .await;
    let left = sqs
        .receive_message()
        .queue_url(&failures_url)
        .send()
        .await
        .unwrap();
    assert!(left.messages().is_empty(), "the system failure was deleted");
    let task = backend.engine.get(&acme(), &task.id).await.unwrap().task;
    assert_eq!(task.status, Status::Succeeded);
}

/// Between the sweeper's once-a-minute runs, each run queues a pass half a minute later on
/// the timer queue; that pass (run by whoever handles the queue) re-arms a lost timer, so
/// a repair waits at most about 45 s rather than a minute and a half.
#[tokio::test]
async fn a_sweeper_run_queues_a_half_minute_pass_that_repairs_a_lost_timer() {
    let settings = fresh_moto_resources("half").await;
    let rx = Receiver::always(200).await;
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let healthy = moto_backend(&settings, clock.clone());
    healthy.tenants.mint_key(&acme()).await.unwrap();
    let mut broken_settings = settings.clone();
    broken_settings.timer_queue_url = format!("{}-missing", settings.timer_queue_url);
    let broken = moto_backend(&broken_settings, clock.clone());
    let wait = Duration::from_secs(5);
    broken
        .engine
        .register(&acme(), new_task(&rx.url("/half"), FireTime::After(wait)))
        .await
        .expect("stored even though the timer failed");

    // The minute's run finds nothing overdue yet, and queues its pass.
    let report = boomerang_aws::lambda::handle_sweep(&healthy.engine, None, &healthy.timer)
        .await
        .unwrap();
    assert_eq!(report["rearmed"], 0);
    clock.advance(wait + SWEEP_LAG.to_std().unwrap() + Duration::from_secs(1));
    let emulator = TriggerEmulator::for_backend(&healthy);
    assert_eq!(
        emulator.drain_queue_once().await.unwrap(),
        0,
        "the pass waits its half minute"
    );
    wait_for(
        "the half-minute pass to re-arm the timer and the webhook to be called",
        Duration::from_secs(60),
        || async {
            emulator.drain_queue_once().await.unwrap();
            (rx.count("/half") == 1).then_some(())
        },
    )
    .await;
}
