//! The slow lane on the emulators: once enough of a destination's calls have taken long,
//! its attempts go to the slow lane's queue, so the timer queue's batches hold only quick
//! calls; a receiver with a thin slow tail keeps its attempts in the shared lane. One
//! worker reads the timer queue a batch at a time, as a delivery function instance does:
//! had the slow attempts stayed in its batches, it would have called them there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use boomerang_aws::backend::{aws, AwsBackend};
use boomerang_aws::bootstrap::bootstrap;
use boomerang_aws::triggers::poll_queue;
use boomerang_aws::AwsSettings;
use boomerang_core::clock::SystemClock;
use boomerang_core::domain::{Status, TaskId, TenantId};
use boomerang_core::engine::{EngineSettings, SLOW_MIN_CALLS};
use boomerang_core::metrics::MetricEvent;
use boomerang_core::testing::harness::RecordedMetrics;
use boomerang_e2e::aws::{dev_config, due_now, moto, unique_prefix};
use boomerang_e2e::{wait_for, Receiver, Reply};

/// What counts as a slow call here, and how long a slow receiver's slow answers take: far
/// above what a quick call takes on a loaded machine running the rest of the suite, so
/// that only the slow answers count.
const SLOW_CALL: Duration = Duration::from_millis(1500);
const SLOW_REPLY: Duration = Duration::from_millis(2000);
/// Calls made a round at a time to the mostly slow receiver until it is marked.
const ROUND: usize = 5;
const SLOW_TASKS: usize = 5;
/// More than one batch's worth.
const FAST_TASKS: usize = 20;
/// The thin-tailed receiver's calls, one in a hundred slow.
const TAIL_TASKS: usize = 200;
const TAIL_EVERY: usize = 100;
/// Ample for any wait here: each is a few seconds when all is well.
const DEADLINE: Duration = Duration::from_secs(60);

/// Reads `queue_url` a batch at a time, handing each batch to the delivery handler, until
/// `stop` is set.
fn worker(
    backend: &AwsBackend,
    queue_url: &str,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let (delivery, sqs, queue_url) = (
        backend.delivery(),
        backend.sqs.clone(),
        queue_url.to_string(),
    );
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            let delivery = &delivery;
            let _ = poll_queue(&sqs, &queue_url, |batch| async move {
                Ok(delivery.queue(&batch.into(), None).await)
            })
            .await;
        }
    })
}

async fn succeeded(backend: &AwsBackend, tenant: &TenantId, ids: &[TaskId]) -> usize {
    let mut done = 0;
    for id in ids {
        let view = backend.engine.get(tenant, id).await.unwrap();
        done += usize::from(view.task.status == Status::Succeeded);
    }
    done
}

/// A backend on fresh resources whose slow lane is read by no one until a test starts a
/// worker on it, the metrics it records, and a tenant of its own.
struct Setup {
    backend: AwsBackend,
    settings: AwsSettings,
    metrics: Arc<RecordedMetrics>,
    tenant: TenantId,
}

impl Setup {
    async fn new(what: &str) -> Self {
        let settings = bootstrap(&moto(), &unique_prefix(what)).await.unwrap();
        let metrics = Arc::new(RecordedMetrics::default());
        let mut config = dev_config(&settings, Arc::new(SystemClock));
        config.metrics = metrics.clone();
        config.engine = EngineSettings {
            slow_call: SLOW_CALL,
            ..EngineSettings::default()
        };
        let backend = aws(&moto(), config).expect("aws backend");
        let tenant = boomerang_core::testing::unique_tenant(what);
        backend.tenants.mint_key(&tenant).await.unwrap();
        Self {
            backend,
            settings,
            metrics,
            tenant,
        }
    }

    async fn register(&self, url: String) -> TaskId {
        let task = due_now(&self.tenant, url);
        let registered = self.backend.engine.register(&self.tenant, task).await;
        registered.unwrap().task.id
    }

    /// Attempts handed to the slow lane so far.
    fn handed(&self) -> usize {
        let events = self.metrics.0.lock().unwrap();
        let handed = events
            .iter()
            .filter(|e| **e == MetricEvent::HandedToSlowLane);
        handed.count()
    }

    /// Waits until `ids`, each either called or handed over, are all settled: `handed`
    /// more handed over since `before`, the rest succeeded. True if any was handed over.
    async fn settled(&self, ids: &[TaskId], before: usize) -> bool {
        wait_for("every attempt called or handed over", DEADLINE, || async {
            let handed = self.handed() - before;
            let done = succeeded(&self.backend, &self.tenant, ids).await;
            (done + handed == ids.len()).then_some(handed > 0)
        })
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_with_most_calls_slow_leaves_the_timer_queues_batches() {
    let s = Setup::new("slow").await;
    let slow_queue = s.settings.slow_queue_url.clone().expect("a slow lane");
    // Two receivers: a destination is a scheme, host and port. Three calls in four to the
    // first are slow.
    let slow_rx = Receiver::start(|path, _| Reply {
        delay: match path.ends_with("/quick") {
            true => Duration::ZERO,
            false => SLOW_REPLY,
        },
        ..Reply::status(200)
    })
    .await;
    let fast_rx = Receiver::always(200).await;
    let stop = Arc::new(AtomicBool::new(false));
    let timer = worker(&s.backend, &s.settings.timer_queue_url, stop.clone());

    // Rounds of calls mark the destination once there are enough of them.
    let mut slow = Vec::new();
    let mut round = 0;
    loop {
        assert!(round < 10, "still unmarked after {} calls", slow.len());
        let (before, mut ids) = (s.handed(), Vec::new());
        for i in 0..ROUND {
            let quick = (round * ROUND + i) % 4 == 3;
            let path = format!("/warm/{round}/{i}{}", if quick { "/quick" } else { "" });
            ids.push(s.register(slow_rx.url(&path)).await);
        }
        slow.extend_from_slice(&ids);
        round += 1;
        if s.settled(&ids, before).await {
            break;
        }
    }
    let called = slow_rx.received().len();
    assert!(
        called >= SLOW_MIN_CALLS as usize,
        "marked after {called} calls"
    );
    let handed = s.handed();

    // The slow destination's attempts are registered first, so that they would lead the
    // timer queue's batches.
    for i in 0..SLOW_TASKS {
        slow.push(s.register(slow_rx.url(&format!("/{i}"))).await);
    }
    let mut fast = Vec::new();
    for i in 0..FAST_TASKS {
        fast.push(s.register(fast_rx.url(&format!("/{i}"))).await);
    }
    wait_for("every quick call", DEADLINE, || async {
        let all = fast_rx.received().len() >= FAST_TASKS
            && succeeded(&s.backend, &s.tenant, &fast).await == FAST_TASKS;
        all.then_some(())
    })
    .await;
    assert_eq!(
        slow_rx.received().len(),
        called,
        "the timer queue's worker called no slow attempt once the destination was marked"
    );
    assert!(
        s.handed() >= handed + SLOW_TASKS,
        "{} handed to the slow lane",
        s.handed()
    );

    // The slow lane's worker calls them.
    let lane = worker(&s.backend, &slow_queue, stop.clone());
    wait_for("every slow call", DEADLINE, || async {
        (succeeded(&s.backend, &s.tenant, &slow).await == slow.len()).then_some(())
    })
    .await;
    assert_eq!(
        slow_rx.received().len(),
        slow.len(),
        "each slow attempt called once"
    );
    stop.store(true, Ordering::Relaxed);
    for w in [timer, lane] {
        w.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_with_a_thin_slow_tail_stays_in_the_shared_lane() {
    let s = Setup::new("tail").await;
    // One call in a hundred is slow, the very first among them: on its own it marks
    // nothing.
    let rx = Receiver::start(|path, _| {
        let i: usize = path.trim_start_matches('/').parse().unwrap();
        Reply {
            delay: match i.is_multiple_of(TAIL_EVERY) {
                true => SLOW_REPLY,
                false => Duration::ZERO,
            },
            ..Reply::status(200)
        }
    })
    .await;
    // Only the timer queue is read: an attempt handed to the slow lane would wait there.
    let stop = Arc::new(AtomicBool::new(false));
    let timer = worker(&s.backend, &s.settings.timer_queue_url, stop.clone());
    let mut ids = Vec::new();
    for i in 0..TAIL_TASKS {
        ids.push(s.register(rx.url(&format!("/{i}"))).await);
    }
    wait_for("every call, or a hand-over", DEADLINE, || async {
        if s.handed() > 0 {
            return Some(());
        }
        let all = rx.received().len() >= TAIL_TASKS
            && succeeded(&s.backend, &s.tenant, &ids).await == TAIL_TASKS;
        all.then_some(())
    })
    .await;
    assert_eq!(s.handed(), 0, "none handed to the slow lane");
    let received = rx.received();
    assert_eq!(received.len(), TAIL_TASKS, "each called once, here");
    // The slow calls came early enough that one slow call marking its destination would
    // have sent many of the rest to the slow lane.
    let first_slow = received.iter().position(|r| r.path == "/0").unwrap();
    assert!(
        received.len() - first_slow > TAIL_TASKS / 2,
        "the first slow call was {first_slow}th"
    );
    stop.store(true, Ordering::Relaxed);
    timer.await.unwrap();
}
