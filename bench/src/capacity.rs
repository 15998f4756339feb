//! Receivers with less capacity than the burst that reaches them: one that serves a few
//! requests at a time (`slow-receiver`), one that never answers (`hanging`); and a flow's
//! limits, counted where the calls arrive (`flow`).

use std::time::{Duration, Instant};

use anyhow::Result;
use chrono::Utc;
use serde_json::json;

use super::backend::{BackendArgs, Deployment};
use super::measure::{percentiles, ConnectionWatch};
use super::procs::{ReceiverProcess, Server};
use super::receiver::ReceiverArgs;
use super::register::{due_after_registering, register_spread};

#[derive(clap::Args)]
pub struct SlowReceiverArgs {
    #[arg(long, default_value_t = 20_000)]
    tasks: usize,
    /// Requests the receiver serves at once.
    #[arg(long, default_value_t = 10)]
    slots: usize,
    /// How long it takes to serve one.
    #[arg(long, default_value_t = 50)]
    serve_ms: u64,
    /// Play a worker server: `slots` workers each accepting one connection at a time, and
    /// this listen backlog (unset: every connection accepted at once).
    #[arg(long)]
    backlog: Option<u32>,
    /// With `--backlog`: how long a worker keeps a quiet connection before it accepts
    /// another (0, the default: it closes each connection after its answer).
    #[arg(long, default_value_t = 0)]
    worker_keep_alive_ms: u64,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(clap::Args)]
pub struct HangingArgs {
    /// Deliveries to the receiver that never answers (each times out after 10 s).
    #[arg(long, default_value_t = 100)]
    hanging: usize,
    /// Callbacks to a healthy receiver, due 1 s after the hanging ones.
    #[arg(long, default_value_t = 200)]
    healthy: usize,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(clap::Args)]
pub struct FlowArgs {
    #[arg(long, default_value_t = 1500)]
    tasks: usize,
    /// The flow's rate per second.
    #[arg(long, default_value_t = 50)]
    rate: u32,
    #[arg(long, default_value_t = 3)]
    parallelism: u32,
    /// How long the receiver takes to answer each call.
    #[arg(long, default_value_t = 20)]
    serve_ms: u64,
    /// The window the rate is measured over, after the first 2 s.
    #[arg(long, default_value_t = 20)]
    window_s: u64,
    /// Run N `serve --backend aws --emulate-triggers` workers on one table and queue,
    /// against the emulators the environment names (`AWS_ENDPOINT_URL`, and
    /// `AWS_ENDPOINT_URL_DYNAMODB`), instead of the servers `--backend` asks for.
    #[arg(long)]
    aws_workers: Option<usize>,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(clap::Args)]
struct ServerArgs {
    /// The server's open-file limit (soft and hard).
    #[arg(long, default_value_t = 1024)]
    open_files: u64,
    /// The server's `--destination-limit` (its default if not given).
    #[arg(long)]
    destination_limit: Option<usize>,
    /// Concurrent keep-alive clients registering the tasks (spread over the servers).
    #[arg(long, default_value_t = 32)]
    clients: usize,
    #[command(flatten)]
    backend: BackendArgs,
}

impl ServerArgs {
    /// The servers, each with the open-file limit and destination limit asked for.
    async fn start(&self) -> Result<Deployment> {
        let limit = self.destination_limit.map(|n| n.to_string());
        let extra: Vec<&str> = match &limit {
            Some(n) => vec!["--destination-limit", n],
            None => vec![],
        };
        self.backend.start(&extra, Some(self.open_files)).await
    }

    fn describe(&self, deployment: &Deployment) -> String {
        let limit = self
            .destination_limit
            .map_or("default".to_string(), |n| n.to_string());
        format!(
            "open-file limit {}, destination limit {limit}; {}",
            self.open_files,
            deployment.describe()
        )
    }
}

/// The process ids of the servers, whose connections are counted together.
fn pids(deployment: &Deployment) -> Vec<u32> {
    deployment.servers.iter().map(Server::pid).collect()
}

pub async fn slow_receiver(args: SlowReceiverArgs) -> Result<()> {
    let receiver = ReceiverProcess::start(&ReceiverArgs {
        slots: args.slots,
        serve_ms: args.serve_ms,
        backlog: args.backlog,
        worker_keep_alive_ms: args.worker_keep_alive_ms,
        ..Default::default()
    })?;
    let deployment = args.server.start().await?;
    let servers = &deployment.servers;
    let connections = ConnectionWatch::start(receiver.port(), pids(&deployment));
    let due = due_after_registering(args.tasks)?;
    let url = receiver.url.clone();
    register_spread(servers, args.tasks, args.server.clients, move |i| {
        json!({"url": format!("{url}/t/{i}"), "fire_at": due.to_rfc3339(),
               "retry": {"schedule": ["1s"], "max_attempts": 3}})
    })
    .await?;
    let capacity = Duration::from_millis(args.tasks as u64 * args.serve_ms / args.slots as u64);
    let arrivals = receiver
        .wait_for(args.tasks, capacity * 3 + Duration::from_secs(60))
        .await?;
    let last = arrivals.iter().map(|a| a.at_ms).max().unwrap_or(0);
    let drain = Duration::from_millis((last - due.timestamp_millis()).max(0) as u64);
    let figures = ServerFigures::settled(servers, args.tasks, SETTLE).await?;

    println!("mode:              slow-receiver");
    println!(
        "tasks:             {} due at once; receiver serves {} at a time, {} ms each{}; {}",
        args.tasks,
        args.slots,
        args.serve_ms,
        args.backlog.map_or(String::new(), |b| format!(
            ", a worker per connection (keep-alive {} ms), listen backlog {b}",
            args.worker_keep_alive_ms
        )),
        args.server.describe(&deployment)
    );
    println!(
        "drain:             {:.1} s (its capacity allows {:.1} s: {:+.1} %)",
        drain.as_secs_f64(),
        capacity.as_secs_f64(),
        (drain.as_secs_f64() / capacity.as_secs_f64() - 1.0) * 100.0
    );
    println!(
        "connections:       at most {} open to the receiver from the servers (SYN-SENT included, sampled every 20 ms); at most {} requests in it at once",
        connections.most(),
        receiver.peak().await?
    );
    figures.print(arrivals.len());
    Ok(())
}

pub async fn hanging(args: HangingArgs) -> Result<()> {
    let stuck = ReceiverProcess::start(&ReceiverArgs {
        never_answer: true,
        ..Default::default()
    })?;
    let healthy = ReceiverProcess::start(&ReceiverArgs::default())?;
    let deployment = args.server.start().await?;
    let servers = &deployment.servers;
    let connections = ConnectionWatch::start(stuck.port(), pids(&deployment));
    let sampled = Instant::now();
    let clients = args.server.clients;
    let due = due_after_registering(args.hanging + args.healthy)?;
    let healthy_due = due + chrono::Duration::seconds(1);
    let once = json!({"max_attempts": 1});
    let url = stuck.url.clone();
    register_spread(servers, args.hanging, clients, move |i| {
        json!({"url": format!("{url}/hang/{i}"), "fire_at": due.to_rfc3339(), "retry": once})
    })
    .await?;
    let url = healthy.url.clone();
    register_spread(
        servers,
        args.healthy,
        clients,
        move |i| json!({"url": format!("{url}/ok/{i}"), "fire_at": healthy_due.to_rfc3339()}),
    )
    .await?;
    if Utc::now() > due {
        println!("warning: registration outlasted the lead; lateness includes the overrun");
    }
    let arrivals = healthy
        .wait_for(args.healthy, Duration::from_secs(120))
        .await?;
    let lateness: Vec<i64> = arrivals
        .iter()
        .map(|a| a.at_ms - healthy_due.timestamp_millis())
        .collect();
    let stuck_calls = stuck.count().await?;

    println!("mode:              hanging");
    println!(
        "tasks:             {} to a receiver that never answers (10 s timeout), then {} to a \
         healthy one 1 s later; {}",
        args.hanging,
        args.healthy,
        args.server.describe(&deployment)
    );
    println!("healthy lateness (ms): {}", percentiles(&lateness));
    println!(
        "hanging receiver:  {stuck_calls} calls under way, at most {} connections open to it \
         (sampled for {:.1} s, until the last healthy callback)",
        connections.most(),
        sampled.elapsed().as_secs_f64()
    );
    Ok(())
}

/// How long the figures may take to catch up with the receiver's last arrival.
pub(crate) const SETTLE: Duration = Duration::from_secs(30);

/// What the server's `/metrics` says of its deliveries.
#[derive(Default)]
pub(crate) struct ServerFigures {
    delivered: u64,
    failed: u64,
    retried: u64,
    given_back: u64,
}

impl ServerFigures {
    pub(crate) async fn read(server: &Server) -> Result<Self> {
        let text = reqwest::Client::new()
            .get(format!("{}/metrics", server.base))
            .bearer_auth(&server.api_key)
            .send()
            .await?
            .text()
            .await?;
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0) as u64
        };
        Ok(Self {
            delivered: value("boomerang_tasks_delivered_total"),
            failed: value("boomerang_tasks_failed_total"),
            retried: value("boomerang_tasks_retried_total"),
            given_back: value("boomerang_calls_given_back_total"),
        })
    }

    /// The figures once `tasks` tasks have ended (succeeded or failed), or as they are
    /// after `patience`: the receiver counts a request when it arrives, the server its
    /// task once the answer is written, a moment later.
    /// Summed over `servers`, which share one store.
    pub(crate) async fn settled(
        servers: &[Server],
        tasks: usize,
        patience: Duration,
    ) -> Result<Self> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let mut figures = Self::default();
            for server in servers {
                figures.add(&Self::read(server).await?);
            }
            let ended = (figures.delivered + figures.failed) as usize;
            if ended >= tasks || tokio::time::Instant::now() >= deadline {
                return Ok(figures);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn add(&mut self, other: &Self) {
        self.delivered += other.delivered;
        self.failed += other.failed;
        self.retried += other.retried;
        self.given_back += other.given_back;
    }

    pub(crate) fn print(&self, arrivals: usize) {
        println!(
            "outcome:           {} succeeded, {} failed, {} attempts retried, {} calls given \
             back (out of local resources); {arrivals} requests arrived",
            self.delivered, self.failed, self.retried, self.given_back
        );
    }
}

pub async fn flow(args: FlowArgs) -> Result<()> {
    let receiver = ReceiverProcess::start(&ReceiverArgs {
        serve_ms: args.serve_ms,
        ..Default::default()
    })?;
    if args.aws_workers.is_some() && !args.server.backend.is_default() {
        anyhow::bail!("--aws-workers starts servers of its own: leave out --backend, --servers and --database-url");
    }
    let deployment = match args.aws_workers {
        Some(n) => Deployment {
            servers: Server::start_aws_workers(n)?,
            database: None,
        },
        None => args.server.start().await?,
    };
    let servers = &deployment.servers;
    let due = due_after_registering(args.tasks)? + chrono::Duration::seconds(2);
    let (url, rate, parallelism) = (receiver.url.clone(), args.rate, args.parallelism);
    register_spread(servers, args.tasks, args.server.clients, move |i| {
        json!({"url": format!("{url}/t/{i}"), "fire_at": due.to_rfc3339(),
               "flow": {"key": "bench", "rate": rate, "period": "1s", "parallelism": parallelism}})
    })
    .await?;
    let expected = Duration::from_secs(args.tasks as u64 / args.rate as u64);
    let arrivals = receiver
        .wait_for(args.tasks, expected * 2 + Duration::from_secs(60))
        .await?;
    let first = arrivals.iter().map(|a| a.at_ms).min().unwrap_or(0);
    let (from, to) = (first + 2000, first + 2000 + args.window_s as i64 * 1000);
    let in_window = arrivals
        .iter()
        .filter(|a| (from..to).contains(&a.at_ms))
        .count();
    let measured = in_window as f64 / args.window_s as f64;

    println!("mode:              flow");
    println!(
        "tasks:             {} due at once in one flow (rate {}/s, parallelism {}); receiver \
         answers in {} ms; {}",
        args.tasks,
        args.rate,
        args.parallelism,
        args.serve_ms,
        match args.aws_workers {
            Some(n) => format!("{n} AWS-backend workers on the emulators"),
            None => args.server.describe(&deployment),
        }
    );
    println!(
        "rate:              {measured:.1}/s over {} s at the receiver ({:+.1} % of the flow's)",
        args.window_s,
        (measured / args.rate as f64 - 1.0) * 100.0
    );
    println!(
        "parallelism:       at most {} calls in the receiver at once",
        receiver.peak().await?
    );
    let mut figures = ServerFigures::default();
    for server in servers {
        figures.add(&ServerFigures::read(server).await?);
    }
    figures.print(arrivals.len());
    Ok(())
}
