//! The scenarios the meter runs, and the table it prints.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use boomerang::aws::bootstrap::bootstrap;
use boomerang::aws::triggers::TriggerEmulator;
use boomerang::backend::{aws_with_clients, AwsBackendConfig, AwsClients};
use boomerang::clock::Clock;
use boomerang::domain::TenantId;
use boomerang::engine::EngineSettings;
use boomerang::metrics::NoMetrics;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::meter::{Meter, Tally};
use super::prices::*;
use super::table_shape;

/// Memory of each function in the CDK stack (`infra/lib/boomerang-stack.ts`).
const API_MEMORY_MB: f64 = 512.0;
const DELIVERY_MEMORY_MB: f64 = 1024.0;

/// The system clock shifted forward by a settable amount: how the meter reaches a task
/// due in two hours without waiting for it.
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

/// What one scenario did: the AWS requests and units, and the Lambda work.
#[derive(Default)]
struct Run {
    tally: Tally,
    api_calls: usize,
    api_seconds: f64,
    delivery_invocations: usize,
    delivery_seconds: f64,
    /// Callbacks delivered (the denominator of "per million callbacks").
    callbacks: usize,
}

/// Dollars per million callbacks, by component.
#[derive(Clone, Copy, Default)]
struct Cost {
    dynamodb: f64,
    sqs: f64,
    scheduler: f64,
    lambda: f64,
    api_gateway: f64,
}

impl Cost {
    fn of(run: &Run) -> Cost {
        let per = 1.0 / run.callbacks.max(1) as f64;
        let t = &run.tally;
        let gb_seconds = run.api_seconds * API_MEMORY_MB / 1024.0
            + run.delivery_seconds * DELIVERY_MEMORY_MB / 1024.0;
        Cost {
            dynamodb: per
                * (t.write_units() * DYNAMODB_PER_MILLION_WRITE_UNITS
                    + t.read_units * DYNAMODB_PER_MILLION_READ_UNITS),
            sqs: per * t.requests_of("SQS") * SQS_PER_MILLION_REQUESTS,
            // Each one-time schedule fires once: creating it is free, its invocation is not.
            scheduler: per
                * t.count("Scheduler CreateSchedule")
                * SCHEDULER_PER_MILLION_INVOCATIONS,
            lambda: per
                * ((run.api_calls + run.delivery_invocations) as f64 * LAMBDA_PER_MILLION_REQUESTS
                    + gb_seconds * LAMBDA_PER_GB_SECOND * 1e6),
            api_gateway: per * run.api_calls as f64 * API_GATEWAY_PER_MILLION_REQUESTS,
        }
    }

    fn total(&self) -> f64 {
        self.dynamodb + self.sqs + self.scheduler + self.lambda + self.api_gateway
    }

    fn minus(&self, o: &Cost) -> Cost {
        Cost {
            dynamodb: self.dynamodb - o.dynamodb,
            sqs: self.sqs - o.sqs,
            scheduler: self.scheduler - o.scheduler,
            lambda: self.lambda - o.lambda,
            api_gateway: self.api_gateway - o.api_gateway,
        }
    }
}

/// The receiver every scenario calls: `/ok` answers 200, `/fail-once` answers 500 to the
/// first attempt of each task.
struct Receiver {
    url: String,
    succeeded: Arc<AtomicUsize>,
}

async fn start_receiver() -> Result<Receiver> {
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
    Ok(Receiver { url, succeeded })
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

struct Bench {
    router: axum::Router,
    api_key: String,
    emulator: Arc<TriggerEmulator>,
    meter: Meter,
    clock: Arc<ShiftedClock>,
    receiver: Receiver,
}

pub async fn run_all(endpoint: &str, tasks: usize) -> Result<()> {
    let bench = Bench::start(endpoint).await?;
    let body = serde_json::to_string(&order_event(0))?.len();
    println!("mode:              cost");
    println!("emulator:          {endpoint} (every AWS request counted by an SDK interceptor)");
    println!("tasks per scenario: {tasks}, JSON body of {body} bytes, receiver on loopback answering at once");
    println!();

    let first = bench
        .scenario(tasks, "/ok", json!({"delay": "1s"}), false)
        .await?;
    let retry = bench
        .scenario(
            tasks,
            "/fail-once",
            json!({"delay": "1s", "retry": {"schedule": ["1s"]}}),
            false,
        )
        .await?;
    let idempotent = bench
        .scenario(tasks, "/ok", json!({"delay": "1s"}), true)
        .await?;
    let gets = bench.gets(&first.1).await?;
    let scheduled = bench.scheduled(tasks).await?;

    let rows = [
        (
            "1 KiB body, first-attempt success",
            Cost::of(&first.0),
            Some(4.00),
        ),
        (
            "each retry",
            Cost::of(&retry.0).minus(&Cost::of(&first.0)),
            Some(1.50),
        ),
        (
            "due in 2 hours (Scheduler path)",
            Cost::of(&scheduled),
            Some(5.50),
        ),
        (
            "with an Idempotency-Key",
            Cost::of(&idempotent.0),
            Some(4.70),
        ),
        ("GET of a task (per request)", Cost::of(&gets), None),
    ];
    print_table(&rows);
    println!();
    for (name, run) in [
        ("first attempt", &first.0),
        ("one retry", &retry.0),
        ("idempotency key", &idempotent.0),
        ("scheduler path", &scheduled),
        ("GET", &gets),
    ] {
        print_breakdown(name, run);
    }
    let problems = bench.meter.problems();
    if !problems.is_empty() {
        bail!("the meter could not price: {problems:?}");
    }
    println!();
    print_price_list();
    Ok(())
}

fn print_table(rows: &[(&str, Cost, Option<f64>)]) {
    println!(
        "{:<36} {:>9} {:>8} {:>9} {:>8} {:>8} {:>9} {:>8}",
        "$ per million callbacks",
        "DynamoDB",
        "SQS",
        "Scheduler",
        "Lambda",
        "API GW",
        "total",
        "target"
    );
    for (name, c, target) in rows {
        let target = target.map_or("".to_string(), |t| format!("≤ {t:.2}"));
        println!(
            "{:<36} {:>9.2} {:>8.2} {:>9.2} {:>8.2} {:>8.2} {:>9.2} {:>8}",
            name,
            c.dynamodb,
            c.sqs,
            c.scheduler,
            c.lambda,
            c.api_gateway,
            c.total(),
            target
        );
    }
}

fn print_breakdown(name: &str, run: &Run) {
    let per = 1.0 / run.callbacks.max(1) as f64;
    let t = &run.tally;
    let index: Vec<String> = t
        .index_write_units
        .iter()
        .map(|(k, v)| format!("{k} {:.2}", v * per))
        .collect();
    let requests: Vec<String> = t
        .requests
        .iter()
        .filter(|(k, v)| !k.starts_with("DynamoDB") && v.abs() > 1e-9)
        .map(|(k, v)| format!("{k} {:.2}", v * per))
        .collect();
    let writes: Vec<String> = t
        .writes
        .iter()
        .map(|(k, v)| format!("{k} {:.2}", v * per))
        .collect();
    println!(
        "{name:<16} per callback: write units {:.2} (table {:.2}; indexes: {}), read units {:.2}; \
         writes: {}; {}; Lambda: {:.2} API + {:.2} delivery invocations, {:.1} + {:.1} ms",
        t.write_units() * per,
        t.table_write_units * per,
        if index.is_empty() {
            "none".into()
        } else {
            index.join(", ")
        },
        t.read_units * per,
        writes.join(", "),
        requests.join(", "),
        run.api_calls as f64 * per,
        run.delivery_invocations as f64 * per,
        run.api_seconds * per * 1000.0,
        run.delivery_seconds * per * 1000.0,
    );
}

impl Bench {
    async fn start(endpoint: &str) -> Result<Bench> {
        let sdk = boomerang::aws::emulator_config(endpoint);
        let prefix = format!("cost-{}", ulid::Ulid::new().to_string().to_lowercase());
        let mut settings = bootstrap(&sdk, &prefix).await?;
        settings.allowed_cidrs.clear();
        let meter = Meter::default();
        let plain = aws_sdk_dynamodb::Client::new(&sdk);
        meter.describe_table(&settings.table, table_shape(&plain, &settings.table).await?);
        let clients = AwsClients {
            dynamodb: aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(&sdk)
                    .interceptor(meter.interceptor("DynamoDB"))
                    .build(),
            ),
            sqs: aws_sdk_sqs::Client::from_conf(
                aws_sdk_sqs::config::Builder::from(&sdk)
                    .interceptor(meter.interceptor("SQS"))
                    .build(),
            ),
            scheduler: aws_sdk_scheduler::Client::from_conf(
                aws_sdk_scheduler::config::Builder::from(&sdk)
                    .interceptor(meter.interceptor("Scheduler"))
                    .build(),
            ),
        };
        let clock = Arc::new(ShiftedClock::default());
        let backend = aws_with_clients(
            clients,
            AwsBackendConfig {
                settings,
                dev: true,
                clock: clock.clone(),
                metrics: Arc::new(NoMetrics),
                engine: EngineSettings::default(),
            },
        )?;
        let minted = backend.tenants.mint_key(&TenantId::parse("acme")?).await?;
        // The emulator plays Scheduler with a client the meter does not see (AWS's own
        // work), and the SQS event source mapping with a metered one: its receives and
        // deletes are billed to the account.
        let emulator = Arc::new(TriggerEmulator {
            scheduler: aws_sdk_scheduler::Client::new(&sdk),
            sqs: backend.sqs.clone(),
            group: backend.settings.schedule_group.clone(),
            queue_url: backend.settings.timer_queue_url.clone(),
            engine: backend.engine.clone(),
            clock: clock.clone(),
        });
        Ok(Bench {
            router: boomerang::api::router(backend.engine.clone()),
            api_key: minted.api_key,
            emulator,
            meter,
            clock,
            receiver: start_receiver().await?,
        })
    }

    /// One API request through the Router, as the API Lambda gets it; returns the answer
    /// and how long the handler took.
    async fn call(&self, request: Request<Body>) -> Result<(StatusCode, Value, f64)> {
        let started = Instant::now();
        let response = self.router.clone().oneshot(request).await?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await?;
        let seconds = started.elapsed().as_secs_f64();
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            seconds,
        ))
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Request<Body> {
        Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {}", self.api_key))
            .header("content-type", "application/json")
            .body(body.map_or(Body::empty(), |b| Body::from(b.to_string())))
            .expect("request")
    }

    /// Registers `tasks` callbacks to `path` with `extra` fields, delivers them all, and
    /// returns what it took and the task ids.
    async fn scenario(
        &self,
        tasks: usize,
        path: &str,
        extra: Value,
        idempotent: bool,
    ) -> Result<(Run, Vec<String>)> {
        let before = self.meter.tally();
        let mut run = Run::default();
        let mut ids = Vec::new();
        let delivered = self.receiver.succeeded.load(Ordering::SeqCst);
        for i in 0..tasks {
            let mut body =
                json!({"url": format!("{}{path}", self.receiver.url), "body": order_event(i)});
            for (k, v) in extra.as_object().into_iter().flatten() {
                body[k] = v.clone();
            }
            let mut request = self.request("POST", "/v1/tasks", Some(&body));
            if idempotent {
                let key = format!("order-{}-{i}", ulid::Ulid::new());
                request
                    .headers_mut()
                    .insert("idempotency-key", key.parse()?);
            }
            let (status, answer, seconds) = self.call(request).await?;
            if status != StatusCode::CREATED {
                bail!("registration answered {status}: {answer}");
            }
            run.api_calls += 1;
            run.api_seconds += seconds;
            ids.push(answer["id"].as_str().context("no id")?.to_string());
        }
        self.deliver(&mut run, delivered + tasks).await?;
        run.callbacks = tasks;
        run.tally = self.meter.tally().minus(&before);
        Ok((run, ids))
    }

    /// Plays the SQS event source mapping until the receiver has seen `target` successes
    /// and the queue is empty: each non-empty batch is one delivery invocation.
    async fn deliver(&self, run: &mut Run, target: usize) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let started = Instant::now();
            let handled = self
                .emulator
                .drain_queue_once()
                .await
                .map_err(anyhow::Error::msg)?;
            if handled > 0 {
                run.delivery_invocations += 1;
                run.delivery_seconds += started.elapsed().as_secs_f64();
            } else if self.receiver.succeeded.load(Ordering::SeqCst) >= target {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("deliveries did not finish within 3 minutes");
            }
        }
    }

    async fn gets(&self, ids: &[String]) -> Result<Run> {
        let before = self.meter.tally();
        let mut run = Run::default();
        for id in ids {
            let (status, answer, seconds) = self
                .call(self.request("GET", &format!("/v1/tasks/{id}"), None))
                .await?;
            if status != StatusCode::OK {
                bail!("GET answered {status}: {answer}");
            }
            run.api_calls += 1;
            run.api_seconds += seconds;
        }
        run.callbacks = ids.len();
        run.tally = self.meter.tally().minus(&before);
        Ok(run)
    }

    /// Tasks due in two hours: registered, then the clock jumps to a second before they
    /// are due, Scheduler's fires are played, and the rest goes through the timer queue.
    async fn scheduled(&self, tasks: usize) -> Result<Run> {
        let before = self.meter.tally();
        let mut run = Run::default();
        let delivered = self.receiver.succeeded.load(Ordering::SeqCst);
        for i in 0..tasks {
            let body = json!({"url": format!("{}/ok", self.receiver.url), "body": order_event(i), "delay": "2h"});
            let (status, answer, seconds) = self
                .call(self.request("POST", "/v1/tasks", Some(&body)))
                .await?;
            if status != StatusCode::CREATED {
                bail!("registration answered {status}: {answer}");
            }
            run.api_calls += 1;
            run.api_seconds += seconds;
        }
        // Scheduler fires two minutes early; a few seconds early is enough to take the
        // same path (the fire re-arms the rest through the timer queue).
        self.clock
            .shift(chrono::Duration::hours(2) - chrono::Duration::seconds(5));
        let started = Instant::now();
        let fired = self
            .emulator
            .fire_due_schedules()
            .await
            .map_err(anyhow::Error::msg)?;
        // Scheduler invokes the delivery function once per schedule.
        run.delivery_invocations += fired;
        run.delivery_seconds += started.elapsed().as_secs_f64();
        self.deliver(&mut run, delivered + tasks).await?;
        run.callbacks = tasks;
        run.tally = self.meter.tally().minus(&before);
        Ok(run)
    }
}
