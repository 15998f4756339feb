//! The AWS backend through outages of the services it stands on. A proxy between the real
//! `boomerang serve --backend aws` and the emulators injects the faults (refused sends,
//! throttles); callbacks are registered at the emulators' pace throughout. Each test
//! checks that every acknowledged callback is delivered (none lost), counts duplicate
//! calls, and prints how long after the faults ended everything was delivered.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use boomerang_api::request::{
    BatchRequest, BreakerSettingsRequest, BulkRequest, FilterRequest, TaskRequest,
};
use boomerang_client::Client;
use boomerang_core::domain::BulkAction;
use boomerang_e2e::aws::{dynalite_endpoint, moto_endpoint};
use boomerang_e2e::bulk_jobs::{wait_finished, wait_under_way};
use boomerang_e2e::fault_proxy::{Fault, FaultProxy, Rule, Service};
use boomerang_e2e::{
    callback, header, schedule_max, wait_for, Backend, Callback, Receiver, Reply, Server,
    ServerOptions,
};

/// Callbacks registered a second while the faults last.
const RATE: u32 = 10;
/// How long delivery may take once the faults end before the test fails.
const REPAIR_PATIENCE: Duration = Duration::from_secs(240);

/// Registers `RATE` callbacks a second for `lasting`, each to its own path on `rx`, under
/// an idempotency key: one the server refuses (a store it cannot write) is sent again until
/// it is acknowledged, as a client would. Returns how many were registered, and how many
/// times the server refused one.
async fn register_throughout(api: &Client, rx: &Receiver, lasting: Duration) -> (usize, usize) {
    let started = Instant::now();
    let mut sent = Vec::new();
    let mut n = 0;
    while started.elapsed() < lasting {
        let request = callback(rx.url(&format!("/t/{n}"))).delay("1s");
        let api = api.clone();
        sent.push(tokio::spawn(register_until_acknowledged(api, request, n)));
        n += 1;
        tokio::time::sleep_until((started + Duration::from_secs(1) * n as u32 / RATE).into()).await;
    }
    let mut refused = 0;
    for registration in sent {
        refused += registration.await.expect("a registration");
    }
    (n, refused)
}

/// Sends the registration until it is acknowledged; returns how often it was refused.
async fn register_until_acknowledged(api: Client, request: TaskRequest, n: usize) -> usize {
    let key = format!("outage-{n}");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut refused = 0;
    loop {
        match api.create(&request, Some(&key)).await {
            Ok(_) => return refused,
            Err(e) if Instant::now() < deadline && e.status().is_none_or(|s| s >= 500) => {
                refused += 1;
                tokio::time::sleep(Duration::from_millis(500)).await
            }
            Err(e) => panic!("registration {n} refused: {e}"),
        }
    }
}

/// Waits until each of the `n` paths was called, and prints how long after the faults
/// ended that was; returns the calls beyond one per path.
async fn every_path_called(rx: &Receiver, n: usize, faults_ended: Instant) -> usize {
    let duplicates = wait_for("every callback delivered", REPAIR_PATIENCE, || async {
        let mut calls: HashMap<String, usize> = HashMap::new();
        for r in rx.received() {
            *calls.entry(r.path).or_default() += 1;
        }
        let delivered = (0..n).filter(|i| calls.contains_key(&format!("/t/{i}")));
        (delivered.count() == n).then(|| calls.values().map(|c| c - 1).sum::<usize>())
    })
    .await;
    println!(
        "delivered in full {:.1} s after the faults ended; {duplicates} duplicate calls",
        faults_ended.elapsed().as_secs_f64()
    );
    duplicates
}

/// SQS refuses every send for a minute (an outage of the queue's API) while callbacks are
/// registered: each is stored unarmed, and the sweep arms it once sends work again.
#[tokio::test]
async fn a_minute_of_refused_queue_sends_loses_nothing() {
    let window = Duration::from_secs(60);
    let proxy = FaultProxy::start(&moto_endpoint()).await;
    let rx = Receiver::always(200).await;
    let server = Server::aws_through(&proxy, Service::Sqs);
    proxy.inject(
        Rule::every(Service::Sqs, Fault::Outage, window).on(&["SendMessage", "SendMessageBatch"]),
    );
    let (n, _) = register_throughout(&server.api(), &rx, window).await;
    let faults_ended = Instant::now();
    assert!(
        proxy.injected_into("SendMessage") + proxy.injected_into("SendMessageBatch") > 0,
        "sends were refused"
    );
    let duplicates = every_path_called(&rx, n, faults_ended).await;
    println!(
        "{n} callbacks registered through {} refused sends",
        proxy.injected()
    );
    assert!(
        duplicates <= n / 10,
        "{duplicates} duplicate calls for {n} callbacks"
    );
}

/// DynamoDB throttles 40 % of calls for 30 s while callbacks are registered: what the
/// server acknowledged is delivered; what it could not store it refused, and the client's
/// retry under the same idempotency key registers it once.
#[tokio::test]
async fn throttled_table_writes_lose_nothing_acknowledged() {
    let window = Duration::from_secs(30);
    let proxy = FaultProxy::start(&dynalite_endpoint()).await;
    let rx = Receiver::always(200).await;
    let server = Server::aws_through(&proxy, Service::DynamoDb);
    proxy.inject(Rule::every(Service::DynamoDb, Fault::Throttle, window).share(0.4));
    let (n, refused) = register_throughout(&server.api(), &rx, window).await;
    let faults_ended = Instant::now();
    assert!(proxy.injected() > 0, "calls were throttled");
    let duplicates = every_path_called(&rx, n, faults_ended).await;
    println!(
        "{n} callbacks registered through {} throttled table calls \
         ({refused} registrations refused and sent again)",
        proxy.injected()
    );
    assert!(
        duplicates <= n / 10,
        "{duplicates} duplicate calls for {n} callbacks"
    );
}

/// The timer queue loses every message (purged, as a deleted and recreated queue would
/// be): the tasks it held are `scheduled`, with nothing to fire them. `boomerang aws
/// rearm` arms each again from the table, and each is delivered once; a second run finds
/// every segment done, until `--restart` reads the table again.
#[tokio::test]
async fn rearm_arms_every_unfinished_task_after_the_queue_is_lost() {
    let n = 40;
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions::on(Backend::Aws));
    let api = server.api();
    // One request: on a loaded machine forty, one by one, could take longer than the delay,
    // and the first would be delivered before the queue is purged.
    let tasks = (0..n)
        .map(|i| callback(rx.url(&format!("/t/{i}"))).delay("25s"))
        .collect();
    let batch = api.create_batch(&BatchRequest { tasks }).await;
    let registered = batch.expect("registered").tasks;
    assert!(
        registered.iter().all(|t| t.task.is_some()),
        "{registered:?}"
    );
    let queue = server
        .env_var("BOOMERANG_TIMER_QUEUE_URL")
        .expect("the server's timer queue");
    let sqs = aws_sdk_sqs::Client::new(&boomerang_e2e::aws::moto());
    sqs.purge_queue()
        .queue_url(&queue)
        .send()
        .await
        .expect("purged");

    let first = server.cli(&["aws", "rearm", "--segments", "4", "--page", "25"]);
    assert!(first.contains("done in"), "{first}");
    let armed: usize = first
        .lines()
        .filter_map(|l| l.split(" items read, ").nth(1))
        .filter_map(|rest| rest.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert_eq!(armed, n, "every unfinished task armed once:\n{first}");
    let again = server.cli(&["aws", "rearm", "--segments", "4", "--page", "25"]);
    assert!(
        again.contains("done in") && again.contains(" 0 armed"),
        "{again}"
    );

    let since = Instant::now();
    let duplicates = every_path_called(&rx, n, since).await;
    assert_eq!(duplicates, 0, "each delivered once");
}

/// One timer message in a thousand is poisoned: every time a worker takes it, the table
/// fails the reads of its task, so its handling fails again and again; SQS moves it to the
/// system-failures queue after its fifth receive, and the sweeper hands it back. The other
/// 999 go out meanwhile, none held behind it; once the reads work again, the poisoned one
/// is delivered too.
#[tokio::test]
async fn a_poisoned_timer_message_holds_nothing_back_and_is_delivered_in_the_end() {
    const TASKS: usize = 1_000;
    let proxy = FaultProxy::start(&dynalite_endpoint()).await;
    let rx = Receiver::always(200).await;
    let server = Server::aws_through(&proxy, Service::DynamoDb);
    let api = server.api();
    let mut ids = Vec::new();
    for first in (0..TASKS).step_by(100) {
        let tasks = (first..first + 100)
            .map(|i| callback(rx.url(&format!("/t/{i}"))).delay("10s"))
            .collect();
        let answer = (api.create_batch(&BatchRequest { tasks }).await).expect("batch registered");
        ids.extend(
            answer
                .tasks
                .into_iter()
                .map(|t| t.task.expect("registered").id),
        );
    }
    // One of the last batch: its rule is in force well before its timer fires.
    let poisoned = TASKS - 50;
    proxy.inject(
        Rule::every(
            Service::DynamoDb,
            Fault::ServerError,
            Duration::from_secs(3600),
        )
        .containing(&ids[poisoned].to_string()),
    );

    // Every other callback is delivered while the poisoned message fails.
    wait_for("every healthy callback", REPAIR_PATIENCE, || async {
        let paths: std::collections::HashSet<String> =
            rx.received().into_iter().map(|r| r.path).collect();
        (paths.len() >= TASKS - 1).then_some(())
    })
    .await;
    assert_eq!(
        rx.count(&format!("/t/{poisoned}")),
        0,
        "its reads all failed"
    );
    // It went the whole way round: SQS moved it to the system-failures queue, and the
    // sweeper handed it back (counted as a repair).
    wait_for("the sweeper to hand it back", REPAIR_PATIENCE, || async {
        let metrics = api.metrics().await.expect("metrics");
        let repaired = (metrics.lines())
            .find_map(|l| l.strip_prefix("boomerang_sweep_repaired_total "))
            .and_then(|v| v.trim().parse::<f64>().ok());
        repaired.filter(|n| *n >= 1.0)
    })
    .await;
    proxy.lift_all();
    let lifted = Instant::now();
    let duplicates = every_path_called(&rx, TASKS, lifted).await;
    println!(
        "{TASKS} callbacks, one poisoned: the others delivered while {} of its reads were refused",
        proxy.injected()
    );
    assert!(
        duplicates <= TASKS / 100,
        "{duplicates} duplicate calls for {TASKS} callbacks"
    );
}

/// Failed tasks the bulk job under faults retries.
const BULK_TASKS: usize = 300;

/// A bulk retry job on the AWS backend while DynamoDB throttles and fails a share of its
/// calls, and then is down altogether for 15 s, as the job reads its pages and writes each
/// task's new round: the job finishes with every task counted once, each task gets exactly
/// one new round (attempt 2; a call whose result could not be written is made again as the
/// same attempt, at least once), and every task ends succeeded.
#[tokio::test]
async fn a_bulk_retry_through_throttles_errors_and_an_outage_retries_each_task_once() {
    let proxy = FaultProxy::start(&dynalite_endpoint()).await;
    let up = Arc::new(AtomicBool::new(false));
    let rx = {
        let up = up.clone();
        Receiver::start(move |_, _| {
            Reply::status(if up.load(Ordering::SeqCst) { 200 } else { 500 })
        })
        .await
    };
    let server = Server::aws_through(&proxy, Service::DynamoDb);
    let api = server.api();
    // The destination is down for the first part: its breaker would leave its tasks
    // waiting instead of failing them.
    let settings = BreakerSettingsRequest {
        failures: Some(10_000),
        ..BreakerSettingsRequest::default()
    };
    api.put_breaker_settings(&settings)
        .await
        .expect("breaker settings");
    for first in (0..BULK_TASKS).step_by(100) {
        let tasks = (first..first + 100)
            .map(|i| callback(rx.url(&format!("/b/{i}"))).retry(schedule_max(&["1s"], 1)))
            .collect();
        api.create_batch(&BatchRequest { tasks })
            .await
            .expect("batch registered");
    }
    let bulk = BulkRequest {
        action: Some(BulkAction::Retry),
        filter: FilterRequest {
            url_prefix: Some(rx.url("/b/")),
            ..FilterRequest::default()
        },
        per_second: Some(20),
        ..BulkRequest::default()
    };
    wait_for("every task failed", REPAIR_PATIENCE, || async {
        let preview = api.preview_bulk(&bulk).await.ok()?;
        (preview.count == BULK_TASKS as u64).then_some(())
    })
    .await;

    up.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let job = api.start_bulk(&bulk).await.expect("job started");
    wait_under_way(&api, &job, 30, REPAIR_PATIENCE).await;
    let faulty = Duration::from_secs(20);
    proxy.inject(Rule::every(Service::DynamoDb, Fault::Throttle, faulty).share(0.3));
    proxy.inject(Rule::every(Service::DynamoDb, Fault::ServerError, faulty).share(0.1));
    wait_under_way(&api, &job, 100, REPAIR_PATIENCE).await;
    proxy.inject(Rule::every(
        Service::DynamoDb,
        Fault::Outage,
        Duration::from_secs(15),
    ));
    let finished = wait_finished(&api, &job, REPAIR_PATIENCE).await;
    println!(
        "bulk retry of {BULK_TASKS} tasks finished in {:.1} s through {} injected faults",
        started.elapsed().as_secs_f64(),
        proxy.injected()
    );
    assert!(proxy.injected() > 0, "faults hit the job");
    assert_eq!(
        finished.progress.matched, BULK_TASKS as u64,
        "{:?}",
        finished.progress
    );
    assert_eq!(
        finished.progress.done, BULK_TASKS as u64,
        "{:?}",
        finished.progress
    );

    let all: Vec<String> = (0..BULK_TASKS).map(|i| format!("/b/{i}")).collect();
    let rounds = BTreeSet::from(["1".to_string(), "2".to_string()]);
    let attempts = wait_for("every task retried", REPAIR_PATIENCE, || async {
        let mut attempts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in rx.received() {
            let attempt = header(&r, "boomerang-attempt");
            attempts.entry(r.path).or_default().insert(attempt);
        }
        all.iter()
            .all(|p| attempts.get(p).is_some_and(|a| a.contains("2")))
            .then_some(attempts)
    })
    .await;
    for path in &all {
        assert_eq!(attempts.get(path), Some(&rounds), "{path}: one new round");
    }
    wait_for("every task succeeded", REPAIR_PATIENCE, || async {
        let preview = api.preview_bulk(&bulk).await.ok()?;
        (preview.count == 0).then_some(())
    })
    .await;
}
