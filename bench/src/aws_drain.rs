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
use boomerang_aws::lambda::{handle_sweep, SweeperReport, REDRIVE_BUDGET, SWEEP_BUDGET};
use boomerang_aws::messages::{BucketWork, TimerMessage};
use boomerang_aws::plan::bucket_fire_at;
use boomerang_aws::rearm::{rearm, PageDone, QueueHeld, RearmSettings};
use boomerang_aws::{AwsBackend, AwsSettings, SdkConfig};
use boomerang_core::clock::Clock;
use boomerang_core::domain::{AttemptRef, TaskId, TenantId};
use boomerang_core::engine::EngineSettings;
use boomerang_core::metrics::NoMetrics;
use chrono::{DateTime, DurationRound, Utc};
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::cpu_quota::{share_of_memory, CpuQuota};
use crate::measure::Usage;

#[derive(clap::Args)]
pub struct AwsDrainArgs {
    /// Entries in one minute's bucket, and tasks left without a timer for the sweeper.
    #[arg(long, default_value_t = 40_000)]
    pub entries: usize,
    /// The planning latency of one DynamoDB or SQS call in the region, in ms.
    #[arg(long, default_value_t = 10)]
    pub call_ms: u64,
    /// Run each measured invocation under the CPU share Lambda gives a function of this
    /// memory size (256: about 14.5 % of a core), through a cgroup (needs root).
    #[arg(long)]
    pub lambda_mb: Option<u32>,
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
    let quota = match args.lambda_mb {
        Some(mb) if (128..=10_240).contains(&mb) => Some(CpuQuota::new(share_of_memory(mb))?),
        Some(mb) => bail!("--lambda-mb must be between 128 and 10240 (got {mb})"),
        None => None,
    };
    let mut bench = Bench::start(&endpoint, args.entries).await?;
    bench.quota = quota;
    println!("mode:              aws-drain");
    println!("emulator:          {endpoint} (timer messages spread over its queues, {PER_QUEUE} to a queue)");
    println!(
        "entries:           {} in one minute's bucket; {} tasks left without a timer",
        args.entries, args.entries
    );
    println!("invocations and sweeper runs one at a time, as one function instance runs them");
    match (&bench.quota, args.lambda_mb) {
        (Some(quota), Some(mb)) => println!(
            "CPU quota:         {:.1} % of a core, as a {mb} MB Lambda (a full vCPU at 1,769 MB), while the measured code runs: {}",
            quota.share * 100.0,
            quota.describe()
        ),
        _ => println!("CPU quota:         none (--lambda-mb 256 runs the measured code under a 256 MB Lambda's share)"),
    }
    println!("measured: wall and CPU time of each invocation here, the emulator's answers included (moto, one request at a time, ~3 ms a call: not DynamoDB's or SQS's latency); derived: the region figures and the 10,000/s projections");

    let started = Utc::now();
    let minute = bench.fill_minute(args.entries).await?;
    let fire = bench.drain_minute(minute).await?;
    let model = Model {
        call: args.call_ms as f64 / 1000.0,
        share: bench
            .quota
            .as_ref()
            .map_or(share_of_memory(256), |q| q.share),
    };
    print_bucket(&fire, model);

    let ids = bench.leave_unarmed(args.entries).await?;
    let sweep = bench.sweep_all(args.entries).await?;
    print_sweep(&sweep, model);

    bench.fail_timers(&ids).await?;
    let redrive = bench.redrive_all(ids.len()).await?;
    print_redrive(&redrive, model);

    let queue_held = bench.queue_held(args.entries).await?;
    let rearm = bench
        .rearm_all(started - chrono::Duration::minutes(1))
        .await?;
    print_rearm(&rearm, queue_held, args.entries, model);
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

/// One invocation of the bucket fire, one sweeper run, one redrive, or one page of
/// `aws rearm`.
struct Step {
    armed: usize,
    took: Duration,
    calls: Vec<Call>,
    /// This process's CPU time meanwhile (to the 10 ms of `/proc`'s ticks), and how long it
    /// waited for the quota.
    cpu: Duration,
    throttled: Duration,
}

/// How long a measured invocation took.
#[derive(Clone, Copy, Default)]
struct Timing {
    took: Duration,
    cpu: Duration,
    throttled: Duration,
}

fn cpu_now() -> Duration {
    let seconds = Usage::of(std::process::id()).map_or(0.0, |u| u.cpu_seconds);
    Duration::from_secs_f64(seconds)
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

    fn cpu_seconds(&self) -> f64 {
        self.steps.iter().map(|s| s.cpu.as_secs_f64()).sum()
    }

    fn throttled_seconds(&self) -> f64 {
        self.steps.iter().map(|s| s.throttled.as_secs_f64()).sum()
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
        println!(
            "  CPU (measured):  {:.2} s of it, {:.0} ms per 1,000 entries; {:.2} s waiting for the quota",
            self.cpu_seconds(),
            self.cpu_seconds() * 1e6 / self.entries().max(1) as f64,
            self.throttled_seconds()
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
    /// The clients the measured code calls through (its DynamoDB client reads for `aws
    /// rearm`), and an SQS client of the bench's own, whose calls are not counted.
    dynamodb: aws_sdk_dynamodb::Client,
    setup_sqs: aws_sdk_sqs::Client,
    quota: Option<CpuQuota>,
}

impl Bench {
    /// Fresh resources, and queues for the timer messages of `entries` bucket entries and
    /// as many repairs.
    async fn start(endpoint: &str, entries: usize) -> Result<Bench> {
        let sdk = boomerang_aws::emulator_config(endpoint);
        let prefix = format!("drain-{}", ulid::Ulid::new().to_string().to_lowercase());
        let settings = boomerang_aws::bootstrap::bootstrap(&sdk, &prefix).await?;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        // Timer messages: the minute's, the sweeper's repairs, the redrive's, and the
        // rearm's (the minute's again, the repaired again, and the queue-held).
        let queues = (7 * entries + 1000).div_ceil(PER_QUEUE);
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
        let dynamodb = clients.dynamodb.clone();
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
            dynamodb,
            setup_sqs: sqs,
            quota: None,
        })
    }

    /// Runs one measured invocation, under the CPU quota if there is one.
    async fn measured<T>(
        &self,
        run: impl std::future::Future<Output = Result<T>>,
    ) -> Result<(T, Timing)> {
        if let Some(quota) = &self.quota {
            quota.enter()?;
        }
        let throttled = self
            .quota
            .as_ref()
            .map(CpuQuota::throttled)
            .unwrap_or_default();
        let (cpu, started) = (cpu_now(), Instant::now());
        let result = run.await;
        let timing = Timing {
            took: started.elapsed(),
            cpu: cpu_now().saturating_sub(cpu),
            throttled: (self.quota.as_ref().map(CpuQuota::throttled))
                .unwrap_or_default()
                .saturating_sub(throttled),
        };
        if let Some(quota) = &self.quota {
            quota.leave()?;
        }
        Ok((result?, timing))
    }

    /// Registers `count` callbacks through the batch route, a few requests at once;
    /// `task(i)` is the i-th.
    async fn register(
        &self,
        router: &axum::Router,
        count: usize,
        task: impl Fn(usize) -> Value,
    ) -> Result<Vec<TaskId>> {
        let tasks: Vec<Value> = (0..count).map(task).collect();
        let mut ids = Vec::with_capacity(count);
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
                    let ids: Vec<TaskId> = (answer["tasks"].as_array().into_iter().flatten())
                        .filter_map(|t| t["task"]["id"].as_str()?.parse().ok())
                        .collect();
                    Ok(ids)
                });
            }
            while let Some(done) = requests.join_next().await {
                ids.extend(done??);
            }
        }
        self.calls.take();
        Ok(ids)
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
            let (report, timing) = self
                .measured(async { Ok(self.backend.buckets.run(next).await?) })
                .await?;
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
                took: timing.took,
                calls: self.calls.take(),
                cpu: timing.cpu,
                throttled: timing.throttled,
            });
        }
        Ok(Pass { steps })
    }

    /// Registers `count` callbacks whose timer queue refuses them, then makes them overdue
    /// past the sweeper's lag.
    async fn leave_unarmed(&self, count: usize) -> Result<Vec<TaskId>> {
        let started = Instant::now();
        let ids = self
            .register(
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
        Ok(ids)
    }

    /// Sweeper runs, one after another, until `count` tasks are armed again.
    async fn sweep_all(&self, count: usize) -> Result<Pass> {
        let failures = self.backend.system_failures();
        let mut steps: Vec<Step> = Vec::new();
        while steps.iter().map(|s| s.armed).sum::<usize>() < count {
            let (answer, timing) = self
                .measured(async {
                    let engine = &self.backend.engine;
                    Ok(handle_sweep(engine, failures.as_ref(), &self.backend.timer).await?)
                })
                .await?;
            let report: SweeperReport = serde_json::from_value(answer)?;
            if report.rearmed == 0 {
                bail!("a sweeper run re-armed nothing with tasks still unarmed");
            }
            steps.push(Step {
                armed: report.rearmed,
                took: timing.took,
                calls: self.calls.take(),
                cpu: timing.cpu,
                throttled: timing.throttled,
            });
        }
        Ok(Pass { steps })
    }

    /// Puts a timer message for each of these tasks' first attempt in the system-failures
    /// queue, as if each had failed five receives: what the redrive hands back.
    async fn fail_timers(&self, ids: &[TaskId]) -> Result<()> {
        let queue = (self.backend.settings.system_failures_queue_url.clone())
            .context("the bootstrap made no system-failures queue")?;
        let tenant = TenantId::parse("drain")?;
        let started = Instant::now();
        for chunk in ids.chunks(10 * REQUESTS_AT_ONCE) {
            let mut sends = tokio::task::JoinSet::new();
            for ten in chunk.chunks(10) {
                let mut batch = self.setup_sqs.send_message_batch().queue_url(&queue);
                for (i, id) in ten.iter().enumerate() {
                    let message =
                        TimerMessage::Attempt(AttemptRef::delivery(tenant.clone(), *id, 1));
                    batch = batch.entries(
                        aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .message_body(serde_json::to_string(&message)?)
                            .build()?,
                    );
                }
                sends.spawn(batch.send());
            }
            while let Some(sent) = sends.join_next().await {
                let sent = sent??;
                if !sent.failed.is_empty() {
                    bail!(
                        "the system-failures queue refused {} messages",
                        sent.failed.len()
                    );
                }
            }
        }
        println!(
            "setup:             {} timer messages put in the system-failures queue in {:.1} s",
            ids.len(),
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// The sweeper's redrive of the system-failures queue, call after call (each as the
    /// minute's sweeper run makes it, with its budget), until `count` are handed back.
    async fn redrive_all(&self, count: usize) -> Result<Pass> {
        let failures = self
            .backend
            .system_failures()
            .context("a backend without a system-failures queue")?;
        let mut steps: Vec<Step> = Vec::new();
        while steps.iter().map(|s| s.armed).sum::<usize>() < count {
            let (redriven, timing) = self
                .measured(async {
                    let engine = &self.backend.engine;
                    let redrive = failures.redrive(engine, REDRIVE_BUDGET).await;
                    Ok(redrive.map_err(anyhow::Error::msg)?.redriven)
                })
                .await?;
            if redriven == 0 {
                bail!("a redrive handed back nothing with messages still in the queue");
            }
            steps.push(Step {
                armed: redriven,
                took: timing.took,
                calls: self.calls.take(),
                cpu: timing.cpu,
                throttled: timing.throttled,
            });
        }
        Ok(Pass { steps })
    }

    /// Registers `count` callbacks due in five minutes: each armed on the timer queue
    /// with no index entry, the work a lost queue takes with it.
    async fn queue_held(&self, count: usize) -> Result<usize> {
        let started = Instant::now();
        self.register(
            &self.router,
            count,
            |i| json!({"url": format!("http://127.0.0.1:9/held/{i}"), "delay": "5m"}),
        )
        .await?;
        println!(
            "setup:             {count} registered on the timer queue (no index entry) in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(count)
    }

    /// `aws rearm` over the whole table as the bench left it: the `due` index (the
    /// minute's entries, the repaired tasks' entries) and the tenant's partitions from
    /// `since` (the queue-held tasks), eight parts side by side, pages of 1,000. Each page
    /// is a step; the run as a whole is timed under the quota.
    async fn rearm_all(&self, since: DateTime<Utc>) -> Result<(Pass, Timing)> {
        let settings = RearmSettings {
            segments: 8,
            page: 1000,
            restart: true,
            since: Some(since),
            queue_held: QueueHeld::Tenants(vec![TenantId::parse("drain")?]),
        };
        let pages: Mutex<Vec<(PageDone, Instant)>> = Mutex::default();
        let started = Instant::now();
        let record = |page: PageDone| pages.lock().expect("pages").push((page, Instant::now()));
        let (_, timing) = self
            .measured(async { Ok(rearm(&self.backend, &self.dynamodb, settings, &record).await?) })
            .await?;
        let calls = self.calls.take();
        // Pages of the parts read side by side overlap: each page's share of the run is
        // the time since the page before it ended, whichever part it was.
        let mut last = started;
        let mut pages = pages.into_inner().expect("pages");
        pages.sort_by_key(|(_, at)| *at);
        let steps = (pages.into_iter())
            .map(|(page, at)| {
                let took = at.duration_since(last);
                last = at;
                Step {
                    armed: page.report.rearmed,
                    took,
                    calls: Vec::new(),
                    cpu: Duration::ZERO,
                    throttled: Duration::ZERO,
                }
            })
            .collect::<Vec<_>>();
        let mut steps = steps;
        if let Some(first) = steps.first_mut() {
            first.calls = calls;
            first.cpu = timing.cpu;
            first.throttled = timing.throttled;
        }
        Ok((Pass { steps }, timing))
    }
}

/// The step that armed the most, the earliest of them.
fn largest<'a>(steps: impl Iterator<Item = &'a Step>) -> Option<&'a Step> {
    steps.fold(None, |best: Option<&Step>, s| match best {
        Some(b) if b.armed >= s.armed => Some(b),
        _ => Some(s),
    })
}

/// How the figures are turned into region figures.
#[derive(Clone, Copy)]
struct Model {
    /// The planning latency of one call in the region (s).
    call: f64,
    /// The function's share of a core.
    share: f64,
}

impl Model {
    /// An invocation's time in the region, derived: its measured CPU time stretched by the
    /// share, plus its chain of calls each made after another answered at the planning
    /// latency (they overlap in part, so this errs long).
    fn invocation(&self, step: &Step) -> f64 {
        step.cpu.as_secs_f64() / self.share + step.chain() as f64 * self.call
    }

    fn describe(&self) -> String {
        format!(
            "derived: measured CPU / {:.1} % + calls one after another x {:.0} ms",
            self.share * 100.0,
            self.call * 1000.0
        )
    }
}

/// The rate the projections are for.
const RATE: usize = 10_000;
const RATE_TEXT: &str = "10,000";
/// How early a minute's schedule fires (`plan::BUCKET_LEAD`).
const BUCKET_LEAD_S: u64 = boomerang_aws::plan::BUCKET_LEAD.as_secs();

/// One invocation's measured figures: entries, wall time, rate, calls, CPU.
fn per_invocation(step: &Step) -> String {
    format!(
        "{} entries in {} wall ({} calls, {} one after another; {} CPU, {} waiting for the quota): {:.0} entries/s",
        step.armed,
        ms(step.took),
        step.calls.len(),
        step.chain(),
        ms(step.cpu),
        ms(step.throttled),
        step.armed as f64 / step.took.as_secs_f64().max(1e-9)
    )
}

fn print_bucket(pass: &Pass, model: Model) {
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
    println!("  measured here, per invocation: {}", per_invocation(one));
    let scale = MAX_PER_FIRE as f64 / one.armed.max(1) as f64;
    let invocation = model.invocation(one) * scale;
    println!("  in the region ({}):", model.describe());
    if one.armed == MAX_PER_FIRE {
        println!(
            "    one invocation of {MAX_PER_FIRE}: {:.0} ms ({:.0} entries/s)",
            invocation * 1000.0,
            MAX_PER_FIRE as f64 / invocation.max(1e-9)
        );
    } else {
        // Each partition must hold more than the minute's own fire takes from it.
        let enough =
            (MAX_PER_FIRE + MAX_PER_FIRE / BUCKET_SHARDS as usize) * BUCKET_SHARDS as usize;
        println!(
            "    one invocation of {MAX_PER_FIRE}: {:.0} ms, scaled from {} entries ({:.0} entries/s; --entries {enough} measures one)",
            invocation * 1000.0,
            one.armed,
            MAX_PER_FIRE as f64 / invocation.max(1e-9)
        );
    }
    for (what, minute) in [("1,000,000", BIG_MINUTE), ("600,000", RATE * 60)] {
        let per_partition = minute.div_ceil(BUCKET_SHARDS as usize);
        let hops = per_partition.div_ceil(MAX_PER_FIRE);
        println!(
            "    a minute of {what}{}: {BUCKET_SHARDS} partitions side by side, {per_partition} entries each, {hops} invocations one after another: {:.1} s (its schedule fires {BUCKET_LEAD_S} s early), besides each hand-on's wait in the queue",
            if minute == RATE * 60 { format!(" ({RATE_TEXT} callbacks/s due in it)") } else { String::new() },
            hops as f64 * invocation
        );
    }
}

fn print_sweep(pass: &Pass, model: Model) {
    println!();
    println!("sweeper repair (lambda::handle_sweep, runs one after another):");
    pass.print("run");
    println!("  the longest chain of calls each made after another answered:");
    let Some(one) = largest(pass.steps.iter()) else {
        return;
    };
    print_chain("the largest run:", one);
    println!("  measured here, per run: {}", per_invocation(one));
    // A run's measured figures are of one sweep or a few; a sweep is one read of every
    // shard, its tasks and their arms.
    let run = model.invocation(one);
    println!("  in the region ({}):", model.describe());
    println!(
        "    one run of {}: {run:.2} s (the sweeper function's timeout: {SWEEPER_TIMEOUT_S:.0} s)",
        one.armed,
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
    let per_minute = per_run as f64 * 60.0 / SWEEP_EVERY_S;
    println!(
        "    at {RATE_TEXT} callbacks/s with the timer queue refusing sends: {} a minute registered unarmed, {per_minute:.0} a minute repaired ({:.1} minutes of repair per minute of outage)",
        RATE * 60,
        (RATE * 60) as f64 / per_minute.max(1.0)
    );
}

/// Readers of the system-failures queue side by side (`system_failures::READERS`).
const REDRIVE_READERS: f64 = 16.0;

fn print_redrive(pass: &Pass, model: Model) {
    println!();
    println!(
        "system-failures redrive (SystemFailures::redrive, calls one after another, each with the minute's run's {} s budget):",
        REDRIVE_BUDGET.as_secs()
    );
    pass.print("call");
    let Some(one) = largest(pass.steps.iter()) else {
        return;
    };
    println!("  measured here, the largest call: {}", per_invocation(one));
    // Each reader's round is three calls (receive, arm, delete) for ten messages; the
    // readers share the function's CPU.
    let budget = REDRIVE_BUDGET.as_secs_f64();
    let cpu_per_message = one.cpu.as_secs_f64() / one.armed.max(1) as f64;
    let by_cpu = model.share / cpu_per_message.max(1e-9);
    let by_calls = REDRIVE_READERS * 10.0 / (3.0 * model.call);
    let rate = by_cpu.min(by_calls);
    println!("  in the region (derived: {:.2} ms CPU a message measured, at {:.1} % of a core: {by_cpu:.0} a second; {REDRIVE_READERS:.0} readers, 3 calls of {:.0} ms per 10: {by_calls:.0} a second):", cpu_per_message * 1000.0, model.share * 100.0, model.call * 1000.0);
    println!(
        "    about {rate:.0} a second, {:.0} in a run's {budget:.0} s; only the minute's run redrives, so {:.0} a minute: at {RATE_TEXT} callbacks/s, {:.1} minutes of redrive per minute in which every timer failed over",
        rate * budget,
        rate * budget,
        (RATE * 60) as f64 / (rate * budget).max(1.0)
    );
}

fn print_rearm(result: &(Pass, Timing), queue_held: usize, entries: usize, model: Model) {
    let (pass, run) = result;
    println!();
    println!("aws rearm (rearm::rearm: the due index, then the tenant's partitions by key range; 8 parts side by side, pages of 1,000):");
    let armed = pass.entries();
    println!(
        "  emulator:        {armed} armed in {} pages, {:.2} s: {:.0} armed/s (the minute's {entries}, the {entries} repaired, the {queue_held} queue-held)",
        pass.steps.len(),
        run.took.as_secs_f64(),
        armed as f64 / run.took.as_secs_f64().max(1e-9)
    );
    println!(
        "  calls per 1,000: {}; {}",
        pass.per_thousand("DynamoDB"),
        pass.per_thousand("SQS")
    );
    let calls: Vec<Call> = pass.steps.iter().flat_map(|s| s.calls.clone()).collect();
    let chain = chain_length(&calls);
    println!(
        "  CPU (measured):  {} of it, {:.0} ms per 1,000 armed; {} waiting for the quota; {chain} calls one after another",
        ms(run.cpu),
        run.cpu.as_secs_f64() * 1e6 / armed.max(1) as f64,
        ms(run.throttled)
    );
    let region = run.cpu.as_secs_f64() / model.share + chain as f64 * model.call;
    let rate = armed as f64 / region.max(1e-9);
    let queue = RATE * 15 * 60;
    println!("  in the region ({}):", model.describe());
    println!(
        "    {region:.1} s, {rate:.0} armed/s in one process at a 256 MB Lambda's share (more cores, or more processes each with its own parts, go faster)",
    );
    println!(
        "    at {RATE_TEXT} callbacks/s the timer queue holds up to {queue} (15 minutes of registrations): {:.1} min to arm them again, besides the finished tasks a key range or the scan reads",
        queue as f64 / rate.max(1.0) / 60.0
    );
}
