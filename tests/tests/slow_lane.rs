//! The slow lane on the emulators: once a call to a destination has taken long, the
//! destination's attempts go to the slow lane's queue, so the timer queue's batches hold
//! only quick calls. One worker reads the timer queue a batch at a time, as a delivery
//! function instance does: had the slow attempts stayed in its batches, it would have
//! called them there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use boomerang_aws::backend::{aws, AwsBackend};
use boomerang_aws::bootstrap::bootstrap;
use boomerang_aws::triggers::poll_queue;
use boomerang_core::clock::SystemClock;
use boomerang_core::domain::{Status, TaskId, TenantId};
use boomerang_core::engine::EngineSettings;
use boomerang_core::metrics::MetricEvent;
use boomerang_core::testing::harness::RecordedMetrics;
use boomerang_e2e::aws::{dev_config, due_now, moto, unique_prefix};
use boomerang_e2e::{wait_for, Receiver, Reply};

/// What marks a destination slow here, and how long the slow receiver takes.
const SLOW_CALL: Duration = Duration::from_millis(400);
const SLOW_REPLY: Duration = Duration::from_millis(600);
const SLOW_TASKS: usize = 5;
/// More than one batch's worth.
const FAST_TASKS: usize = 20;

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

async fn all_succeeded(backend: &AwsBackend, tenant: &TenantId, ids: &[TaskId]) -> bool {
    for id in ids {
        let view = backend.engine.get(tenant, id).await.unwrap();
        if view.task.status != Status::Succeeded {
            return false;
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_destinations_attempts_leave_the_timer_queues_batches() {
    let settings = bootstrap(&moto(), &unique_prefix("slow")).await.unwrap();
    let slow_queue = settings.slow_queue_url.clone().expect("a slow lane");
    let metrics = Arc::new(RecordedMetrics::default());
    let mut config = dev_config(&settings, Arc::new(SystemClock));
    config.metrics = metrics.clone();
    config.engine = EngineSettings {
        slow_call: SLOW_CALL,
        ..EngineSettings::default()
    };
    let backend = aws(&moto(), config).expect("aws backend");
    // Two receivers: a destination is a scheme, host and port.
    let slow_rx = Receiver::start(|_, _| Reply {
        delay: SLOW_REPLY,
        ..Reply::status(200)
    })
    .await;
    let fast_rx = Receiver::always(200).await;
    let tenant = boomerang_core::testing::unique_tenant("slow");
    backend.tenants.mint_key(&tenant).await.unwrap();
    let register = |url: String| {
        let (engine, task) = (backend.engine.clone(), due_now(&tenant, url));
        let tenant = tenant.clone();
        async move { engine.register(&tenant, task).await.unwrap().task.id }
    };

    // One slow call marks the destination.
    let stop = Arc::new(AtomicBool::new(false));
    let timer = worker(&backend, &settings.timer_queue_url, stop.clone());
    let first = register(slow_rx.url("/first")).await;
    wait_for("the first slow call", Duration::from_secs(60), || async {
        all_succeeded(&backend, &tenant, &[first])
            .await
            .then_some(())
    })
    .await;

    // The slow destination's attempts are registered first, so that they would lead the
    // timer queue's batches.
    let mut slow = vec![first];
    for i in 0..SLOW_TASKS {
        slow.push(register(slow_rx.url(&format!("/{i}"))).await);
    }
    let mut fast = Vec::new();
    for i in 0..FAST_TASKS {
        fast.push(register(fast_rx.url(&format!("/{i}"))).await);
    }
    wait_for("every quick call", Duration::from_secs(60), || async {
        all_succeeded(&backend, &tenant, &fast).await.then_some(())
    })
    .await;
    let slow_calls = || slow_rx.received().len();
    assert_eq!(
        slow_calls(),
        1,
        "the timer queue's worker called no slow attempt"
    );
    let handed = || {
        let events = metrics.0.lock().unwrap();
        events
            .iter()
            .filter(|e| **e == MetricEvent::HandedToSlowLane)
            .count()
    };
    assert!(
        handed() >= SLOW_TASKS,
        "{} handed to the slow lane",
        handed()
    );

    // The slow lane's worker calls them.
    let lane = worker(&backend, &slow_queue, stop.clone());
    wait_for("every slow call", Duration::from_secs(60), || async {
        all_succeeded(&backend, &tenant, &slow).await.then_some(())
    })
    .await;
    assert_eq!(
        slow_calls(),
        SLOW_TASKS + 1,
        "each slow attempt called once"
    );
    stop.store(true, Ordering::Relaxed);
    for w in [timer, lane] {
        w.await.unwrap();
    }
}
