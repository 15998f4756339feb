//! `boomerang-bench aws-drain`: how fast the AWS backend puts work read back from the table
//! on the timer queue. Two paths: a minute's bucket, read and queued by its fire
//! invocation after invocation (`BucketFire::run`, what the delivery function runs for a
//! bucket), and tasks whose timer failed to arm, re-armed by the sweeper's runs
//! (`lambda::handle_sweep`, what the sweeper function runs).
//!
//! It runs against the emulator at `AWS_ENDPOINT_URL` on fresh resources, with the real
//! API, engine and adapters. An SDK interceptor times every call the measured code makes.
//! From that come the calls per 1,000 entries, and the longest chain of calls each made
//! after an earlier one had answered: what an invocation waits for in the region, where a
//! call takes about the same time whatever it carries. The emulator answers one call at a
//! time, so its own speed says little about calls made side by side; and since its sends
//! slow down as a queue fills, the bench spreads the timer messages over many queues
//! ([`Spread`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextMut, BeforeSerializationInterceptorContextRef,
    FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_sqs::operation::send_message::SendMessageInput;
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use boomerang_aws::backend::{aws_with_clients, AwsBackendConfig, AwsClients};
use boomerang_aws::buckets::MAX_PER_FIRE;
use boomerang_aws::keys::{BUCKET_SHARDS, DUE_SHARDS, SWEEP_PAGE};
use boomerang_aws::lambda::{handle_sweep, SweeperReport, SWEEP_BUDGET};
use boomerang_aws::messages::{BucketWork, TimerMessage};
use boomerang_aws::plan::bucket_fire_at;
use boomerang_aws::{AwsBackend, AwsSettings, SdkConfig};
use boomerang_core::clock::Clock;
use boomerang_core::domain::TenantId;
use boomerang_core::engine::EngineSettings;
use boomerang_core::metrics::NoMetrics;
use chrono::{DateTime, DurationRound, Utc};
use serde_json::{json, Value};
use tower::ServiceExt;

#[derive(clap::Args)]
pub struct AwsDrainArgs {
    /// Entries in one minute's bucket, and tasks left without a timer for the sweeper.
    #[arg(long, default_value_t = 40_000)]
    pub entries: usize,
    /// The planning latency of one DynamoDB or SQS call in the region, in ms.
    #[arg(long, default_value_t = 10)]
    pub call_ms: u64,
}

/// Registrations in one request of the batch route, and requests at once.
const BATCH: usize = 100;
const REQUESTS_AT_ONCE: usize = 8;
/// Messages the bench lets one emulator queue hold before it sends the next to a fresh
/// one ([`Spread`]).
const PER_QUEUE: usize = 100;
/// The minute of the projection.
const BIG_MINUTE: usize = 1_000_000;
/// How often the sweeper runs: once a minute, and its half-minute pass.
const SWEEP_EVERY_S: f64 = 30.0;
/// The sweeper function's timeout (`infra/lib/boomerang-stack.ts`).
const SWEEPER_TIMEOUT_S: f64 = 60.0;

pub async fn run(args: AwsDrainArgs) -> Result<()> {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").context(
        "`bench aws-drain` runs against an emulator: set AWS_ENDPOINT_URL (moto server)",
    )?;
    if !boomerang_aws::is_loopback_endpoint(&endpoint) {
        bail!("AWS_ENDPOINT_URL={endpoint} is not a loopback address; the bench only talks to a local emulator");
    }
    if args.entries == 0 || args.entries > BIG_MINUTE {
        bail!("--entries must be between 1 and {BIG_MINUTE}");
    }
    if !(1..=1000).contains(&args.call_ms) {
        bail!("--call-ms must be between 1 and 1000");
    }
    let bench = Bench::start(&endpoint, args.entries).await?;
    println!("mode:              aws-drain");
    println!("emulator:          {endpoint} (timer messages spread over its queues, {PER_QUEUE} to a queue)");
    println!(
        "entries:           {} in one minute's bucket; {} tasks left without a timer",
        args.entries, args.entries
    );
    println!("invocations and sweeper runs one at a time, as one function instance runs them");

    let minute = bench.fill_minute(args.entries).await?;
    let fire = bench.drain_minute(minute).await?;
    print_bucket(&fire, args.call_ms);

    bench.leave_unarmed(args.entries).await?;
    let sweep = bench.sweep_all(args.entries).await?;
    print_sweep(&sweep, args.call_ms);
    Ok(())
}

/// The system clock moved by a settable offset: how the bench reaches a bucket's fire time
/// and makes tasks overdue without waiting.
#[derive(Default)]
struct ShiftedClock(Mutex<chrono::Duration>);

impl ShiftedClock {
    fn set(&self, to: DateTime<Utc>) {
        *self.0.lock().expect("clock") = to - Utc::now();
    }

    fn shift(&self, by: chrono::Duration) {
        *self.0.lock().expect("clock") += by;
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + *self.0.lock().expect("clock")
    }
}

/// One call the measured code made: "Service Operation", and when it began and ended
/// (retries included).
#[derive(Clone, Debug)]
struct Call {
    operation: String,
    began: Instant,
    ended: Instant,
}

/// The calls made since the last [`Calls::take`], and the bucket work they put on the
/// timer queue.
#[derive(Clone, Default)]
struct Calls {
    made: Arc<Mutex<Vec<Call>>>,
    handed_on: Arc<Mutex<Vec<BucketWork>>>,
}

impl Calls {
    fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.made.lock().expect("calls"))
    }

    fn take_handed_on(&self) -> Vec<BucketWork> {
        std::mem::take(&mut *self.handed_on.lock().expect("handed on"))
    }

    fn timer(&self, service: &'static str, spread: Option<Arc<Spread>>) -> CallTimer {
        CallTimer {
            service,
            calls: self.clone(),
            spread,
        }
    }
}

/// Where the measured code's timer messages go on the emulator: a pool of fresh queues,
/// [`PER_QUEUE`] messages to each, instead of the one timer queue. The emulator counts every
/// message of a queue on each send, so its sends slow down as a queue fills, which the
/// region's do not; what the code sends, and how, stays the same.
struct Spread {
    timer_queue: String,
    pool: Vec<String>,
    sent: std::sync::atomic::AtomicUsize,
}

impl Spread {
    /// Makes `queues` fresh queues, a few at once.
    async fn create(sqs: &aws_sdk_sqs::Client, timer_queue: &str, queues: usize) -> Result<Spread> {
        let prefix = format!("drain-{}", ulid::Ulid::new().to_string().to_lowercase());
        let mut pool = Vec::with_capacity(queues);
        for wave in (0..queues).collect::<Vec<_>>().chunks(REQUESTS_AT_ONCE) {
            let mut creating = tokio::task::JoinSet::new();
            for i in wave {
                let (sqs, name) = (sqs.clone(), format!("{prefix}-{i}"));
                creating.spawn(async move { sqs.create_queue().queue_name(name).send().await });
            }
            while let Some(created) = creating.join_next().await {
                pool.push(created??.queue_url.context("a queue without a URL")?);
            }
        }
        Ok(Spread {
            timer_queue: timer_queue.to_string(),
            pool,
            sent: Default::default(),
        })
    }

    /// The queue for the next `count` messages to `queue`.
    fn route(&self, queue: &mut Option<String>, count: usize) {
        if queue.as_deref() != Some(self.timer_queue.as_str()) || self.pool.is_empty() {
            return;
        }
        let sent = (self.sent).fetch_add(count, std::sync::atomic::Ordering::Relaxed);
        *queue = Some(self.pool[sent / PER_QUEUE % self.pool.len()].clone());
    }
}

/// When the call being made began (kept in its config bag).
#[derive(Clone, Copy, Debug)]
struct Began(Instant);

impl Storable for Began {
    type Storer = StoreReplace<Self>;
}

#[derive(Clone)]
struct CallTimer {
    service: &'static str,
    calls: Calls,
    spread: Option<Arc<Spread>>,
}

impl std::fmt::Debug for CallTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CallTimer({})", self.service)
    }
}

impl Intercept for CallTimer {
    fn name(&self) -> &'static str {
        "DrainCallTimer"
    }

    /// Notes when the call began, and keeps the bucket work a send carries: the bench
    /// runs it as the next invocation itself, since it empties the emulator's queue.
    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        cfg.interceptor_state().store_put(Began(Instant::now()));
        let input = context.input();
        let bodies: Vec<&str> = if let Some(one) = input.downcast_ref::<SendMessageInput>() {
            one.message_body.as_deref().into_iter().collect()
        } else if let Some(batch) = input.downcast_ref::<SendMessageBatchInput>() {
            (batch.entries.iter().flatten())
                .map(|e| e.message_body.as_str())
                .collect()
        } else {
            Vec::new()
        };
        let work = bodies
            .into_iter()
            .filter_map(|body| match TimerMessage::parse(body)? {
                TimerMessage::Bucket { bucket } => Some(bucket),
                _ => None,
            });
        (self.calls.handed_on.lock().expect("handed on")).extend(work);
        Ok(())
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(spread) = &self.spread else {
            return Ok(());
        };
        let input = context.input_mut();
        if let Some(one) = input.downcast_mut::<SendMessageInput>() {
            spread.route(&mut one.queue_url, 1);
        } else if let Some(batch) = input.downcast_mut::<SendMessageBatchInput>() {
            let count = batch.entries.as_ref().map_or(0, Vec::len);
            spread.route(&mut batch.queue_url, count);
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        _context: &FinalizerInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let ended = Instant::now();
        let operation = cfg
            .load::<Metadata>()
            .map_or_else(|| "unknown".to_string(), |m| m.name().to_string());
        let began = cfg.load::<Began>().map_or(ended, |b| b.0);
        (self.calls.made.lock().expect("calls")).push(Call {
            operation: format!("{} {operation}", self.service),
            began,
            ended,
        });
        Ok(())
    }
}

fn timed_clients(sdk: &SdkConfig, calls: &Calls, spread: Spread) -> AwsClients {
    AwsClients {
        dynamodb: aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(sdk)
                .interceptor(calls.timer("DynamoDB", None))
                .build(),
        ),
        sqs: aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::config::Builder::from(sdk)
                .interceptor(calls.timer("SQS", Some(Arc::new(spread))))
                .build(),
        ),
        scheduler: aws_sdk_scheduler::Client::from_conf(
            aws_sdk_scheduler::config::Builder::from(sdk)
                .interceptor(calls.timer("Scheduler", None))
                .build(),
        ),
    }
}

/// The most calls in a chain where each began after the one before had answered: with
/// every call taking the same time, the calls an invocation waits for one after another.
fn chain_length(calls: &[Call]) -> usize {
    // Ends sort before beginnings at the same instant: a call begun as another answered
    // waited for it.
    let mut events: Vec<(Instant, bool, usize)> = (calls.iter().enumerate())
        .flat_map(|(i, c)| [(c.began, true, i), (c.ended, false, i)])
        .collect();
    events.sort();
    let mut depth = vec![0; calls.len()];
    let mut longest_ended = 0;
    for (_, begins, i) in events {
        if begins {
            depth[i] = longest_ended + 1;
        } else {
            longest_ended = longest_ended.max(depth[i]);
        }
    }
    longest_ended
}

/// One invocation of the bucket fire, or one sweeper run.
struct Step {
    armed: usize,
    took: Duration,
    calls: Vec<Call>,
}

impl Step {
    fn chain(&self) -> usize {
        chain_length(&self.calls)
    }
}

/// The invocations of one drain of the minute, or the runs of one repair.
struct Pass {
    steps: Vec<Step>,
}

impl Pass {
    fn entries(&self) -> usize {
        self.steps.iter().map(|s| s.armed).sum()
    }

    fn seconds(&self) -> f64 {
        self.steps.iter().map(|s| s.took.as_secs_f64()).sum()
    }

    fn calls(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for call in self.steps.iter().flat_map(|s| &s.calls) {
            *counts.entry(call.operation.as_str()).or_default() += 1;
        }
        counts
    }

    /// Calls of `service` per 1,000 entries, and the operations behind them.
    fn per_thousand(&self, service: &str) -> String {
        let per = 1000.0 / self.entries().max(1) as f64;
        let prefix = format!("{service} ");
        let ops: Vec<(&str, f64)> = (self.calls().into_iter())
            .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?, v as f64 * per)))
            .collect();
        let total: f64 = ops.iter().map(|(_, v)| v).sum();
        let parts: Vec<String> = ops.iter().map(|(k, v)| format!("{k} {v:.1}")).collect();
        format!("{total:.1} {service} ({})", parts.join(", "))
    }

    fn print(&self, unit: &str) {
        println!(
            "  emulator:        {} entries in {} {unit}{}, {:.2} s: {:.0} entries/s",
            self.entries(),
            self.steps.len(),
            if self.steps.len() == 1 { "" } else { "s" },
            self.seconds(),
            self.entries() as f64 / self.seconds().max(1e-9)
        );
        println!(
            "  calls per 1,000: {}; {}",
            self.per_thousand("DynamoDB"),
            self.per_thousand("SQS")
        );
    }
}

/// `what`: N entries, C calls, D one after another.
fn print_chain(what: &str, step: &Step) {
    println!(
        "    {what:<24} {} entries, {} calls, {} one after another ({} at the emulator)",
        step.armed,
        step.calls.len(),
        step.chain(),
        ms(step.took)
    );
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

struct Bench {
    calls: Calls,
    clock: Arc<ShiftedClock>,
    backend: AwsBackend,
    /// The same table, with a timer queue that does not exist: its registrations are
    /// stored without a timer, for the sweeper.
    broken: axum::Router,
    router: axum::Router,
    api_key: String,
}

impl Bench {
    /// Fresh resources, and queues for the timer messages of `entries` bucket entries and
    /// as many repairs.
    async fn start(endpoint: &str, entries: usize) -> Result<Bench> {
        let sdk = boomerang_aws::emulator_config(endpoint);
        let prefix = format!("drain-{}", ulid::Ulid::new().to_string().to_lowercase());
        let settings = boomerang_aws::bootstrap::bootstrap(&sdk, &prefix).await?;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let queues = (2 * entries + 1000).div_ceil(PER_QUEUE);
        let spread = Spread::create(&sqs, &settings.timer_queue_url, queues).await?;
        let calls = Calls::default();
        let clients = timed_clients(&sdk, &calls, spread);
        let clock = Arc::new(ShiftedClock::default());
        let config = |settings: AwsSettings| AwsBackendConfig {
            settings,
            dev: true,
            clock: clock.clone(),
            metrics: Arc::new(NoMetrics),
            metrics_view: None,
            spans: None,
            engine: EngineSettings::default(),
        };
        let backend = aws_with_clients(clients.clone(), config(settings.clone()))?;
        let mut refused = settings.clone();
        refused.timer_queue_url = format!("{}-missing", settings.timer_queue_url);
        let broken = aws_with_clients(clients, config(refused))?;
        let minted = backend.tenants.mint_key(&TenantId::parse("drain")?).await?;
        Ok(Bench {
            calls,
            clock,
            router: boomerang_http::router(backend.engine.clone()),
            broken: boomerang_http::router(broken.engine.clone()),
            backend,
            api_key: minted.api_key,
        })
    }

    /// Registers `count` callbacks through the batch route, a few requests at once;
    /// `task(i)` is the i-th.
    async fn register(
        &self,
        router: &axum::Router,
        count: usize,
        task: impl Fn(usize) -> Value,
    ) -> Result<()> {
        let tasks: Vec<Value> = (0..count).map(task).collect();
        for wave in tasks.chunks(BATCH * REQUESTS_AT_ONCE) {
            let mut requests = tokio::task::JoinSet::new();
            for chunk in wave.chunks(BATCH) {
                let request = Request::builder()
                    .method("POST")
                    .uri("/v1/tasks/batch")
                    .header("authorization", format!("Bearer {}", self.api_key))
                    .header("content-type", "application/json")
                    .body(Body::from(json!({ "tasks": chunk }).to_string()))?;
                let (router, want) = (router.clone(), chunk.len());
                requests.spawn(async move {
                    let response = router.oneshot(request).await?;
                    let status = response.status();
                    let bytes = axum::body::to_bytes(response.into_body(), 1 << 22).await?;
                    let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                    let created = answer["tasks"]
                        .as_array()
                        .map_or(0, |a| a.iter().filter(|t| t["status"] == 201).count());
                    if status != StatusCode::OK || created != want {
                        bail!("batch registration answered {status}: {answer}");
                    }
                    Ok(())
                });
            }
            while let Some(done) = requests.join_next().await {
                done??;
            }
        }
        self.calls.take();
        Ok(())
    }

    /// `count` callbacks due in one minute half an hour ahead, spread over it; returns the
    /// minute.
    async fn fill_minute(&self, count: usize) -> Result<DateTime<Utc>> {
        self.clock.set(Utc::now());
        let minute = (self.clock.now() + chrono::Duration::minutes(30))
            .duration_trunc(chrono::Duration::minutes(1))?;
        let started = Instant::now();
        self.register(&self.router, count, |i| {
            let due = minute + chrono::Duration::milliseconds((i * 60_000 / count) as i64);
            json!({
                "url": format!("http://127.0.0.1:9/cb/{i}"),
                "fire_at": due.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            })
        })
        .await?;
        println!(
            "setup:             {count} registered into the minute in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(minute)
    }

    /// The minute's fire at its time, then each piece of work it handed on, until the
    /// minute is read to its end.
    async fn drain_minute(&self, minute: DateTime<Utc>) -> Result<Pass> {
        self.clock.set(bucket_fire_at(minute));
        self.calls.take_handed_on();
        let mut steps = Vec::new();
        let mut work = VecDeque::from([BucketWork::whole(minute)]);
        while let Some(next) = work.pop_front() {
            let started = Instant::now();
            let report = self.backend.buckets.run(next).await?;
            let took = started.elapsed();
            let handed = self.calls.take_handed_on();
            if handed.len() != report.handed_on {
                bail!(
                    "the fire says it handed on {}, it sent {}",
                    report.handed_on,
                    handed.len()
                );
            }
            work.extend(handed);
            steps.push(Step {
                armed: report.armed,
                took,
                calls: self.calls.take(),
            });
        }
        Ok(Pass { steps })
    }

    /// Registers `count` callbacks whose timer queue refuses them, then makes them overdue
    /// past the sweeper's lag.
    async fn leave_unarmed(&self, count: usize) -> Result<()> {
        let started = Instant::now();
        self.register(
            &self.broken,
            count,
            |i| json!({"url": format!("http://127.0.0.1:9/lost/{i}"), "delay": "2s"}),
        )
        .await?;
        println!(
            "setup:             {count} registered without a timer in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        self.clock.shift(chrono::Duration::minutes(1));
        Ok(())
    }

    /// Sweeper runs, one after another, until `count` tasks are armed again.
    async fn sweep_all(&self, count: usize) -> Result<Pass> {
        let failures = self.backend.system_failures();
        let mut steps: Vec<Step> = Vec::new();
        while steps.iter().map(|s| s.armed).sum::<usize>() < count {
            let started = Instant::now();
            let answer =
                handle_sweep(&self.backend.engine, failures.as_ref(), &self.backend.timer).await?;
            let took = started.elapsed();
            let report: SweeperReport = serde_json::from_value(answer)?;
            if report.rearmed == 0 {
                bail!("a sweeper run re-armed nothing with tasks still unarmed");
            }
            steps.push(Step {
                armed: report.rearmed,
                took,
                calls: self.calls.take(),
            });
        }
        Ok(Pass { steps })
    }
}

/// The step that armed the most, the earliest of them.
fn largest<'a>(steps: impl Iterator<Item = &'a Step>) -> Option<&'a Step> {
    steps.fold(None, |best: Option<&Step>, s| match best {
        Some(b) if b.armed >= s.armed => Some(b),
        _ => Some(s),
    })
}

fn print_bucket(pass: &Pass, call_ms: u64) {
    println!();
    println!("bucket fire (BucketFire::run, {MAX_PER_FIRE} entries at most per invocation):");
    pass.print("invocation");
    println!("  the longest chain of calls each made after another answered:");
    let own = pass.steps.first();
    let handed = largest(pass.steps.iter().skip(1));
    if let Some(own) = own {
        print_chain("the minute's own fire:", own);
    }
    if let Some(handed) = handed {
        print_chain("the largest handed on:", handed);
    }
    // A large minute is read mostly by handed-on work: one partition, page after page.
    let Some(one) = handed.or(own) else {
        return;
    };
    let scale = MAX_PER_FIRE as f64 / one.armed.max(1) as f64;
    let chain = one.chain() as f64 * scale;
    let invocation = chain * call_ms as f64 / 1000.0;
    let per_partition = BIG_MINUTE.div_ceil(BUCKET_SHARDS as usize);
    let hops = per_partition.div_ceil(MAX_PER_FIRE);
    println!("  in the region, at {call_ms} ms a call:");
    if one.armed == MAX_PER_FIRE {
        println!(
            "    one invocation of {MAX_PER_FIRE}: {chain:.0} x {call_ms} ms = {:.0} ms",
            invocation * 1000.0
        );
    } else {
        // Each partition must hold more than the minute's own fire takes from it.
        let enough =
            (MAX_PER_FIRE + MAX_PER_FIRE / BUCKET_SHARDS as usize) * BUCKET_SHARDS as usize;
        println!(
            "    one invocation of {MAX_PER_FIRE}: {} x {MAX_PER_FIRE} / {} x {call_ms} ms = {:.0} ms (scaled up: --entries {enough} measures one)",
            one.chain(),
            one.armed,
            invocation * 1000.0
        );
    }
    println!(
        "    a minute of 1,000,000: {BUCKET_SHARDS} partitions side by side, {per_partition} entries each, {hops} invocations one after another: {hops} x {:.0} ms = {:.1} s, besides each hand-on's wait in the queue",
        invocation * 1000.0,
        hops as f64 * invocation
    );
}

fn print_sweep(pass: &Pass, call_ms: u64) {
    println!();
    println!("sweeper repair (lambda::handle_sweep, runs one after another):");
    pass.print("run");
    println!("  the longest chain of calls each made after another answered:");
    let Some(one) = largest(pass.steps.iter()) else {
        return;
    };
    print_chain("the largest run:", one);
    let run = one.chain() as f64 * call_ms as f64 / 1000.0;
    println!("  in the region, at {call_ms} ms a call:");
    println!(
        "    one run of {}: {} x {call_ms} ms = {run:.2} s (the sweeper function's timeout: {SWEEPER_TIMEOUT_S:.0} s)",
        one.armed,
        one.chain()
    );
    let full = DUE_SHARDS as usize * SWEEP_PAGE.min(EngineSettings::default().sweep_batch);
    if one.armed < full {
        println!("    (a run smaller than one full sweep: --entries {full} measures one)");
    }
    // A run sweeps on while it finds work, starting no sweep past its budget.
    let budget = SWEEP_BUDGET.as_secs_f64();
    let rounds = (budget / run.max(1e-3)).floor() + 1.0;
    let per_run = (rounds as usize * one.armed).max(1);
    let runs = BIG_MINUTE.div_ceil(per_run);
    println!(
        "    a run goes on while it finds work, for up to {budget:.0} s: {rounds:.0} x {} = {per_run} entries a run",
        one.armed
    );
    println!(
        "    1,000,000 unarmed: {runs} runs, one every {SWEEP_EVERY_S:.0} s (the minute's run and its half-minute pass): {:.1} min",
        runs as f64 * (rounds * run).max(SWEEP_EVERY_S) / 60.0
    );
}
