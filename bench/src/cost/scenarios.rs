//! The scenarios the meter runs, twice: once in this process with the metered SDK clients
//! (what the AWS path asks of AWS), once through the real Lambda binaries under the runtime
//! emulator (how long the functions run and what they log).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use boomerang_aws::backend::{aws_with_clients, AwsBackendConfig, AwsClients};
use boomerang_aws::bootstrap::{bootstrap, env_vars};
use boomerang_aws::triggers::{poll_queue, TriggerEmulator};
use boomerang_core::clock::Clock;
use boomerang_core::domain::TenantId;
use boomerang_core::engine::EngineSettings;
use boomerang_core::metrics::NoMetrics;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tower::ServiceExt;

mod bulk;

use super::access_log;
use super::functions::Functions;
use super::meter::{Meter, Tally};
use super::prices::*;
use super::sweeper::{Month, Sweeper};
use super::table_shape::table_shape;

/// Memory of each function in the CDK stack (`API_MEMORY_MB`, `DELIVERY_MEMORY_MB` in
/// `infra/lib/boomerang-stack.ts`; its tests check the stack keeps them).
const API_MEMORY_MB: u32 = 256;
const DELIVERY_MEMORY_MB: u32 = 256;

/// The system clock shifted forward by a settable amount: how the in-process pass reaches
/// a task due in two hours without waiting for it.
#[derive(Default)]
struct ShiftedClock(Mutex<chrono::Duration>);

impl ShiftedClock {
    fn shift(&self, by: chrono::Duration) {
        *self.0.lock().unwrap() += by;
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + *self.0.lock().unwrap()
    }
}

/// What one scenario did.
#[derive(Clone, Default)]
struct Run {
    tally: Tally,
    api_calls: usize,
    /// Billed seconds (each invocation rounded up to the millisecond).
    api_seconds: f64,
    delivery_invocations: usize,
    delivery_seconds: f64,
    log_bytes: usize,
    /// The part of `log_bytes` the delivery function logged.
    delivery_log_bytes: usize,
    /// What API Gateway's access log ingests (none with a function URL).
    access_log_bytes: usize,
    /// Callbacks delivered (the denominator of "per million callbacks").
    callbacks: usize,
    /// Scheduler invocations: one per bucket schedule that fired.
    schedule_fires: usize,
    /// Receives from the timer queue that found it empty.
    idle_receives: usize,
}

/// An API request as API Gateway's access log records it (latency: the call's time, in ms).
fn request<'a>(
    method: &'a str,
    path: &'a str,
    status: u16,
    seconds: f64,
) -> access_log::Request<'a> {
    access_log::Request {
        method,
        path,
        status,
        latency_ms: (seconds * 1000.0).round() as u64,
    }
}

impl Run {
    fn api(&mut self, request: &access_log::Request, seconds: f64) -> Result<()> {
        self.api_calls += 1;
        self.api_seconds += billed(seconds);
        self.access_log_bytes += access_log::bytes(request)?;
        Ok(())
    }

    fn delivery(&mut self, seconds: f64) {
        self.delivery_invocations += 1;
        self.delivery_seconds += billed(seconds);
    }

    /// The run's requests as a callback's share: without the receives that found the queue
    /// empty. The meter polls each second to finish soon; the event source mapping
    /// long-polls (20 s), so its empty receives come a few a minute whatever the traffic, a
    /// fixed cost stated apart ([`IDLE_POLLS_PER_MONTH`]), not a callback's.
    fn settle(&mut self, tally: Tally) {
        self.tally = tally;
        if let Some(receives) = self.tally.requests.get_mut("SQS ReceiveMessage") {
            *receives = (*receives - self.idle_receives as f64).max(0.0);
        }
    }
}

/// What the meter had counted and the functions had logged when a scenario began.
struct Window {
    tally: Tally,
    log_bytes: usize,
    delivery_log_bytes: usize,
}

/// The timer queue's idle polling in a month: the mapping's five pollers, each a 20 s long
/// poll at a time (3 a minute).
pub const IDLE_POLLS_PER_MONTH: f64 = 5.0 * 3.0 * 60.0 * 24.0 * 30.0;

/// Dollars per million callbacks, by component.
#[derive(Clone, Copy, Default)]
struct Cost {
    dynamodb: f64,
    sqs: f64,
    scheduler: f64,
    lambda: f64,
    api_gateway: f64,
    logs: f64,
}

impl Cost {
    /// Requests and units from the in-process pass; function durations and log bytes
    /// from the pass through the real binaries.
    fn of(counts: &Run, timing: &Run) -> Cost {
        let per = 1.0 / counts.callbacks.max(1) as f64;
        let per_timed = 1.0 / timing.callbacks.max(1) as f64;
        let t = &counts.tally;
        let gb_seconds = timing.api_seconds * f64::from(API_MEMORY_MB) / 1024.0
            + timing.delivery_seconds * f64::from(DELIVERY_MEMORY_MB) / 1024.0;
        Cost {
            dynamodb: per
                * (t.write_units() * DYNAMODB_PER_MILLION_WRITE_UNITS
                    + t.read_units * DYNAMODB_PER_MILLION_READ_UNITS),
            sqs: per * t.requests_of("SQS") * SQS_PER_MILLION_REQUESTS,
            // Creating a schedule is free (and a second instance's attempt is refused);
            // each one-time schedule's one invocation is not.
            scheduler: per * counts.schedule_fires as f64 * SCHEDULER_PER_MILLION_INVOCATIONS,
            lambda: per
                * (counts.api_calls + counts.delivery_invocations) as f64
                * LAMBDA_PER_MILLION_REQUESTS
                + per_timed * gb_seconds * LAMBDA_PER_GB_SECOND * 1e6,
            api_gateway: per * counts.api_calls as f64 * API_GATEWAY_PER_MILLION_REQUESTS,
            logs: (per_timed * timing.log_bytes as f64 + per * counts.access_log_bytes as f64)
                / 1e9
                * LOGS_PER_GB
                * 1e6,
        }
    }

    fn total(&self) -> f64 {
        self.dynamodb + self.sqs + self.scheduler + self.lambda + self.api_gateway + self.logs
    }

    fn minus(&self, o: &Cost) -> Cost {
        Cost {
            dynamodb: self.dynamodb - o.dynamodb,
            sqs: self.sqs - o.sqs,
            scheduler: self.scheduler - o.scheduler,
            lambda: self.lambda - o.lambda,
            api_gateway: self.api_gateway - o.api_gateway,
            logs: self.logs - o.logs,
        }
    }
}

/// The receiver every scenario calls: `/ok` answers 200, `/fail-once` answers 500 to the
/// first attempt of each task.
struct InProcessReceiver {
    url: String,
    succeeded: Arc<AtomicUsize>,
}

async fn start_receiver() -> Result<InProcessReceiver> {
    let succeeded = Arc::new(AtomicUsize::new(0));
    let counter = succeeded.clone();
    let app = axum::Router::new().fallback(move |req: Request<Body>| {
        let counter = counter.clone();
        async move {
            let first = req
                .headers()
                .get("boomerang-attempt")
                .is_some_and(|v| v == "1");
            if req.uri().path() == "/fail-once" && first {
                return StatusCode::INTERNAL_SERVER_ERROR;
            }
            counter.fetch_add(1, Ordering::SeqCst);
            StatusCode::OK
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(InProcessReceiver { url, succeeded })
}

/// A JSON body of about 1 KiB: an order event, as a webhook would carry.
fn order_event(i: usize) -> Value {
    let items: Vec<Value> = (0..10)
        .map(|n| {
            json!({"sku": format!("SKU-{:05}", (i * 7 + n * 131) % 100_000), "qty": 1 + (i + n) % 4,
                   "unit_price_cents": 199 + (i * 37 + n * 53) % 9_000, "title": format!("Item {n} of order {i}, blue")})
        })
        .collect();
    json!({
        "event": "order.paid",
        "order_id": format!("ord_{:08}", 40_000 + i),
        "customer": {"id": format!("cus_{:06}", 1_000 + i * 3), "email": format!("buyer{i}@example.com"), "country": "DE"},
        "items": items,
        "currency": "EUR",
        "paid_at": "2026-11-22T10:00:00Z",
    })
}

/// How API calls and timer fires reach the code.
enum Via {
    /// The Router and the delivery handler in this process, on metered clients.
    InProcess {
        router: axum::Router,
        emulator: Arc<TriggerEmulator>,
        sweeper: Sweeper,
    },
    /// The function binaries under the runtime emulator; this process plays the SQS event
    /// source mapping and Scheduler.
    Functions {
        functions: Functions,
        sqs: aws_sdk_sqs::Client,
        queue_url: String,
        scheduler: aws_sdk_scheduler::Client,
        group: String,
    },
}

struct Bench {
    via: Via,
    api_key: String,
    /// The key of a tenant with a destination limit of its own (held across instances).
    limited_key: String,
    meter: Meter,
    clock: Arc<ShiftedClock>,
    receiver: InProcessReceiver,
}

/// One run of every scenario.
#[derive(Clone)]
struct Results {
    first: Run,
    batched: Run,
    retry: Run,
    idempotent: Run,
    scheduled: Run,
    thirty_days: Run,
    gets: Run,
    occurrences: Run,
    limited: Run,
    ordered: Run,
}

/// How a scenario's tasks are registered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Registration {
    Plain,
    /// Each under an `Idempotency-Key`.
    Idempotent,
    /// By a tenant with a destination limit of its own.
    Limited,
    /// Each with an order key, [`EVENTS_PER_ORDER_KEY`] tasks to a key, in the key's
    /// line: each takes a place when stored, waits for its turn, and passes it on.
    Ordered,
}

/// Tasks that share an order key in the ordered scenario: the few events of one entity
/// (an order created, paid, shipped, delivered).
const EVENTS_PER_ORDER_KEY: usize = 4;

/// A destination limit the scenario's calls never reach: what is priced is holding it.
const OWN_DESTINATION_LIMIT: usize = 64;

/// Mints the tenant with a destination limit of its own; returns its key.
async fn limited_tenant(tenants: &boomerang_aws::DynamoTenants) -> Result<String> {
    let tenant = TenantId::parse("limited")?;
    let minted = tenants.mint_key(&tenant).await?;
    (tenants.set_destination_limit(&tenant, Some(OWN_DESTINATION_LIMIT))).await?;
    Ok(minted.api_key)
}

pub async fn run_all(endpoint: &str, tasks: usize, functions_dir: Option<PathBuf>) -> Result<()> {
    let sdk = boomerang_aws::emulator_config(endpoint);
    let prefix = format!("cost-{}", ulid::Ulid::new().to_string().to_lowercase());
    let settings = bootstrap(&sdk, &prefix).await?;
    let receiver = start_receiver().await?;
    let body = serde_json::to_string(&order_event(0))?.len();
    println!("mode:              cost");
    println!("emulator:          {endpoint} (every AWS request counted by an SDK interceptor)");
    println!("tasks per scenario: {tasks}, JSON body of {body} bytes, receiver on loopback answering at once");

    let bench = Bench::in_process(&sdk, &settings, receiver).await?;
    let counts = bench.run_scenarios(tasks).await?;
    let sweeper = bench.sweeper_month().await?;
    let bulk = bench.bulk_retry(tasks).await?;
    let problems = bench.meter.problems();
    if !problems.is_empty() {
        bail!("the meter could not price: {problems:?}");
    }
    let timing = match functions_dir {
        Some(dir) => {
            println!(
                "functions:         {} under cargo-lambda's runtime emulator, {} (timed here; AWS runs arm64)",
                dir.display(),
                std::env::consts::ARCH
            );
            let bench = Bench::functions(&sdk, &settings, endpoint, &dir, bench.receiver).await?;
            let mut timing = bench.run_scenarios(tasks).await?;
            // The functions cannot be sent hours ahead: their bucket fire is timed, and the
            // attempts that follow it are the first scenario's.
            for far in [&mut timing.scheduled, &mut timing.thirty_days] {
                far.delivery_seconds += timing.first.delivery_seconds;
                far.delivery_invocations += timing.first.delivery_invocations;
                far.log_bytes += timing.first.delivery_log_bytes;
            }
            timing
        }
        None => {
            println!("functions:         not run (--in-process): durations from this process, logs not measured");
            counts.clone()
        }
    };
    println!();
    let cost = |pick: fn(&Results) -> &Run| Cost::of(pick(&counts), pick(&timing));
    let rows = [
        (
            "1 KiB body, first-attempt success",
            cost(|r| &r.first),
            Some(4.00),
        ),
        (
            "each retry",
            cost(|r| &r.retry).minus(&cost(|r| &r.first)),
            Some(1.50),
        ),
        (
            "due in 2 hours (a minute's bucket)",
            cost(|r| &r.scheduled),
            Some(4.20),
        ),
        (
            "due in 30 days (a minute's bucket)",
            cost(|r| &r.thirty_days),
            Some(4.20),
        ),
        (
            "with an Idempotency-Key",
            cost(|r| &r.idempotent),
            Some(4.70),
        ),
        (
            "registered in batches of 100",
            cost(|r| &r.batched),
            Some(2.50),
        ),
        (
            "a tenant with its own destination limit",
            cost(|r| &r.limited),
            None,
        ),
        (
            "ordered: 4 tasks to an order key",
            cost(|r| &r.ordered),
            None,
        ),
        ("GET of a task (per request)", cost(|r| &r.gets), None),
        ("a schedule's occurrence", cost(|r| &r.occurrences), None),
    ];
    print_table(&rows);
    if let Some(m) = sweeper {
        println!(
            "{:<36} {:>9.2} {:>6.2} {:>9} {:>7.2} {:>7} {:>6.2} {:>7.2} {:>7}",
            "sweeper, $ per month (idle table)",
            m.dynamodb,
            m.sqs,
            "",
            m.lambda,
            "",
            m.logs,
            m.total(),
            "≤ 1.00"
        );
        println!("  (a run a minute and its pass half a minute later, 20 of each timed in this process; one 400-byte log line each)");
    }
    let idle = IDLE_POLLS_PER_MONTH * super::prices::SQS_PER_MILLION_REQUESTS / 1e6;
    println!(
        "{:<36} {:>9} {:>6.2} {:>9} {:>7} {:>7} {:>6} {:>7.2} {:>7}",
        "timer queue's idle polls, $ per month", "", idle, "", "", "", "", idle, ""
    );
    println!("  (the mapping's five pollers, one 20 s long poll each at a time: a callback's rows count only receives that return messages)");
    if let Some(bulk) = bulk {
        let per_million = Cost::of(&bulk, &bulk);
        println!(
            "{:<36} {:>9.2} {:>6.2} {:>9} {:>7.2} {:>7.2} {:>6} {:>7.2} {:>7}",
            "a bulk retry, $ per 100,000 tasks",
            per_million.dynamodb / 10.0,
            per_million.sqs / 10.0,
            "",
            per_million.lambda / 10.0,
            per_million.api_gateway / 10.0,
            "",
            per_million.total() / 10.0,
            ""
        );
        println!("  (failed tasks, all retried by one request: the job paging the tenant's partitions, a write and a timer each, and the retries delivered; in this process)");
        print_breakdown("bulk retry", &bulk, &bulk);
    }
    println!();
    for (name, pick) in [
        ("first attempt", (|r| &r.first) as fn(&Results) -> &Run),
        ("one retry", |r| &r.retry),
        ("idempotency key", |r| &r.idempotent),
        ("own destination limit", |r| &r.limited),
        ("ordered", |r| &r.ordered),
        ("batches of 100", |r| &r.batched),
        ("due in 2 hours", |r| &r.scheduled),
        ("due in 30 days", |r| &r.thirty_days),
        ("GET", |r| &r.gets),
        ("schedule occurrence", |r| &r.occurrences),
    ] {
        print_breakdown(name, pick(&counts), pick(&timing));
    }
    println!();
    println!(
        "Lambda memory: API {API_MEMORY_MB} MB, delivery {DELIVERY_MEMORY_MB} MB; deliveries share SQS batches of up to 10 (as at volume)."
    );
    println!("A receiver that takes 100 ms more adds about ${:.2} per million callbacks at one per invocation, ${:.3} in full batches.",
        0.1 * f64::from(DELIVERY_MEMORY_MB) / 1024.0 * LAMBDA_PER_GB_SECOND * 1e6,
        0.1 * f64::from(DELIVERY_MEMORY_MB) / 1024.0 * LAMBDA_PER_GB_SECOND * 1e6 / 10.0);
    println!();
    print_price_list();
    Ok(())
}

/// Rounding noise (a difference of equal figures) is shown as zero, not "-0.00".
fn shown(x: f64) -> f64 {
    if x.abs() < 0.005 {
        0.0
    } else {
        x
    }
}

fn print_table(rows: &[(&str, Cost, Option<f64>)]) {
    println!(
        "{:<36} {:>9} {:>6} {:>9} {:>7} {:>7} {:>6} {:>7} {:>7}",
        "$ per million callbacks",
        "DynamoDB",
        "SQS",
        "Scheduler",
        "Lambda",
        "API GW",
        "Logs",
        "total",
        "target"
    );
    for (name, c, target) in rows {
        let target = target.map_or(String::new(), |t| format!("≤ {t:.2}"));
        println!(
            "{:<36} {:>9.2} {:>6.2} {:>9.2} {:>7.2} {:>7.2} {:>6.2} {:>7.2} {:>7}",
            name,
            shown(c.dynamodb),
            shown(c.sqs),
            shown(c.scheduler),
            shown(c.lambda),
            shown(c.api_gateway),
            shown(c.logs),
            shown(c.total()),
            target
        );
    }
}

fn print_breakdown(name: &str, counts: &Run, timing: &Run) {
    let per = 1.0 / counts.callbacks.max(1) as f64;
    let per_timed = 1.0 / timing.callbacks.max(1) as f64;
    let t = &counts.tally;
    let list = |m: &std::collections::BTreeMap<String, f64>, skip: &str| {
        let parts: Vec<String> = m
            .iter()
            .filter(|(k, v)| !k.starts_with(skip) && v.abs() > 1e-9)
            .map(|(k, v)| format!("{k} {:.2}", v * per))
            .collect();
        if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join(", ")
        }
    };
    println!("{name}, per callback:");
    println!(
        "  DynamoDB   {:.2} write units (table {:.2}; indexes: {}), {:.2} read units; writes: {}",
        t.write_units() * per,
        t.table_write_units * per,
        list(&t.index_write_units, "\u{0}"),
        t.read_units * per,
        list(&t.writes, "\u{0}"),
    );
    println!("  requests   {}", list(&t.requests, "DynamoDB"));
    println!(
        "  Lambda     {:.2} API + {:.2} delivery invocations; {:.1} ms API + {:.1} ms delivery (billed)",
        counts.api_calls as f64 * per,
        counts.delivery_invocations as f64 * per,
        timing.api_seconds * per_timed * 1000.0,
        timing.delivery_seconds * per_timed * 1000.0,
    );
    println!(
        "  logs       {:.0} bytes from the functions, {:.0} from API Gateway's access log",
        timing.log_bytes as f64 * per_timed,
        counts.access_log_bytes as f64 * per,
    );
}

impl Bench {
    async fn in_process(
        sdk: &boomerang_aws::SdkConfig,
        settings: &boomerang_aws::AwsSettings,
        receiver: InProcessReceiver,
    ) -> Result<Bench> {
        let meter = Meter::default();
        let plain = aws_sdk_dynamodb::Client::new(sdk);
        meter.describe_table(&settings.table, table_shape(&plain, &settings.table).await?);
        let clients = AwsClients {
            dynamodb: aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(sdk)
                    .interceptor(meter.interceptor("DynamoDB"))
                    .build(),
            ),
            sqs: aws_sdk_sqs::Client::from_conf(
                aws_sdk_sqs::config::Builder::from(sdk)
                    .interceptor(meter.interceptor("SQS"))
                    .build(),
            ),
            scheduler: aws_sdk_scheduler::Client::from_conf(
                aws_sdk_scheduler::config::Builder::from(sdk)
                    .interceptor(meter.interceptor("Scheduler"))
                    .build(),
            ),
        };
        let clock = Arc::new(ShiftedClock::default());
        let backend = aws_with_clients(
            clients,
            AwsBackendConfig {
                settings: settings.clone(),
                dev: true,
                clock: clock.clone(),
                metrics: Arc::new(NoMetrics),
                metrics_view: None,
                spans: None,
                engine: EngineSettings::default(),
            },
        )?;
        let minted = backend.tenants.mint_key(&TenantId::parse("acme")?).await?;
        let limited_key = limited_tenant(&backend.tenants).await?;
        // The emulator plays Scheduler with a client the meter does not see (AWS's own
        // work), and the SQS event source mapping with a metered one: its receives and
        // deletes are billed to the account.
        let emulator = Arc::new(TriggerEmulator {
            scheduler: aws_sdk_scheduler::Client::new(sdk),
            sqs: backend.sqs.clone(),
            group: backend.settings.schedule_group.clone(),
            queue_url: backend.settings.timer_queue_url.clone(),
            slow_queue_url: backend.settings.slow_queue_url.clone(),
            delivery: backend.delivery(),
            clock: clock.clone(),
        });
        let sweeper = Sweeper {
            engine: backend.engine.clone(),
            timer: backend.timer.clone(),
            failures: backend.system_failures(),
        };
        Ok(Bench {
            via: Via::InProcess {
                router: boomerang_http::router(backend.engine.clone()),
                emulator,
                sweeper,
            },
            api_key: minted.api_key,
            limited_key,
            meter,
            clock,
            receiver,
        })
    }

    async fn functions(
        sdk: &boomerang_aws::SdkConfig,
        settings: &boomerang_aws::AwsSettings,
        endpoint: &str,
        dir: &std::path::Path,
        receiver: InProcessReceiver,
    ) -> Result<Bench> {
        let mut env: Vec<(String, String)> = env_vars(settings)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        for (k, v) in [
            ("AWS_ENDPOINT_URL", endpoint),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            // Lets the functions call the receiver on loopback (refused unless
            // AWS_ENDPOINT_URL is on loopback too).
            ("BOOMERANG_DEV", "true"),
        ] {
            env.push((k.to_string(), v.to_string()));
        }
        let functions = Functions::start(
            dir,
            &env,
            [("api", API_MEMORY_MB), ("delivery", DELIVERY_MEMORY_MB)],
        )
        .await?;
        let tenants =
            boomerang_aws::DynamoTenants::new(aws_sdk_dynamodb::Client::new(sdk), &settings.table);
        let minted = tenants.mint_key(&TenantId::parse("acme")?).await?;
        let limited_key = limited_tenant(&tenants).await?;
        let bench = Bench {
            via: Via::Functions {
                functions,
                sqs: aws_sdk_sqs::Client::new(sdk),
                queue_url: settings.timer_queue_url.clone(),
                scheduler: aws_sdk_scheduler::Client::new(sdk),
                group: settings.schedule_group.clone(),
            },
            api_key: minted.api_key,
            limited_key,
            meter: Meter::default(),
            clock: Arc::new(ShiftedClock::default()),
            receiver,
        };
        bench.warm_up().await?;
        Ok(bench)
    }

    /// The first invocation of each function starts it (a cold start, not priced here).
    async fn warm_up(&self) -> Result<()> {
        if let Via::Functions { functions, .. } = &self.via {
            functions
                .api(functions.api_request(reqwest::Method::GET, "/healthz"))
                .await?;
            functions
                .invoke("delivery", &json!({"Records": []}))
                .await?;
        }
        Ok(())
    }

    async fn run_scenarios(&self, tasks: usize) -> Result<Results> {
        let (first, ids) = self
            .scenario(tasks, "/ok", json!({"delay": "1s"}), Registration::Plain)
            .await?;
        let retry = self
            .scenario(
                tasks,
                "/fail-once",
                json!({"delay": "1s", "retry": {"schedule": ["1s"]}}),
                Registration::Plain,
            )
            .await?
            .0;
        let idempotent = self
            .scenario(
                tasks,
                "/ok",
                json!({"delay": "1s"}),
                Registration::Idempotent,
            )
            .await?
            .0;
        let limited = self
            .scenario(tasks, "/ok", json!({"delay": "1s"}), Registration::Limited)
            .await?
            .0;
        let ordered = self
            .scenario(
                tasks,
                &format!("/ok?ordered={}", ulid::Ulid::new()),
                json!({"delay": "1s"}),
                Registration::Ordered,
            )
            .await?
            .0;
        let gets = self.gets(&ids).await?;
        let scheduled = self.far_ahead(tasks, "2h").await?;
        let thirty_days = self.far_ahead(tasks, "30d").await?;
        let batched = self.batched(tasks).await?;
        let occurrences = self.occurrences(tasks).await?;
        Ok(Results {
            first,
            batched,
            retry,
            idempotent,
            scheduled,
            thirty_days,
            gets,
            occurrences,
            limited,
            ordered,
        })
    }

    /// A month of the sweeper's runs and passes (in-process only).
    async fn sweeper_month(&self) -> Result<Option<Month>> {
        match &self.via {
            Via::InProcess {
                sweeper, emulator, ..
            } => Ok(Some(sweeper.month(&self.meter, &emulator.delivery).await?)),
            Via::Functions { .. } => Ok(None),
        }
    }

    /// Opens a scenario's window on what the meter counted and the functions logged.
    fn open_window(&self) -> Window {
        Window {
            tally: self.meter.tally(),
            log_bytes: self.log_bytes(),
            delivery_log_bytes: self.delivery_log_bytes(),
        }
    }

    /// Gives `run` what the window saw: the requests and units counted, and the bytes the
    /// functions logged, since it opened.
    fn close_window(&self, window: Window, run: &mut Run) {
        run.settle(self.meter.tally().minus(&window.tally));
        run.log_bytes = self.log_bytes() - window.log_bytes;
        run.delivery_log_bytes = self.delivery_log_bytes() - window.delivery_log_bytes;
    }

    fn delivery_log_bytes(&self) -> usize {
        match &self.via {
            Via::Functions { functions, .. } => functions.log_bytes("delivery"),
            Via::InProcess { .. } => 0,
        }
    }

    fn log_bytes(&self) -> usize {
        match &self.via {
            Via::Functions { functions, .. } => {
                functions.log_bytes("api") + functions.log_bytes("delivery")
            }
            Via::InProcess { .. } => 0,
        }
    }

    /// One API request of the bench's tenant.
    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        idempotency_key: Option<String>,
    ) -> Result<(StatusCode, Value, f64)> {
        (self.call_as(&self.api_key, method, path, body, idempotency_key)).await
    }

    /// One API request with `api_key`, as the API function gets it; returns the answer and
    /// how long the function took.
    async fn call_as(
        &self,
        api_key: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
        idempotency_key: Option<String>,
    ) -> Result<(StatusCode, Value, f64)> {
        match &self.via {
            Via::InProcess { router, .. } => {
                let mut request = Request::builder()
                    .method(method)
                    .uri(path)
                    .header("authorization", format!("Bearer {api_key}"))
                    .header("content-type", "application/json");
                if let Some(key) = idempotency_key {
                    request = request.header("idempotency-key", key);
                }
                let request =
                    request.body(body.map_or(Body::empty(), |b| Body::from(b.to_string())))?;
                let started = Instant::now();
                let response = router.clone().oneshot(request).await?;
                let status = response.status();
                let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await?;
                let seconds = started.elapsed().as_secs_f64();
                Ok((
                    status,
                    serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                    seconds,
                ))
            }
            Via::Functions { functions, .. } => {
                let mut request = functions
                    .api_request(method.parse()?, path)
                    .bearer_auth(api_key)
                    .header("content-type", "application/json");
                if let Some(key) = idempotency_key {
                    request = request.header("idempotency-key", key);
                }
                if let Some(body) = body {
                    request = request.body(body.to_string());
                }
                let (status, value, seconds) = functions.api(request).await?;
                Ok((StatusCode::from_u16(status.as_u16())?, value, seconds))
            }
        }
    }

    async fn register(
        &self,
        run: &mut Run,
        body: &Value,
        idempotency_key: Option<String>,
        api_key: &str,
    ) -> Result<String> {
        let (status, answer, seconds) = self
            .call_as(api_key, "POST", "/v1/tasks", Some(body), idempotency_key)
            .await?;
        if status != StatusCode::CREATED {
            bail!("registration answered {status}: {answer}");
        }
        run.api(&request("POST", "/v1/tasks", 201, seconds), seconds)?;
        Ok(answer["id"].as_str().context("no id")?.to_string())
    }

    /// Registers `tasks` callbacks to `path` with `extra` fields, delivers them all, and
    /// returns what it took and the task ids.
    async fn scenario(
        &self,
        tasks: usize,
        path: &str,
        extra: Value,
        how: Registration,
    ) -> Result<(Run, Vec<String>)> {
        let window = self.open_window();
        let mut run = Run::default();
        let mut ids = Vec::new();
        let delivered = self.receiver.succeeded.load(Ordering::SeqCst);
        for i in 0..tasks {
            let mut body =
                json!({"url": format!("{}{path}", self.receiver.url), "body": order_event(i)});
            for (k, v) in extra.as_object().into_iter().flatten() {
                body[k] = v.clone();
            }
            let key = (how == Registration::Idempotent)
                .then(|| format!("order-{}-{i}", ulid::Ulid::new()));
            if how == Registration::Ordered {
                body["order_key"] = json!(format!("{path}-{}", i / EVENTS_PER_ORDER_KEY));
            }
            let api_key = match how {
                Registration::Limited => &self.limited_key,
                _ => &self.api_key,
            };
            ids.push(self.register(&mut run, &body, key, api_key).await?);
        }
        self.deliver(&mut run, delivered + tasks).await?;
        run.callbacks = tasks;
        self.close_window(window, &mut run);
        Ok((run, ids))
    }

    /// Plays the SQS event source mapping until the receiver has seen `target` successes
    /// and the queue is empty: each non-empty batch is one delivery invocation.
    async fn deliver(&self, run: &mut Run, target: usize) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let handled = self.poll_once(run).await?;
            if handled == 0 && self.receiver.succeeded.load(Ordering::SeqCst) >= target {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("deliveries did not finish within 3 minutes");
            }
        }
    }

    /// One receive from the timer queue, handled as the event source mapping would hand
    /// it to the delivery function; returns how many messages it held.
    async fn poll_once(&self, run: &mut Run) -> Result<usize> {
        let handled = match &self.via {
            Via::InProcess { emulator, .. } => {
                let started = Instant::now();
                let handled = emulator
                    .drain_queue_once()
                    .await
                    .map_err(anyhow::Error::msg)?;
                if handled > 0 {
                    run.delivery(started.elapsed().as_secs_f64());
                }
                handled
            }
            Via::Functions {
                functions,
                sqs,
                queue_url,
                ..
            } => poll_into_function(functions, sqs, queue_url, run).await?,
        };
        if handled == 0 {
            run.idle_receives += 1;
        }
        Ok(handled)
    }

    /// About `n` occurrences of ten schedules that fire every second (so that occurrences
    /// share batches, as at volume). Only the occurrences are counted: creating and
    /// deleting a schedule happens once in its life, not once per occurrence. Each
    /// occurrence registers the next before its call, so the window holds as many
    /// registrations as calls.
    async fn occurrences(&self, n: usize) -> Result<Run> {
        const SCHEDULES: usize = 10;
        let mut ids = Vec::new();
        for i in 0..SCHEDULES {
            let body = json!({"every": "1s", "url": format!("{}/ok", self.receiver.url), "body": order_event(i)});
            let (status, answer, _) = self
                .call("POST", "/v1/schedules", Some(&body), None)
                .await?;
            if status != StatusCode::CREATED {
                bail!("creating a schedule answered {status}: {answer}");
            }
            ids.push(answer["id"].as_str().context("no id")?.to_string());
        }
        let window = self.open_window();
        let delivered = self.receiver.succeeded.load(Ordering::SeqCst);
        let mut run = Run::default();
        let deadline = Instant::now() + Duration::from_secs(180);
        while self.receiver.succeeded.load(Ordering::SeqCst) < delivered + n {
            self.poll_once(&mut run).await?;
            if Instant::now() > deadline {
                bail!("the schedules' occurrences did not come within 3 minutes");
            }
        }
        run.callbacks = self.receiver.succeeded.load(Ordering::SeqCst) - delivered;
        self.close_window(window, &mut run);
        for id in ids {
            let path = format!("/v1/schedules/{id}");
            let (status, answer, _) = self.call("DELETE", &path, None, None).await?;
            if !status.is_success() {
                bail!("deleting a schedule answered {status}: {answer}");
            }
        }
        self.drain_skipped_occurrences().await?;
        Ok(run)
    }

    /// Fires the occurrences the deleted schedules left (each is skipped), uncounted,
    /// until none is scheduled: they are the newest tasks, so the first page shows them.
    async fn drain_skipped_occurrences(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let path = "/v1/tasks?status=scheduled&limit=100";
        loop {
            let (_, answer, _) = self.call("GET", path, None, None).await?;
            let tasks = answer["tasks"].as_array().context("a page of tasks")?;
            if !tasks.iter().any(|t| t["schedule_id"].is_string()) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the deleted schedules' occurrences did not end within a minute");
            }
            self.poll_once(&mut Run::default()).await?;
        }
    }

    /// The first scenario's tasks, registered through the batch route, 100 to a request.
    async fn batched(&self, tasks: usize) -> Result<Run> {
        let window = self.open_window();
        let mut run = Run::default();
        let delivered = self.receiver.succeeded.load(Ordering::SeqCst);
        let bodies: Vec<Value> = (0..tasks)
            .map(|i| json!({"url": format!("{}/ok", self.receiver.url), "body": order_event(i), "delay": "1s"}))
            .collect();
        for chunk in bodies.chunks(100) {
            let batch = json!({ "tasks": chunk });
            let (status, answer, seconds) = self
                .call("POST", "/v1/tasks/batch", Some(&batch), None)
                .await?;
            let created = answer["tasks"]
                .as_array()
                .map_or(0, |a| a.iter().filter(|t| t["status"] == 201).count());
            if status != StatusCode::OK || created != chunk.len() {
                bail!("batch registration answered {status}: {answer}");
            }
            run.api(&request("POST", "/v1/tasks/batch", 200, seconds), seconds)?;
        }
        self.deliver(&mut run, delivered + tasks).await?;
        run.callbacks = tasks;
        self.close_window(window, &mut run);
        Ok(run)
    }

    async fn gets(&self, ids: &[String]) -> Result<Run> {
        let window = self.open_window();
        let mut run = Run::default();
        for id in ids {
            let path = format!("/v1/tasks/{id}");
            let (status, answer, seconds) = self.call("GET", &path, None, None).await?;
            if status != StatusCode::OK {
                bail!("GET answered {status}: {answer}");
            }
            run.api(&request("GET", &path, 200, seconds), seconds)?;
        }
        run.callbacks = ids.len();
        self.close_window(window, &mut run);
        Ok(run)
    }

    /// Tasks due `ahead` (a humantime duration), all in one minute's bucket or two. In
    /// process, the clock jumps to just before they are due, the buckets' schedules fire
    /// (one delivery invocation each), and their attempts go through the timer queue.
    /// Through the functions, each schedule's input is one delivery invocation; the
    /// attempts it queues come due long after the run.
    async fn far_ahead(&self, tasks: usize, ahead: &str) -> Result<Run> {
        let window = self.open_window();
        let mut run = Run::default();
        let delivered = self.receiver.succeeded.load(Ordering::SeqCst);
        for i in 0..tasks {
            let body = json!({"url": format!("{}/ok", self.receiver.url), "body": order_event(i), "delay": ahead});
            self.register(&mut run, &body, None, &self.api_key).await?;
        }
        match &self.via {
            Via::InProcess { emulator, .. } => {
                let wait = humantime::parse_duration(ahead)?;
                // A bucket fires two minutes early; a few seconds early takes the same path.
                self.clock
                    .shift(chrono::Duration::from_std(wait)? - chrono::Duration::seconds(5));
                let started = Instant::now();
                let fired = emulator
                    .fire_due_schedules()
                    .await
                    .map_err(anyhow::Error::msg)?;
                for _ in 0..fired {
                    run.delivery(started.elapsed().as_secs_f64() / fired.max(1) as f64);
                }
                run.schedule_fires = fired;
                self.deliver(&mut run, delivered + tasks).await?;
            }
            Via::Functions {
                functions,
                scheduler,
                group,
                ..
            } => {
                for input in schedule_inputs(scheduler, group).await? {
                    let (_, seconds) = functions.invoke("delivery", &input).await?;
                    run.delivery(seconds);
                    run.schedule_fires += 1;
                }
            }
        }
        run.callbacks = tasks;
        self.close_window(window, &mut run);
        Ok(run)
    }
}

/// The input of every schedule in the group, deleting each (as it would be once fired).
async fn schedule_inputs(scheduler: &aws_sdk_scheduler::Client, group: &str) -> Result<Vec<Value>> {
    let listed = scheduler.list_schedules().group_name(group).send().await?;
    let mut inputs = Vec::new();
    for name in listed.schedules().iter().filter_map(|s| s.name()) {
        let schedule = scheduler
            .get_schedule()
            .name(name)
            .group_name(group)
            .send()
            .await?;
        let input = schedule
            .target()
            .and_then(|t| t.input())
            .context("a schedule without input")?;
        inputs.push(serde_json::from_str(input)?);
        scheduler
            .delete_schedule()
            .name(name)
            .group_name(group)
            .send()
            .await?;
    }
    Ok(inputs)
}

/// One receive from the timer queue, handed to the delivery function as the event source
/// mapping would (an SQS event), then the batch delete of what it did not report failed.
async fn poll_into_function(
    functions: &Functions,
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    run: &mut Run,
) -> Result<usize> {
    poll_queue(sqs, queue_url, |batch| async move {
        let event = serde_json::to_value(&batch).map_err(|e| e.to_string())?;
        let (answer, seconds) = functions
            .invoke("delivery", &event)
            .await
            .map_err(|e| e.to_string())?;
        run.delivery(seconds);
        serde_json::from_value(answer).map_err(|e| e.to_string())
    })
    .await
    .map_err(anyhow::Error::msg)
}
