//! Many workers on one timer queue and one table, as the delivery function runs at scale:
//! eight delivery workers (each its own backend and clients, as Lambda instances are), a
//! ninth killed in the middle of a batch, Scheduler played for the bucket schedules, and
//! the sweeper with its half-minute passes. The table is on dynalite (its conditional
//! writes are atomic, as DynamoDB's are), the queue and the schedules on moto.
//!
//! 5,000 tasks across three tenants: most are due within seconds, some fail once and then
//! succeed, some are canceled before they are due, and some are due 20 minutes after their
//! registration (by an instance whose clock is 20 minutes behind), so they wait in their
//! minute's bucket and come back through its fire. Tasks arrive at a steady 100 a second
//! while the workers deliver. Afterwards: no task is lost, no attempt
//! is sent twice except those the killed worker had in hand, every cancel is honoured.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use boomerang_aws::backend::{aws_with_clients, AwsBackend, AwsClients};
use boomerang_aws::bootstrap::bootstrap;
use boomerang_aws::lambda::{handle_sweep, Delivery};
use boomerang_aws::triggers::{poll_queue, TriggerEmulator};
use boomerang_aws::AwsSettings;
use boomerang_core::clock::{Clock, SystemClock};
use boomerang_core::domain::{Backoff, MaxAttempts, RetryPolicy, Status, TaskId, TenantId};
use boomerang_core::engine::{Engine, FireTime, NewTask};
use boomerang_e2e::aws::{bulk_moto, dev_config, dynalite, fresh_dynalite_table, unique_prefix};
use boomerang_e2e::{try_wait_for, wait_for, Receiver, Reply};
use chrono::{DateTime, Utc};
use futures_util::{stream, StreamExt};

const TASKS: usize = 5_000;
/// Tasks per registration, and how often one is registered: a steady 100 a second keeps
/// the emulated queue short (moto's every queue call reads all of its messages).
const BATCH: usize = 50;
const PACE: Duration = Duration::from_millis(500);
/// When the canceled tasks would have been due.
const CANCELED_AFTER: Duration = Duration::from_secs(10);

const WORKERS: usize = 8;
/// How far behind the clock of the instance that registers the far-future tasks is.
const BEHIND: Duration = Duration::from_secs(20 * 60);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    /// Due within three seconds; answered 200.
    Plain,
    /// Answered 500 the first time, 200 the second, a second later.
    Flaky,
    /// Due in 10 s, canceled at once: never called.
    Canceled,
    /// Due half a minute from now, which on the clock of the instance registering it is
    /// 20 minutes after its registration: through its minute's bucket.
    Far,
}

impl Kind {
    fn of(i: usize) -> Kind {
        match i % 50 {
            0..=4 => Kind::Flaky,
            5..=7 => Kind::Canceled,
            8..=9 => Kind::Far,
            _ => Kind::Plain,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Plain => "plain",
            Kind::Flaky => "flaky",
            Kind::Canceled => "canceled",
            Kind::Far => "far",
        }
    }

    /// Requests its task should get: none if canceled, two if it fails once.
    fn calls(self) -> usize {
        match self {
            Kind::Canceled => 0,
            Kind::Flaky => 2,
            Kind::Plain | Kind::Far => 1,
        }
    }
}

/// The system clock, set back: what an instance 20 minutes behind sees.
struct Behind(Duration);

impl Clock for Behind {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() - chrono::Duration::from_std(self.0).unwrap()
    }
}

fn backend(settings: &AwsSettings, clock: Arc<dyn Clock>) -> AwsBackend {
    let (table, queues) = (dynalite(), bulk_moto());
    aws_with_clients(
        AwsClients {
            dynamodb: aws_sdk_dynamodb::Client::new(&table),
            sqs: aws_sdk_sqs::Client::new(&queues),
            scheduler: aws_sdk_scheduler::Client::new(&queues),
        },
        dev_config(settings, clock),
    )
    .expect("aws backend")
}

fn new_task(tenant: &TenantId, url: String, when: FireTime) -> NewTask {
    let mut spec = boomerang_core::testing::sample_task(tenant, None, Utc::now()).spec;
    spec.request.url = url;
    spec.on_failure = None;
    spec.timeout = Duration::from_secs(2);
    spec.retry = RetryPolicy::new(
        Backoff::schedule(vec![Duration::from_secs(1)]).unwrap(),
        MaxAttempts::Default,
        None,
        0.0,
        &[],
    )
    .unwrap();
    NewTask {
        spec,
        retry_from: Default::default(),
        when,
        idempotency_key: None,
        request_hash: String::new(),
    }
}

/// Registers one batch (one tenant, one kind); cancels the canceled kind at once.
async fn register_batch(
    engine: Arc<Engine>,
    tenant: TenantId,
    kind: Kind,
    ids: Vec<usize>,
    rx: &Receiver,
) -> Vec<(usize, Kind, TenantId, TaskId)> {
    let now = Utc::now();
    let tasks = ids
        .iter()
        .map(|&i| {
            let when = match kind {
                Kind::Plain => FireTime::After(Duration::from_millis((i % 30) as u64 * 100)),
                Kind::Flaky => FireTime::Now,
                Kind::Canceled => FireTime::After(CANCELED_AFTER),
                // Half a minute from now, which is 20 minutes after now on the clock of
                // the instance registering them: they go to their minute's bucket.
                Kind::Far => FireTime::At(now + chrono::Duration::seconds(30 + (i % 30) as i64)),
            };
            new_task(&tenant, rx.url(&format!("/{}/{i}", kind.name())), when)
        })
        .collect();
    let done = engine
        .register_batch(&tenant, tasks)
        .await
        .expect("batch accepted");
    let mut out = Vec::new();
    for (&i, r) in ids.iter().zip(done) {
        let task = r.expect("registered").task;
        if kind == Kind::Canceled {
            engine.cancel(&tenant, &task.id).await.expect("canceled");
        }
        out.push((i, kind, tenant.clone(), task.id));
    }
    out
}

/// Plays the SQS event source mapping for one worker until told to stop.
async fn work(
    delivery: Delivery,
    sqs: aws_sdk_sqs::Client,
    queue: String,
    name: String,
    stop: Arc<AtomicBool>,
    retried: Arc<AtomicUsize>,
) {
    let (delivery, name, retried) = (&delivery, name.as_str(), &retried);
    while !stop.load(Ordering::Relaxed) {
        let polled = poll_queue(&sqs, &queue, |batch| async move {
            let answer = delivery.queue(&batch.into(), Some(name)).await;
            retried.fetch_add(answer.batch_item_failures.len(), Ordering::Relaxed);
            Ok(answer)
        })
        .await;
        if let Err(e) = polled {
            eprintln!("{name}: {e}");
        }
    }
}

/// Receives one batch and dies part-way through handling it: whatever it claimed stays
/// leased, and its messages come back after the visibility timeout, undeleted.
async fn killed_worker(delivery: Delivery, sqs: aws_sdk_sqs::Client, queue: String) -> usize {
    let held = AtomicUsize::new(0);
    let (held_ref, delivery) = (&held, &delivery);
    for _ in 0..10 {
        let _ = poll_queue(&sqs, &queue, |batch| async move {
            held_ref.store(batch.records.len(), Ordering::SeqCst);
            let _ = tokio::time::timeout(
                Duration::from_millis(30),
                delivery.queue(&batch.into(), Some("killed")),
            )
            .await;
            Err("killed".to_string())
        })
        .await;
        if held.load(Ordering::SeqCst) > 0 {
            break;
        }
    }
    held.load(Ordering::SeqCst)
}

/// Messages visible, delayed and in flight.
async fn queue_counts(sqs: &aws_sdk_sqs::Client, queue: &str) -> [u64; 3] {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let out = sqs
        .get_queue_attributes()
        .queue_url(queue)
        .attribute_names(A::ApproximateNumberOfMessages)
        .attribute_names(A::ApproximateNumberOfMessagesDelayed)
        .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .unwrap();
    let get = |name| {
        (out.attributes())
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    [
        get(A::ApproximateNumberOfMessages),
        get(A::ApproximateNumberOfMessagesDelayed),
        get(A::ApproximateNumberOfMessagesNotVisible),
    ]
}

/// Prints each task that has not had its calls yet, as the store holds it.
/// The tasks that have not had all their calls yet: a total of calls says nothing, since
/// the killed worker's batch may have been called twice.
fn uncalled<'r>(
    registered: &'r [(usize, Kind, TenantId, TaskId)],
    rx: &Receiver,
) -> Vec<&'r (usize, Kind, TenantId, TaskId)> {
    let mut calls: HashMap<String, usize> = HashMap::new();
    for r in rx.received() {
        *calls.entry(r.path).or_default() += 1;
    }
    (registered.iter())
        .filter(|(i, kind, _, _)| {
            let got = calls.get(&format!("/{}/{i}", kind.name())).copied();
            got.unwrap_or(0) < kind.calls()
        })
        .collect()
}

async fn show_missing(
    registered: &[(usize, Kind, TenantId, TaskId)],
    rx: &Receiver,
    engine: &Engine,
) {
    for (i, kind, tenant, id) in uncalled(registered, rx) {
        let view = engine.get(tenant, id).await;
        eprintln!("task {i} ({kind:?}) lacks calls: {view:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_and_the_sweeper_lose_nothing_send_nothing_twice_and_honour_cancels() {
    // The workers' warnings and errors (or what RUST_LOG asks for), shown if the test fails.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
    let started = Instant::now();
    let mut settings = bootstrap(&bulk_moto(), &unique_prefix("many"))
        .await
        .unwrap();
    settings.table = fresh_dynalite_table("many").await;
    let rx = Arc::new(
        Receiver::start(|path, before| {
            if path.starts_with("/flaky/") && before == 0 {
                Reply::status(500)
            } else {
                Reply::status(200)
            }
        })
        .await,
    );
    let workers: Vec<AwsBackend> = (0..WORKERS)
        .map(|_| backend(&settings, Arc::new(SystemClock)))
        .collect();
    let behind = backend(&settings, Arc::new(Behind(BEHIND)));
    let tenants: Vec<TenantId> = ["north", "south", "west"]
        .iter()
        .map(|t| boomerang_core::testing::unique_tenant(t))
        .collect();
    for t in &tenants {
        workers[0].tenants.mint_key(t).await.unwrap();
    }

    // Batches of one tenant and one kind, taken in turn (so kinds and tenants mix).
    let mut groups: BTreeMap<(usize, Kind), Vec<usize>> = BTreeMap::new();
    for i in 0..TASKS {
        let key = (i % tenants.len(), Kind::of(i));
        groups.entry(key).or_default().push(i);
    }
    let mut chunked: Vec<Vec<(usize, Kind, Vec<usize>)>> = groups
        .into_iter()
        .map(|((t, kind), ids)| {
            let chunks = ids.chunks(BATCH).map(|c| (t, kind, c.to_vec()));
            chunks.rev().collect()
        })
        .collect();
    let mut batches = Vec::new();
    while chunked.iter().any(|c| !c.is_empty()) {
        batches.extend(chunked.iter_mut().filter_map(|c| c.pop()));
    }
    // The far tasks first: every write into a minute's bucket comes before its fire, as it
    // does when tasks are registered 20 minutes ahead on a true clock.
    batches.sort_by_key(|(_, kind, _)| *kind != Kind::Far);
    let far_batches = batches.iter().filter(|(_, k, _)| *k == Kind::Far).count();
    let register = |n: usize, (t, kind, ids): (usize, Kind, Vec<usize>)| {
        let engine = match kind {
            Kind::Far => behind.engine.clone(),
            _ => workers[n % WORKERS].engine.clone(),
        };
        register_batch(engine, tenants[t].clone(), kind, ids, &rx)
    };

    // Those, and a few more for the worker that is killed in the middle of a batch.
    let mut registered = Vec::new();
    let mut batches = batches.into_iter().enumerate();
    for (n, batch) in batches.by_ref().take(far_batches + 3) {
        registered.extend(register(n, batch).await);
    }
    let sqs = aws_sdk_sqs::Client::new(&bulk_moto());
    let queue = settings.timer_queue_url.clone();
    let killed = killed_worker(workers[0].delivery(), sqs.clone(), queue.clone()).await;
    assert!(killed > 0, "the killed worker held a batch");
    let (stop, stop_sweeper) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let retried = Arc::new(AtomicUsize::new(0));
    let mut running = Vec::new();
    for (n, w) in workers.iter().enumerate() {
        running.push(tokio::spawn(work(
            w.delivery(),
            sqs.clone(),
            queue.clone(),
            format!("worker-{n}"),
            stop.clone(),
            retried.clone(),
        )));
    }
    let scheduler = TriggerEmulator::for_backend(&workers[0]);
    let fires = Arc::new(AtomicUsize::new(0));
    let sweeps = Arc::new(AtomicUsize::new(0));
    {
        let (scheduler, fires, halt) = (scheduler.clone(), fires.clone(), stop.clone());
        running.push(tokio::spawn(async move {
            while !halt.load(Ordering::Relaxed) {
                fires.fetch_add(
                    scheduler.fire_due_schedules().await.unwrap_or(0),
                    Ordering::Relaxed,
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }));
        let (engine, timer, failures, sweeps, halt) = (
            workers[1].engine.clone(),
            workers[1].timer.clone(),
            workers[1].system_failures(),
            sweeps.clone(),
            stop_sweeper.clone(),
        );
        running.push(tokio::spawn(async move {
            while !halt.load(Ordering::Relaxed) {
                handle_sweep(&engine, failures.as_ref(), &timer)
                    .await
                    .unwrap();
                sweeps.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
        }));
    }

    // The rest at a steady pace, as traffic arrives, while the workers deliver.
    let mut pace = tokio::time::interval(PACE);
    for (n, batch) in batches {
        pace.tick().await;
        registered.extend(register(n, batch).await);
    }
    assert_eq!(registered.len(), TASKS);
    eprintln!(
        "registered {} tasks in {:.1?}",
        registered.len(),
        started.elapsed()
    );

    // Wait for every call a task should get; then, the sweeper stopped (each run queues a
    // pass), for the queue to be empty: the canceled tasks' messages come due after 30 s,
    // and the killed worker's come back.
    let expected: usize = registered.iter().map(|(_, k, _, _)| k.calls()).sum();
    let ok_calls = || {
        rx.received()
            .iter()
            .filter(|r| !r.path.starts_with("/canceled/"))
            .count()
    };
    let mut said = Instant::now();
    let all_called = try_wait_for(Duration::from_secs(600), || {
        let (calls, left) = (ok_calls(), uncalled(&registered, &rx).len());
        if said.elapsed() > Duration::from_secs(10) {
            said = Instant::now();
            let at = started.elapsed();
            eprintln!("{at:.0?}: {calls} of {expected} calls; {left} tasks still to be called");
        }
        async move { (left == 0).then_some(()) }
    })
    .await;
    if all_called.is_none() {
        show_missing(&registered, &rx, &workers[0].engine).await;
        panic!("timed out waiting for every call");
    }
    stop_sweeper.store(true, Ordering::Relaxed);
    let mut said = Instant::now();
    wait_for("an empty queue", Duration::from_secs(300), || {
        let say = said.elapsed() > Duration::from_secs(10);
        if say {
            said = Instant::now();
        }
        let (sqs, queue, retried) = (&sqs, &queue, &retried);
        async move {
            let counts = queue_counts(sqs, queue).await;
            if say {
                eprintln!(
                    "{:.0?}: queue visible, delayed, in flight: {counts:?}; messages retried: {}",
                    started.elapsed(),
                    retried.load(Ordering::Relaxed)
                );
            }
            (counts == [0, 0, 0]).then_some(())
        }
    })
    .await;
    let drained = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for r in running {
        r.await.unwrap();
    }

    // Every task ended as it should: none lost, every cancel kept.
    let statuses: Vec<(usize, Kind, Status)> = stream::iter(registered.iter())
        .map(|(i, kind, tenant, id)| {
            let engine = &workers[i % WORKERS].engine;
            async move { (*i, *kind, engine.get(tenant, id).await.unwrap().task.status) }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for (i, kind, status) in &statuses {
        let want = if *kind == Kind::Canceled {
            Status::Canceled
        } else {
            Status::Succeeded
        };
        assert_eq!(*status, want, "task {i} ({kind:?})");
    }

    // Every task got its calls, and only the killed worker's batch may have been called
    // again (its claims were taken over after their lease).
    let mut calls: HashMap<String, usize> = HashMap::new();
    for r in rx.received() {
        *calls.entry(r.path).or_default() += 1;
    }
    let mut extra = 0;
    for (i, kind, _, _) in &registered {
        let got = calls
            .get(&format!("/{}/{i}", kind.name()))
            .copied()
            .unwrap_or(0);
        assert!(
            got >= kind.calls(),
            "task {i} ({kind:?}) was called {got} times"
        );
        if *kind == Kind::Canceled {
            assert_eq!(got, 0, "canceled task {i} was called");
        }
        extra += got - kind.calls();
    }
    assert!(
        extra <= killed,
        "{extra} calls beyond the expected, more than the {killed} the killed worker held"
    );
    assert!(
        fires.load(Ordering::Relaxed) >= 1,
        "the far tasks came through a bucket's fire"
    );
    let by_kind = |k: Kind| {
        registered
            .iter()
            .filter(|(_, kind, _, _)| *kind == k)
            .count()
    };
    eprintln!(
        "{TASKS} tasks ({} plain, {} failing once, {} canceled, {} through buckets) across {} tenants, \
         {WORKERS} workers: drained in {drained:.1?}; {} bucket fires, {} sweeps, \
         {extra} repeated calls after the killed worker's batch of {killed}",
        by_kind(Kind::Plain),
        by_kind(Kind::Flaky),
        by_kind(Kind::Canceled),
        by_kind(Kind::Far),
        tenants.len(),
        fires.load(Ordering::Relaxed),
        sweeps.load(Ordering::Relaxed),
    );
}
