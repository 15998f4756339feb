//! The local `boomerang` binary: `serve` runs the whole service on an embedded store;
//! `listen` receives and verifies callbacks.

mod credentials;
mod listen;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::http::StatusCode;
use boomerang::backend::{self, EmbeddedConfig};
use boomerang::domain::{SigningSecret, TenantId};
use boomerang::engine::EngineSettings;
use boomerang::local_runtime::{run_deliveries, run_sweeper};
use boomerang::tenants::StaticTenants;
use clap::{Parser, Subcommand};
use ipnet::IpNet;

#[derive(Parser)]
#[command(name = "boomerang", version, about = "Reliable delayed callbacks")]
struct Cli {
    /// Log format on stderr.
    #[arg(long, env = "BOOMERANG_LOG_FORMAT", default_value = "text", global = true,
          value_parser = ["text", "json"])]
    log_format: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API and the delivery engine on an embedded store.
    Serve(ServeArgs),
    /// Receive callbacks on localhost, verify their signatures and print them.
    Listen(ListenArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on (port 0 picks a free one; the chosen address is printed).
    #[arg(long, env = "BOOMERANG_ADDR", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Where tasks are stored; created if missing.
    #[arg(long, env = "BOOMERANG_DATA_DIR", default_value = "./.boomerang")]
    data_dir: PathBuf,
    /// The API key clients must send as `Authorization: Bearer <key>` (generated if unset).
    #[arg(long, env = "BOOMERANG_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The `whsec_…` secret deliveries are signed with (generated if unset).
    #[arg(long, env = "BOOMERANG_SIGNING_SECRET", hide_env_values = true)]
    signing_secret: Option<String>,
    /// Local development: allow http:// and loopback/private targets.
    #[arg(long, env = "BOOMERANG_DEV")]
    dev: bool,
    /// Private ranges webhooks may reach even without --dev (repeatable, or comma-separated).
    #[arg(
        long = "allow-cidr",
        env = "BOOMERANG_ALLOWED_CIDRS",
        value_delimiter = ','
    )]
    allowed_cidrs: Vec<IpNet>,
    /// Extra time past a task's timeout before a stalled delivery is taken over.
    #[arg(long, env = "BOOMERANG_LEASE_MARGIN", default_value = "30s",
          value_parser = humantime::parse_duration)]
    lease_margin: Duration,
    /// How often the store is swept for work that is due soon or was interrupted.
    #[arg(long, env = "BOOMERANG_SWEEP_INTERVAL", default_value = "5s",
          value_parser = humantime::parse_duration)]
    sweep_interval: Duration,
    /// Most deliveries in flight at once.
    #[arg(long, env = "BOOMERANG_CONCURRENCY", default_value_t = 64)]
    concurrency: usize,
}

#[derive(clap::Args)]
struct ListenArgs {
    #[arg(long, default_value_t = 9000)]
    port: u16,
    /// The secret to verify with; defaults to the one `serve` keeps in --data-dir.
    #[arg(long, env = "BOOMERANG_SIGNING_SECRET", hide_env_values = true)]
    signing_secret: Option<String>,
    #[arg(long, env = "BOOMERANG_DATA_DIR", default_value = "./.boomerang")]
    data_dir: PathBuf,
    /// Status code to answer with (try 500 to watch retries).
    #[arg(long, default_value_t = 200)]
    status: u16,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    init_tracing(&cli.log_format);
    match cli.command {
        Command::Serve(args) => serve(args).await,
        Command::Listen(args) => listen(args).await,
    }
}

fn init_tracing(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn serve(args: ServeArgs) -> Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let creds = credentials::load_or_create(&args.data_dir, args.api_key, args.signing_secret)?;
    let tenants = StaticTenants::new(
        &creds.api_key,
        TenantId::new("default"),
        creds.secret.clone(),
    );
    let backend = backend::embedded(EmbeddedConfig {
        data_dir: args.data_dir.clone(),
        dev: args.dev,
        allowed_cidrs: args.allowed_cidrs,
        tenants: Arc::new(tenants),
        // The sweep loads work due within two sweep intervals, so nothing is missed between
        // sweeps while far-future tasks stay on disk.
        timer_horizon: args.sweep_interval * 2 + Duration::from_secs(1),
        settings: EngineSettings {
            lease_margin: args.lease_margin,
            ..EngineSettings::default()
        },
    })?;
    let engine = backend.engine.clone();
    tokio::spawn(run_deliveries(
        engine.clone(),
        backend.fires,
        args.concurrency,
    ));
    tokio::spawn(run_sweeper(
        engine.clone(),
        args.sweep_interval,
        args.sweep_interval * 2,
    ));

    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?;
    let addr = listener.local_addr()?;
    print_banner(addr, &args.data_dir, &creds, args.dev);
    axum::serve(listener, boomerang::api::router(engine))
        .with_graceful_shutdown(shutdown())
        .await?;
    Ok(())
}

fn print_banner(
    addr: SocketAddr,
    data_dir: &std::path::Path,
    creds: &credentials::Credentials,
    dev: bool,
) {
    println!("Boomerang listening on http://{addr}");
    println!("  data dir:       {}", data_dir.display());
    println!("  API key:        {}", creds.api_key);
    println!("  signing secret: {}", creds.secret.expose());
    if let Some(file) = &creds.file {
        println!("  (kept in {})", file.display());
    }
    if dev {
        println!("  dev mode: http:// and private/loopback targets are allowed");
    } else {
        println!("  callback URLs must be public https:// (use --dev for local receivers)");
    }
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down; unfinished tasks resume at the next start");
}

async fn listen(args: ListenArgs) -> Result<()> {
    let secret = match args.signing_secret {
        Some(s) => Some(SigningSecret::parse(&s).context("--signing-secret")?),
        None => credentials::stored_secret(&args.data_dir)?,
    };
    let status = StatusCode::from_u16(args.status).context("--status")?;
    listen::run(listen::ListenConfig {
        port: args.port,
        secret,
        status,
    })
    .await
}
