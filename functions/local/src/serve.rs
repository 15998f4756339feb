//! `boomerang serve`: the API and the engine, on the embedded store or on AWS.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use boomerang::aws::AwsSettings;
use boomerang::backend::{self, AwsBackendConfig, EmbeddedConfig};
use boomerang::clock::SystemClock;
use boomerang::domain::TenantId;
use boomerang::engine::{Engine, EngineSettings};
use boomerang::local_runtime::{run_deliveries, run_sweeper};
use boomerang::metrics::NoMetrics;
use boomerang::tenants::StaticTenants;
use ipnet::IpNet;

use crate::credentials::{self, Credentials};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// SQLite in --data-dir and an in-process timer.
    Embedded,
    /// DynamoDB, EventBridge Scheduler and SQS (AWS, or an emulator at AWS_ENDPOINT_URL).
    Aws,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free one; the chosen address is printed).
    #[arg(long, env = "BOOMERANG_ADDR", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    #[arg(
        long,
        env = "BOOMERANG_BACKEND",
        value_enum,
        default_value = "embedded"
    )]
    backend: Backend,
    /// Where tasks are stored (embedded backend); created if missing.
    #[arg(long, env = "BOOMERANG_DATA_DIR", default_value = "./.boomerang")]
    data_dir: PathBuf,
    /// The API key clients must send as `Authorization: Bearer <key>` (embedded backend;
    /// generated if unset). The AWS backend uses keys from `boomerang keys create`.
    #[arg(long, env = "BOOMERANG_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The `whsec_…` secret deliveries are signed with (embedded backend; generated if unset).
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
    /// How often the store is swept for work that is due soon, overdue or interrupted.
    #[arg(long, env = "BOOMERANG_SWEEP_INTERVAL", default_value = "5s",
          value_parser = humantime::parse_duration)]
    sweep_interval: Duration,
    /// AWS backend with --emulate-triggers: how overdue a task must be before the sweep
    /// re-arms it.
    #[arg(long, env = "BOOMERANG_SWEEP_LAG", default_value = "90s",
          value_parser = humantime::parse_duration)]
    sweep_lag: Duration,
    /// Most deliveries in flight at once (embedded backend).
    #[arg(long, env = "BOOMERANG_CONCURRENCY", default_value_t = 64)]
    concurrency: usize,
    /// AWS backend against an emulator: fire due schedules and poll the timer queue here,
    /// and run the sweeper, as Scheduler, the SQS trigger and the sweeper Lambda would.
    #[arg(long)]
    emulate_triggers: bool,
}

impl ServeArgs {
    fn engine_settings(&self) -> EngineSettings {
        EngineSettings {
            lease_margin: self.lease_margin,
            ..EngineSettings::default()
        }
    }
}

pub async fn run(args: ServeArgs) -> Result<()> {
    let (engine, banner) = match args.backend {
        Backend::Embedded => start_embedded(&args)?,
        Backend::Aws => start_aws(&args).await?,
    };
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?;
    let addr = listener.local_addr()?;
    println!("Boomerang listening on http://{addr}");
    for line in banner {
        println!("  {line}");
    }
    if args.dev {
        println!("  dev mode: http:// and private/loopback targets are allowed");
    } else {
        println!("  callback URLs must be public https:// (use --dev for local receivers)");
    }
    axum::serve(listener, boomerang::api::router(engine))
        .with_graceful_shutdown(shutdown())
        .await?;
    Ok(())
}

fn start_embedded(args: &ServeArgs) -> Result<(Arc<Engine>, Vec<String>)> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let creds = credentials::load_or_create(
        &args.data_dir,
        args.api_key.clone(),
        args.signing_secret.clone(),
    )?;
    let tenants = StaticTenants::new(
        &creds.api_key,
        TenantId::new("default"),
        creds.secret.clone(),
    );
    let backend = backend::embedded(EmbeddedConfig {
        data_dir: args.data_dir.clone(),
        dev: args.dev,
        allowed_cidrs: args.allowed_cidrs.clone(),
        tenants: Arc::new(tenants),
        // The sweep loads work due within two sweep intervals, so nothing is missed between
        // sweeps while far-future tasks stay on disk.
        timer_horizon: args.sweep_interval * 2 + Duration::from_secs(1),
        settings: args.engine_settings(),
    })?;
    let engine = backend.engine.clone();
    tokio::spawn(run_deliveries(
        engine.clone(),
        backend.fires,
        args.concurrency,
    ));
    let lookahead =
        chrono::Duration::from_std(args.sweep_interval * 2).context("--sweep-interval")?;
    tokio::spawn(run_sweeper(engine.clone(), args.sweep_interval, lookahead));
    Ok((engine, embedded_banner(&args.data_dir, &creds)))
}

fn embedded_banner(data_dir: &std::path::Path, creds: &Credentials) -> Vec<String> {
    let mut lines = vec![
        format!("data dir:       {}", data_dir.display()),
        format!("API key:        {}", creds.api_key),
        format!("signing secret: {}", creds.secret.expose()),
    ];
    if let Some(file) = &creds.file {
        lines.push(format!("(kept in {})", file.display()));
    }
    lines
}

async fn start_aws(args: &ServeArgs) -> Result<(Arc<Engine>, Vec<String>)> {
    let mut settings = AwsSettings::from_env()?;
    settings
        .allowed_cidrs
        .extend(args.allowed_cidrs.iter().copied());
    let sdk = boomerang::aws::sdk_config().await;
    let backend = backend::aws(
        &sdk,
        AwsBackendConfig {
            settings,
            dev: args.dev,
            clock: Arc::new(SystemClock),
            metrics: Arc::new(NoMetrics),
            engine: args.engine_settings(),
        },
    )?;
    let mut banner = vec![
        "backend:        aws".to_string(),
        format!("table:          {}", backend.settings.table),
        format!("schedule group: {}", backend.settings.schedule_group),
        "API keys:       boomerang keys create --tenant NAME".to_string(),
    ];
    if args.emulate_triggers {
        tokio::spawn(backend.trigger_emulator().run(Duration::from_secs(1)));
        let lag = chrono::Duration::from_std(args.sweep_lag).context("--sweep-lag")?;
        tokio::spawn(run_sweeper(
            backend.engine.clone(),
            args.sweep_interval,
            -lag,
        ));
        banner
            .push("triggers:       emulated (schedules, timer queue and sweeper run here)".into());
    }
    Ok((backend.engine, banner))
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
