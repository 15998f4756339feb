//! `boomerang serve`: the API and the engine, on the embedded store or on AWS.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use boomerang_core::engine::{
    TenantLimits, DEFAULT_CONCURRENCY, DEFAULT_MAX_PENDING, DEFAULT_PER_DESTINATION,
    DEFAULT_TENANT_RATE,
};
use boomerang_embedded::LoadSettings;
use boomerang_postgres::PgSettings;
use boomerang_server::{BackendChoice, ServiceConfig};
use humantime::parse_duration as duration;
use ipnet::IpNet;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free one; the chosen address is printed).
    #[arg(long, env = "BOOMERANG_ADDR", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// `embedded`: SQLite in --data-dir and an in-process timer. `postgres`: a PostgreSQL
    /// database that any number of servers share (--database-url). `aws`: DynamoDB,
    /// EventBridge Scheduler and SQS (AWS, or an emulator at AWS_ENDPOINT_URL).
    #[arg(long, env = "BOOMERANG_BACKEND", default_value = "embedded", value_parser = ["embedded", "postgres", "aws"])]
    backend: String,
    /// PostgreSQL backend: the database, as a `postgres://user:password@host:port/db` URL
    /// (`?sslmode=require` or `verify-full` for TLS; the server's certificate is always
    /// verified, against the platform's roots, or the PEM file that `&sslrootcert=` or
    /// PGSSLROOTCERT names). Unset: DATABASE_URL, or
    /// libpq's PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE and PGSSLMODE.
    #[arg(long, env = "BOOMERANG_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// PostgreSQL backend: most connections this server opens (2–1000). Every server
    /// opens up to this many: keep servers × pool under the database's max_connections.
    #[arg(long, env = "BOOMERANG_DATABASE_POOL", default_value_t = 16)]
    database_pool: usize,
    /// PostgreSQL backend: longest a statement runs, and a connection takes to open,
    /// before it counts as failed (1s–10min).
    #[arg(long, env = "BOOMERANG_DATABASE_TIMEOUT", default_value = "10s", value_parser = duration)]
    database_timeout: Duration,
    /// PostgreSQL backend: how long a server that stopped (or lost the database) keeps its
    /// work before the other servers take it over (2s–10min).
    #[arg(long, env = "BOOMERANG_SERVER_LEASE", default_value = "10s", value_parser = duration)]
    server_lease: Duration,
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
    /// Extra time past a task's timeout before a stalled delivery is taken over (1s–1h).
    #[arg(long, env = "BOOMERANG_LEASE_MARGIN", default_value = "30s", value_parser = duration)]
    lease_margin: Duration,
    /// How often the store is swept for work whose timer was lost, dead letters to send
    /// again and owed alerts (100ms–1h).
    #[arg(long, env = "BOOMERANG_SWEEP_INTERVAL", default_value = "5s", value_parser = duration)]
    sweep_interval: Duration,
    /// Embedded and PostgreSQL backends: how long before its due time stored work is loaded into memory
    /// (1s–1h).
    #[arg(long, env = "BOOMERANG_LOAD_AHEAD", default_value = "5s", value_parser = duration)]
    load_ahead: Duration,
    /// Embedded and PostgreSQL backends: most rows one read of the due index takes (10 up to half of
    /// --load-window).
    #[arg(long, env = "BOOMERANG_LOAD_PAGE", default_value_t = 1000)]
    load_page: usize,
    /// Embedded and PostgreSQL backends: most attempts held in memory, waiting or being delivered, before
    /// loading waits for them to drain (1000–10000000).
    #[arg(long, env = "BOOMERANG_LOAD_WINDOW", default_value_t = 100_000)]
    load_window: usize,
    /// AWS backend with --emulate-triggers: how overdue a task must be before the sweep
    /// re-arms it (1s–1day).
    #[arg(long, env = "BOOMERANG_SWEEP_LAG", default_value = "15s", value_parser = duration)]
    sweep_lag: Duration,
    /// How long finished tasks and their attempts are kept (1s–3650d; default 30d, or
    /// BOOMERANG_RETENTION_DAYS on the AWS backend). A failed task is kept until its dead
    /// letter is sent.
    #[arg(long, env = "BOOMERANG_RETENTION", value_parser = duration)]
    retention: Option<Duration>,
    /// Where failure alerts go when neither a task (`on_failure`) nor its tenant names a
    /// destination.
    #[arg(long, env = "BOOMERANG_ALERT_URL")]
    alert_url: Option<String>,
    /// Most deliveries in flight at once, in all (1–10000).
    #[arg(long, env = "BOOMERANG_CONCURRENCY", default_value_t = DEFAULT_CONCURRENCY)]
    concurrency: usize,
    /// Most calls in flight to one destination (scheme, host and port) at once (1–1000).
    /// Up to four times as many deliveries to it are under way (the others writing their
    /// results; within half of --concurrency); beyond those, deliveries queue, uncounted,
    /// holding none of the others.
    #[arg(long, env = "BOOMERANG_DESTINATION_LIMIT", default_value_t = DEFAULT_PER_DESTINATION)]
    destination_limit: usize,
    /// How long a connection has to send a request's headers, from its start or from its
    /// previous response; a slow sender and an idle kept-alive connection are closed after
    /// it (1s–10min).
    #[arg(long, env = "BOOMERANG_HEADER_TIMEOUT", default_value = "10s", value_parser = duration)]
    header_timeout: Duration,
    /// Most API connections open at once (16–65536); beyond it a new connection takes an
    /// idle one's place. Default: the open-file limit less room for deliveries and the
    /// store.
    #[arg(long, env = "BOOMERANG_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// On SIGTERM or Ctrl-C, how long the calls under way get to end before they are
    /// handed back for the next start (0s–1h). A second signal hands them back at once.
    #[arg(long, env = "BOOMERANG_SHUTDOWN_GRACE", default_value = "30s", value_parser = duration)]
    shutdown_grace: Duration,
    /// Most API requests one tenant makes a second (1–1000000; it may save up two
    /// seconds' worth); beyond it the API answers 429 with Retry-After.
    #[arg(long, env = "BOOMERANG_TENANT_RATE", default_value_t = DEFAULT_TENANT_RATE)]
    tenant_rate: u32,
    /// Most unfinished (held, scheduled or delivering) tasks one tenant may have
    /// (1–1000000000; embedded store: DynamoDB cannot count them cheaply); beyond it a
    /// registration answers 429.
    #[arg(long, env = "BOOMERANG_MAX_PENDING", default_value_t = DEFAULT_MAX_PENDING)]
    max_pending: u64,
    /// AWS backend against an emulator: fire due schedules and poll the timer queue here,
    /// and run the sweeper, as Scheduler, the SQS trigger and the sweeper Lambda would.
    #[arg(long)]
    emulate_triggers: bool,
}

pub async fn run(args: ServeArgs) -> Result<()> {
    let load = LoadSettings {
        ahead: args.load_ahead,
        page: args.load_page,
        window: args.load_window,
        repair_every: args.sweep_interval,
    };
    let backend = match args.backend.as_str() {
        "postgres" => BackendChoice::Postgres {
            database: PgSettings {
                url: args
                    .database_url
                    .or_else(|| std::env::var("DATABASE_URL").ok())
                    .unwrap_or_default(),
                pool_size: args.database_pool,
                statement_timeout: args.database_timeout,
                connect_timeout: args.database_timeout.min(Duration::from_secs(5)),
                server: None,
            },
            api_key: args.api_key,
            signing_secret: args.signing_secret,
            load,
            server_lease: args.server_lease,
        },
        "aws" => BackendChoice::Aws {
            emulate_triggers: args.emulate_triggers,
            sweep_lag: args.sweep_lag,
        },
        _ => BackendChoice::Embedded {
            data_dir: args.data_dir,
            api_key: args.api_key,
            signing_secret: args.signing_secret,
            load,
        },
    };
    let service = boomerang_server::start(ServiceConfig {
        backend,
        dev: args.dev,
        allowed_cidrs: args.allowed_cidrs,
        lease_margin: args.lease_margin,
        sweep_interval: args.sweep_interval,
        concurrency: args.concurrency,
        destination_limit: args.destination_limit,
        retention: args.retention,
        alert_url: args.alert_url,
        header_timeout: args.header_timeout,
        max_connections: args.max_connections,
        shutdown_grace: args.shutdown_grace,
        tenant_limits: TenantLimits {
            requests_per_second: args.tenant_rate,
            max_pending: args.max_pending,
        },
    })
    .await?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?;
    let addr = listener.local_addr()?;
    println!("Boomerang listening on http://{addr}");
    for line in &service.summary {
        println!("  {line}");
    }
    println!("  console:        http://{addr}/console");
    println!("  API document:   http://{addr}/openapi.json");
    service.serve(listener).await;
    Ok(())
}
