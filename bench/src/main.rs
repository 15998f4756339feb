//! `boomerang-bench`: measures the real server on this machine and prints figures. It
//! starts `boomerang serve` (the `boomerang` binary built beside this one) on a fresh data
//! dir and a receiver in a separate process (this binary again), drives them over loopback
//! HTTP, and asserts nothing. Run it as `cargo run --release -p boomerang-bench -- burst`.

mod aws_drain;
mod backend;
mod burst;
mod capacity;
mod cost;
mod cpu_quota;
mod measure;
mod procs;
mod ratio;
mod receiver;
mod register;

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use chrono::{DateTime, Utc};
use serde_json::json;

use measure::Usage;
use procs::{ReceiverProcess, Server};
use register::register_spread;

#[derive(clap::Parser)]
#[command(
    name = "boomerang-bench",
    about = "Measure Boomerang on this machine and print figures"
)]
struct Cli {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(clap::Subcommand)]
pub enum BenchCommand {
    /// N tasks all due on one whole second a few seconds ahead: registration/s,
    /// deliveries/s, lateness of first attempts, server CPU and peak RSS.
    Burst(burst::BurstArgs),
    /// The burst, with every receiver failing twice on a 1 s schedule: the gap between
    /// attempts, and the lateness of the final success.
    Retry(burst::BurstArgs),
    /// Tasks that come due while the server is stopped: how fast the backlog drains after
    /// the restart, in what order, and how late callbacks registered meanwhile run.
    Backlog(burst::BacklogArgs),
    /// The stored burst and the backlog after a downtime, in alternated rounds (the
    /// machine's speed drifts between minutes): each one's median, and the backlog's
    /// drain as a share of the burst's deliveries.
    DrainRatio(ratio::RatioArgs),
    /// Many tasks due in 30 days: RSS, data-dir size, registration/s of the first and the
    /// last 10 %, and how long a restart takes to be ready.
    Pending(PendingArgs),
    /// A delivery in flight when the server is killed (-9): how soon after the restart the
    /// attempt runs again.
    Crash,
    /// What a callback costs on AWS: runs the AWS code path on the emulator at
    /// AWS_ENDPOINT_URL, counts every AWS request, prints $ per million callbacks.
    Cost(cost::CostArgs),
    /// Many tasks due at once to a receiver of limited capacity (10 requests at a time,
    /// 50 ms each), the server under an open-file limit: failures, connections open to the
    /// receiver, and drain time against what the receiver's capacity allows.
    SlowReceiver(capacity::SlowReceiverArgs),
    /// Deliveries to a receiver that never answers, then callbacks to a healthy one: the
    /// healthy callbacks' lateness.
    Hanging(capacity::HangingArgs),
    /// Many tasks due at once in one flow (rate 50/s, parallelism 3): the rate and the
    /// parallelism the receiver sees.
    Flow(capacity::FlowArgs),
    /// Work read back from storage on AWS, on the emulator at AWS_ENDPOINT_URL: how fast a
    /// minute's bucket is read and queued per fire invocation, and how fast the sweeper
    /// re-arms tasks left without a timer; calls per 1,000 entries, and the same with a
    /// per-call latency added, as in the region.
    AwsDrain(aws_drain::AwsDrainArgs),
    /// The benchmark's receiver (started by the other modes).
    #[command(hide = true)]
    Receiver(receiver::ReceiverArgs),
}

#[derive(clap::Args)]
pub struct PendingArgs {
    #[arg(long, default_value_t = 1_000_000)]
    tasks: usize,
    #[arg(long, default_value_t = 32)]
    clients: usize,
    #[command(flatten)]
    backend: backend::BackendArgs,
}

#[tokio::main]
async fn main() -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match <Cli as clap::Parser>::parse().command {
        BenchCommand::Burst(args) => burst::burst(args, 0).await.map(drop),
        BenchCommand::Retry(args) => burst::burst(args, 2).await.map(drop),
        BenchCommand::Backlog(args) => burst::backlog(args).await.map(drop),
        BenchCommand::DrainRatio(args) => ratio::run(args).await,
        BenchCommand::Pending(args) => pending(args).await,
        BenchCommand::Crash => crash().await,
        BenchCommand::Cost(args) => cost::run(args).await,
        BenchCommand::SlowReceiver(args) => capacity::slow_receiver(args).await,
        BenchCommand::Hanging(args) => capacity::hanging(args).await,
        BenchCommand::Flow(args) => capacity::flow(args).await,
        BenchCommand::AwsDrain(args) => aws_drain::run(args).await,
        BenchCommand::Receiver(args) => receiver::run(args).await,
    }
}

async fn pending(args: PendingArgs) -> Result<()> {
    let mut deployment = args.backend.start(&[], None).await?;
    let due: DateTime<Utc> = Utc::now() + chrono::Duration::days(30);
    let started = Instant::now();
    let finished = register_spread(
        &deployment.servers,
        args.tasks,
        args.clients,
        move |i| json!({"url": format!("https://example.com/t/{i}"), "fire_at": due.to_rfc3339()}),
    )
    .await?;
    let mut sorted = finished.clone();
    sorted.sort();
    let tenth = (args.tasks / 10).max(1);
    let rate = |from: Instant, to: Instant| tenth as f64 / (to - from).as_secs_f64().max(1e-9);
    let first = rate(started, sorted[tenth - 1]);
    let last = rate(sorted[args.tasks - tenth - 1], sorted[args.tasks - 1]);
    let usages: Vec<Usage> = deployment
        .servers
        .iter()
        .map(|s| Usage::of(s.pid()))
        .collect::<Result<_>>()?;
    let size = match &deployment.database {
        Some(db) => u64::try_from(db.size().await?)?,
        None => procs::dir_size(&deployment.servers[0].data_dir)?,
    };
    let server = &mut deployment.servers[0];
    let ready = server.restart()?;
    let after = Usage::of(server.pid())?;
    println!("mode:              pending");
    deployment.print_header();
    println!(
        "tasks:             {} due in 30 days ({} clients)",
        args.tasks, args.clients
    );
    println!(
        "registration:      first 10 % {first:.0}/s, last 10 % {last:.0}/s ({:+.0} %)",
        (last / first - 1.0) * 100.0
    );
    for (i, usage) in usages.iter().enumerate() {
        let which = match usages.len() {
            1 => String::new(),
            _ => format!(" {}", i + 1),
        };
        println!(
            "{:<19}{} MB (peak {} MB)",
            format!("server{which} RSS:"),
            usage.rss_kb / 1024,
            usage.peak_rss_kb / 1024
        );
    }
    match &deployment.database {
        Some(_) => println!(
            "database size:     {} MB (pg_database_size)",
            size / (1024 * 1024)
        ),
        None => println!("data dir:          {} MB", size / (1024 * 1024)),
    }
    println!(
        "restart ready in:  {} ms (RSS after restart {} MB){}",
        ready.as_millis(),
        after.rss_kb / 1024,
        match deployment.servers.len() {
            1 => "",
            _ => ", server 1 alone",
        }
    );
    Ok(())
}

async fn crash() -> Result<()> {
    let receiver = ReceiverProcess::start(&receiver::ReceiverArgs {
        hang_first_ms: 120_000,
        ..Default::default()
    })?;
    let mut server = Server::start(&[])?;
    let task = json!({"url": format!("{}/slow", receiver.url), "timeout": "60s"});
    let http = reqwest::Client::new();
    let res = http
        .post(format!("{}/v1/tasks", server.base))
        .bearer_auth(&server.api_key)
        .json(&task)
        .send()
        .await?;
    if res.status().as_u16() != 201 {
        bail!("registration answered {}", res.status());
    }
    receiver.wait_for(1, Duration::from_secs(30)).await?;
    let restarted = server.kill9_and_restart()?;
    receiver.wait_for(2, Duration::from_secs(120)).await?;
    println!("mode:              crash");
    println!("task timeout 60 s, lease margin 30 s: a lease would hold the attempt for 90 s");
    println!(
        "in-flight attempt re-run {} ms after the restart began",
        restarted.elapsed().as_millis()
    );
    Ok(())
}
