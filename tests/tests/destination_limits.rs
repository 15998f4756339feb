//! A tenant's own limit of calls at once to one destination holds across instances: two
//! AWS backends (as two delivery function instances, each with lanes of its own) share the
//! table (dynalite, whose conditional writes are atomic); a slow receiver never has more
//! of the tenant's calls in flight than the limit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use boomerang_aws::backend::{aws_with_clients, AwsBackend, AwsClients};
use boomerang_aws::bootstrap::bootstrap;
use boomerang_aws::triggers::poll_queue;
use boomerang_core::clock::SystemClock;
use boomerang_core::domain::Status;
use boomerang_e2e::aws::{
    dev_config, due_now, dynalite, fresh_dynalite_table, moto, unique_prefix,
};
use boomerang_e2e::{wait_for, Receiver, Reply};

/// How long the receiver takes to answer each call.
const SLOW: Duration = Duration::from_millis(800);
const LIMIT: usize = 2;
/// Ten for each instance.
const TASKS: usize = 20;

fn instance(settings: &boomerang_aws::AwsSettings) -> AwsBackend {
    let (table, queues) = (dynalite(), moto());
    let clients = AwsClients {
        dynamodb: aws_sdk_dynamodb::Client::new(&table),
        sqs: aws_sdk_sqs::Client::new(&queues),
        scheduler: aws_sdk_scheduler::Client::new(&queues),
    };
    aws_with_clients(clients, dev_config(settings, Arc::new(SystemClock))).expect("aws backend")
}

/// The most calls that were in flight at once, each taking `SLOW` from its arrival.
fn most_at_once(arrivals: &[std::time::Instant]) -> usize {
    (arrivals.iter())
        .map(|t| {
            let started_before = |a: &&std::time::Instant| *a <= t && t.duration_since(**a) < SLOW;
            arrivals.iter().filter(started_before).count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_destination_limit_holds_across_instances() {
    // One table; a timer queue each, so that both instances have work at once (on one
    // queue, one instance's receives could take it all).
    let table = fresh_dynalite_table("dest").await;
    let mut settings = Vec::new();
    for _ in 0..2 {
        let mut own = bootstrap(&moto(), &unique_prefix("dest")).await.unwrap();
        own.table = table.clone();
        settings.push(own);
    }
    let rx = Receiver::start(|_, _| Reply {
        delay: SLOW,
        ..Reply::status(200)
    })
    .await;
    let instances = [instance(&settings[0]), instance(&settings[1])];
    let tenant = boomerang_core::testing::unique_tenant("dest");
    let tenants = &instances[0].tenants;
    tenants.mint_key(&tenant).await.unwrap();
    tenants
        .set_destination_limit(&tenant, Some(LIMIT))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..TASKS {
        let engine = &instances[i % 2].engine;
        let task = due_now(&tenant, rx.url(&format!("/d/{i}")));
        ids.push(engine.register(&tenant, task).await.unwrap().task.id);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for (n, backend) in instances.iter().enumerate() {
        let (delivery, sqs) = (backend.delivery(), backend.sqs.clone());
        let (queue, stop) = (settings[n].timer_queue_url.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let name = format!("instance-{n}");
            while !stop.load(Ordering::Relaxed) {
                let (delivery, name) = (&delivery, name.as_str());
                let _ = poll_queue(&sqs, &queue, |batch| async move {
                    Ok(delivery.queue(&batch.into(), Some(name)).await)
                })
                .await;
            }
        }));
    }
    wait_for("every call", Duration::from_secs(120), || async {
        (rx.received().len() >= TASKS).then_some(())
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }

    let arrivals: Vec<_> = rx.received().iter().map(|r| r.at).collect();
    assert_eq!(arrivals.len(), TASKS, "each task called once");
    let at_once = most_at_once(&arrivals);
    assert!(
        at_once <= LIMIT,
        "{at_once} calls at once, over the limit of {LIMIT}"
    );
    // Both instances called. Each has ten tasks due at once and would call two of them at
    // once by its own lanes (which take the tenant's limit too): only the shared slots
    // keep the two together at two (without them: four at once).
    let mut calls: BTreeMap<String, usize> = BTreeMap::new();
    for id in &ids {
        let view = instances[0].engine.get(&tenant, id).await.unwrap();
        assert_eq!(view.task.status, Status::Succeeded);
        for a in &view.attempts {
            *calls
                .entry(a.worker.clone().unwrap_or_default())
                .or_default() += 1;
        }
    }
    assert_eq!(calls.len(), 2, "both instances called: {calls:?}");
}
