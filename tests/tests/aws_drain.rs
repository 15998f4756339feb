//! Work the AWS backend reads back from storage goes back on the timer queue in batches:
//! the sweeper re-arms a backlog of lost timers larger than one sweep in a single run, ten
//! to a request, and stops at once when the queue refuses them; the system failures it
//! hands back, and the work a bucket's fire hands on, go ten to a request too. On moto,
//! with the SQS client's sends counted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_sqs::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_sqs::config::{ConfigBag, Intercept};
use aws_sdk_sqs::operation::send_message::SendMessageInput;
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput;
use aws_sdk_sqs::types::QueueAttributeName;
use boomerang_aws::backend::{aws_with_clients, AwsClients};
use boomerang_aws::buckets::BucketFire;
use boomerang_aws::keys::BUCKET_SHARDS;
use boomerang_aws::lambda::{sweep, SWEEP_BUDGET};
use boomerang_aws::messages::{BucketWork, SweepPass, TimerMessage};
use boomerang_aws::settings::SWEEP_LAG;
use boomerang_aws::{AwsBackend, AwsBackendConfig, AwsSettings};
use boomerang_core::clock::ManualClock;
use boomerang_core::domain::{AttemptRef, TaskId, TenantId};
use boomerang_core::engine::{EngineSettings, FireTime, NewTask};
use boomerang_e2e::aws::{dev_config, fresh_moto_resources, moto, take_timer_messages};
use chrono::DurationRound;

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

/// Sends the SQS client made, one message to a request or a batch to a request.
#[derive(Debug, Default)]
struct Sends {
    single: AtomicUsize,
    batches: AtomicUsize,
}

#[derive(Debug)]
struct CountSends(Arc<Sends>);

impl Intercept for CountSends {
    fn name(&self) -> &'static str {
        "CountSends"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let input = context.input();
        if input.downcast_ref::<SendMessageInput>().is_some() {
            self.0.single.fetch_add(1, Ordering::SeqCst);
        } else if input.downcast_ref::<SendMessageBatchInput>().is_some() {
            self.0.batches.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// The backend on `settings`, sweeping `sweep_batch` entries a shard at a time, its sends
/// counted.
fn counted_backend(
    settings: &AwsSettings,
    clock: Arc<ManualClock>,
    sweep_batch: usize,
) -> (AwsBackend, Arc<Sends>) {
    let sdk = moto();
    let sends = Arc::new(Sends::default());
    let sqs = aws_sdk_sqs::config::Builder::from(&sdk)
        .interceptor(CountSends(sends.clone()))
        .build();
    let clients = AwsClients {
        sqs: aws_sdk_sqs::Client::from_conf(sqs),
        ..AwsClients::new(&sdk)
    };
    let config = AwsBackendConfig {
        engine: EngineSettings {
            sweep_batch,
            ..EngineSettings::default()
        },
        ..dev_config(settings, clock)
    };
    (aws_with_clients(clients, config).unwrap(), sends)
}

fn new_task(i: usize) -> NewTask {
    let mut spec = boomerang_core::testing::sample_task(&acme(), None, chrono::Utc::now()).spec;
    spec.request.url = format!("http://127.0.0.1:9/lost/{i}");
    NewTask {
        spec,
        retry_from: Default::default(),
        when: FireTime::After(Duration::from_secs(5)),
        idempotency_key: None,
        request_hash: "h".into(),
    }
}

/// `count` tasks registered while their timer queue does not exist (stored without a
/// timer), then overdue past the sweeper's lag; their first attempts.
async fn lost_timers(
    settings: &AwsSettings,
    clock: &Arc<ManualClock>,
    count: usize,
) -> Vec<AttemptRef> {
    let mut broken = settings.clone();
    broken.timer_queue_url = format!("{}-missing", settings.timer_queue_url);
    let (backend, _) = counted_backend(&broken, clock.clone(), 1000);
    backend.tenants.mint_key(&acme()).await.unwrap();
    let mut attempts = Vec::new();
    for start in (0..count).step_by(100) {
        let batch = (start..count.min(start + 100)).map(new_task).collect();
        for registered in backend.engine.register_batch(&acme(), batch).await.unwrap() {
            let task = registered.unwrap().task;
            assert!(!task.timer_armed, "the queue refused it");
            attempts.push(task.attempt_ref(1));
        }
    }
    clock.advance(Duration::from_secs(5) + SWEEP_LAG.to_std().unwrap() + Duration::from_secs(1));
    attempts
}

/// Every timer message on `queue` (up to `want`, within 30 s), deleted.
async fn take_all(queue: &str, want: usize) -> Vec<TimerMessage> {
    let sqs = aws_sdk_sqs::Client::new(&moto());
    let got = take_timer_messages(&sqs, queue, want, Duration::from_secs(30)).await;
    assert!(
        got.len() >= want,
        "only {} of {want} messages arrived",
        got.len()
    );
    got
}

/// How many times each attempt came, and anything else that came.
fn tally(messages: Vec<TimerMessage>) -> (BTreeMap<AttemptRef, usize>, Vec<TimerMessage>) {
    let mut attempts = BTreeMap::new();
    let mut other = Vec::new();
    for m in messages {
        match m {
            TimerMessage::Attempt(a) => *attempts.entry(a).or_default() += 1,
            m => other.push(m),
        }
    }
    (attempts, other)
}

#[tokio::test]
async fn one_sweeper_run_rearms_a_backlog_larger_than_a_sweep_ten_to_a_request() {
    let settings = fresh_moto_resources("backlog").await;
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let lost = lost_timers(&settings, &clock, 120).await;
    // Two entries a shard per sweep: 64 at most, about half the backlog.
    let (backend, sends) = counted_backend(&settings, clock.clone(), 2);

    let report = sweep(&backend.engine, None, -SWEEP_LAG).await.unwrap();
    assert_eq!(
        report.rearmed,
        lost.len(),
        "the run swept until none was left"
    );
    let (armed, other) = tally(take_all(&settings.timer_queue_url, lost.len()).await);
    assert!(other.is_empty(), "{other:?}");
    assert_eq!(armed.keys().cloned().collect::<Vec<_>>(), {
        let mut want = lost.clone();
        want.sort();
        want
    });
    assert!(armed.values().all(|&n| n == 1), "each armed once");
    assert_eq!(sends.single.load(Ordering::SeqCst), 0);
    // Each sweep's arms go ten to a request: 120 in at most a dozen, plus one per sweep
    // for its last, partly filled request.
    let batches = sends.batches.load(Ordering::SeqCst);
    assert!((12..=12 + 6).contains(&batches), "{batches} requests");
    assert_eq!(
        sweep(&backend.engine, None, -SWEEP_LAG)
            .await
            .unwrap()
            .rearmed,
        0,
        "the checkpoint moved past them all"
    );
}

/// A run whose arms all fail tries the same sweep again, a second apart, until its budget
/// is spent; it repairs nothing, moves its checkpoint past nothing, and the next run
/// repairs them all.
#[tokio::test]
async fn a_run_whose_arms_fail_tries_again_within_its_budget_and_the_next_run_repairs_them() {
    let settings = fresh_moto_resources("refused").await;
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let lost = lost_timers(&settings, &clock, 100).await;
    let mut broken = settings.clone();
    broken.timer_queue_url = format!("{}-missing", settings.timer_queue_url);
    let (refusing, _) = counted_backend(&broken, clock.clone(), 2);

    let started = Instant::now();
    let report = sweep(&refusing.engine, None, -SWEEP_LAG).await.unwrap();
    assert_eq!(report.rearmed, 0, "nothing could be armed");
    // The last try begins before the budget ends (one sweep of 64 on moto, then).
    assert!(started.elapsed() < SWEEP_BUDGET + Duration::from_secs(10));

    let (healthy, _) = counted_backend(&settings, clock.clone(), 1000);
    let report = sweep(&healthy.engine, None, -SWEEP_LAG).await.unwrap();
    assert_eq!(report.rearmed, lost.len(), "nothing was skipped");
    let (armed, _) = tally(take_all(&settings.timer_queue_url, lost.len()).await);
    assert_eq!(armed.len(), lost.len());
}

/// What the timer queue holds once each of `attempts` and something else came, or 30 s
/// passed: how many times each attempt came, and everything else.
async fn take_until_all_came(
    queue: &str,
    attempts: &[AttemptRef],
) -> (BTreeMap<AttemptRef, usize>, Vec<TimerMessage>) {
    let sqs = aws_sdk_sqs::Client::new(&moto());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    loop {
        let (armed, other) = tally(got.clone());
        if (armed.len() == attempts.len() && !other.is_empty()) || Instant::now() > deadline {
            return (armed, other);
        }
        got.extend(take_timer_messages(&sqs, queue, 1, Duration::from_secs(1)).await);
    }
}

#[tokio::test]
async fn system_failures_are_handed_back_ten_to_a_request() {
    let settings = fresh_moto_resources("redrive").await;
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let (backend, sends) = counted_backend(&settings, clock.clone(), 1000);
    let failures = backend.system_failures().expect("bootstrap makes one");
    let attempts: Vec<_> = (0..23)
        .map(|_| AttemptRef::delivery(acme(), TaskId::new(), 1))
        .collect();
    let minute = chrono::DateTime::from_timestamp(1_900_000_020 * 60, 0).unwrap();
    let bucket = TimerMessage::Bucket {
        bucket: BucketWork::whole(minute),
    };
    let pass = TimerMessage::Sweep {
        sweep: SweepPass::HalfMinute,
    };
    let mut bodies: Vec<String> = (attempts.iter())
        .map(|a| serde_json::to_string(&TimerMessage::Attempt(a.clone())).unwrap())
        .collect();
    bodies.push(serde_json::to_string(&bucket).unwrap());
    bodies.push(serde_json::to_string(&pass).unwrap());
    bodies.push("no timer in here".into());
    let sqs = aws_sdk_sqs::Client::new(&moto());
    for body in &bodies {
        (sqs.send_message())
            .queue_url(&failures.queue_url)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }

    let report = sweep(&backend.engine, Some(&failures), -SWEEP_LAG)
        .await
        .unwrap();
    // A standard queue delivers at least once: two readers may both receive a message,
    // and then both hand it back (a second timer for an attempt is harmless).
    // At least every message but the stranger; a few more where two readers took one.
    assert!(
        (attempts.len() + 2..=attempts.len() + 5).contains(&report.timers_redriven),
        "all but the stranger, about once each: {}",
        report.timers_redriven
    );
    let (armed, other) = take_until_all_came(&settings.timer_queue_url, &attempts).await;
    assert_eq!(
        armed.keys().cloned().collect::<BTreeSet<_>>(),
        attempts.iter().cloned().collect::<BTreeSet<_>>()
    );
    assert!(!other.is_empty());
    assert!(
        other.iter().all(|m| *m == bucket),
        "the bucket is queued again, the pass is not: {other:?}"
    );
    assert_eq!(sends.single.load(Ordering::SeqCst), 0);
    assert!(
        sends.batches.load(Ordering::SeqCst) <= 6,
        "about one request per ten received: {}",
        sends.batches.load(Ordering::SeqCst)
    );
    // The stranger was received (so is out of sight for a while), and not deleted.
    let counts = (sqs.get_queue_attributes())
        .queue_url(&failures.queue_url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap();
    let count = |name: QueueAttributeName| {
        (counts.attributes().and_then(|a| a.get(&name)))
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or_default()
    };
    assert_eq!(
        count(QueueAttributeName::ApproximateNumberOfMessages)
            + count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        1,
        "the stranger is left for an operator"
    );
}

#[tokio::test]
async fn the_work_a_fire_hands_on_goes_ten_to_a_request() {
    let settings = fresh_moto_resources("handon").await;
    let now = chrono::Utc::now();
    let clock = Arc::new(ManualClock::new(now));
    let (backend, sends) = counted_backend(&settings, clock.clone(), 1000);
    backend.tenants.mint_key(&acme()).await.unwrap();
    let minute = (now + chrono::Duration::minutes(30))
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap();
    let batch = (0..80)
        .map(|i| NewTask {
            when: FireTime::At(minute + chrono::Duration::milliseconds(i * 700)),
            ..new_task(i as usize)
        })
        .collect();
    for registered in backend.engine.register_batch(&acme(), batch).await.unwrap() {
        registered.unwrap();
    }
    // One entry from each partition, so that nearly every partition is left unfinished.
    let fire = BucketFire {
        max_per_fire: BUCKET_SHARDS as usize,
        ..BucketFire::new(backend.store.clone(), backend.timer.clone())
    };
    clock.set(minute - chrono::Duration::minutes(2));
    let sent_before = sends.batches.load(Ordering::SeqCst);
    let report = fire.run(BucketWork::whole(minute)).await.unwrap();
    assert_eq!(report.read, report.armed);
    assert!(report.handed_on > 10, "{report:?}");

    // The armed attempts wait a couple of minutes; the work handed on is there at once.
    let handed = take_all(&settings.timer_queue_url, report.handed_on).await;
    let mut partitions: Vec<u32> = (handed.into_iter())
        .map(|m| match m {
            TimerMessage::Bucket { bucket } => {
                assert_eq!(bucket.minute, minute);
                assert!(
                    bucket.after.is_some(),
                    "it goes on from where the fire stopped"
                );
                bucket.first
            }
            other => panic!("not handed-on work: {other:?}"),
        })
        .collect();
    partitions.sort();
    partitions.dedup();
    assert_eq!(
        partitions.len(),
        report.handed_on,
        "one message per partition"
    );
    assert_eq!(sends.single.load(Ordering::SeqCst), 0);
    let requests = sends.batches.load(Ordering::SeqCst) - sent_before;
    let want = report.armed.div_ceil(10) + report.handed_on.div_ceil(10);
    assert_eq!(requests, want, "attempts and hand-ons ten to a request");
}
