//! One constructor for a running local server: it checks the configuration, builds the
//! chosen backend's adapters and engine (`boomerang_embedded::embedded` or
//! `boomerang_aws::backend::aws`) and starts the background loops that backend needs.
//! `boomerang serve` only parses its flags and calls it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use boomerang_aws::triggers::TriggerEmulator;
use boomerang_aws::{AwsBackendConfig, AwsSettings, SettingsError};
use boomerang_core::clock::SystemClock;
use boomerang_core::domain::{SecretId, SigningSecret, TenantId};
use boomerang_core::engine::Engine;
use boomerang_core::ports::StoreError;
use boomerang_embedded::tenants::credentials::{self, CredentialsError};
use boomerang_embedded::{EmbeddedConfig, LoadSettings, SecretsKept, StaticTenants};
use boomerang_webhook::client::ClientBuildError;
use boomerang_webhook::{DestinationPolicy, HttpWebhooks};

use crate::config::{BackendChoice, ConfigError, ServiceConfig, DEFAULT_RETENTION, LOCAL_TENANT};
use crate::connections::{self, ConnectionLimits};
use crate::lock::{self, LockError};
use crate::prometheus::PrometheusMetrics;
use crate::{loops, open_files};
use tokio::sync::watch;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot create the data directory {0}: {1}")]
    DataDir(PathBuf, #[source] std::io::Error),
    /// The data directory is another process's, or could not be locked.
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Postgres(#[from] boomerang_postgres::PostgresError),
    #[error("--api-key (or BOOMERANG_API_KEY) is required with --backend postgres: every server sharing the database must accept the same key")]
    NoApiKey,
    #[error("--signing-secret is not a signing secret: {0}")]
    SigningSecret(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Client(#[from] ClientBuildError),
    #[error(transparent)]
    Telemetry(#[from] boomerang_telemetry::TelemetryError),
    /// The open-file limit cannot hold the deliveries `--concurrency` allows, their
    /// connections and the server's own files: it would run out of files under load.
    #[error(
        "--concurrency {concurrency} needs an open-file limit of at least {needed} \
         (2 per delivery, 128 for the server's own, 16 for API connections); the limit is \
         {limit}: lower --concurrency or raise the limit (ulimit -n)"
    )]
    TooFewFiles {
        concurrency: usize,
        needed: u64,
        limit: u64,
    },
    /// An explicit `--max-connections` the open-file limit cannot hold beside the
    /// deliveries: the API would run out of files before it reached its cap.
    #[error(
        "--max-connections {max_connections} needs an open-file limit of at least {needed} \
         (one per connection, 2 per delivery of --concurrency, 128 for the server's own); \
         the limit is {limit}: lower --max-connections or raise the limit (ulimit -n)"
    )]
    TooManyConnections {
        max_connections: usize,
        needed: u64,
        limit: u64,
    },
}

/// A started service: the engine (to serve the API with) and what to tell the operator.
pub struct Service {
    pub engine: Arc<Engine>,
    pub summary: Vec<String>,
    connections: ConnectionLimits,
    shutdown_grace: Duration,
    /// Held for as long as the service lives: the data directory's lock (embedded backend).
    _owner: Option<std::fs::File>,
    /// The servers sharing the database (PostgreSQL backend): this one leaves at shutdown.
    servers: Option<Arc<boomerang_postgres::servers::Servers>>,
}

impl Service {
    /// Serves the API on `listener` until Ctrl-C or SIGTERM, then stops: no new
    /// connection, no new call; the calls under way get up to the shutdown grace to end
    /// (their results written), and those still under way then (or at a second signal)
    /// are handed back, due at once for the next start. The API's open connections
    /// finish their requests.
    pub async fn serve(self, listener: tokio::net::TcpListener) {
        let mut signals = StopSignals::listen();
        let (stop, stopping) = watch::channel(false);
        let router = boomerang_http::router(self.engine.clone());
        let api = tokio::spawn(connections::serve(
            listener,
            router,
            self.connections,
            stopping,
        ));
        signals.next().await;
        let _ = stop.send(true);
        tracing::info!(grace = ?self.shutdown_grace, "stopping: no new connections or calls; waiting for the calls under way");
        // A second signal cuts the grace short: whatever is still under way is handed
        // back at once (due at the next start), not left to its lease as a kill would.
        let second_signal = async {
            signals.next().await;
            tracing::warn!("a second stop signal: handing back the calls under way now");
        };
        match (self.engine)
            .drain_unless(self.shutdown_grace, second_signal)
            .await
        {
            Ok(drained) => tracing::info!(
                finished = drained.finished,
                handed_back = drained.handed_back,
                "deliveries stopped"
            ),
            Err(e) => {
                tracing::error!(error = %e, "handing back the calls under way failed; their leases will")
            }
        }
        if let Some(servers) = &self.servers {
            match servers.leave().await {
                Ok(freed) => tracing::info!(freed, "left the servers sharing the database"),
                Err(e) => {
                    tracing::error!(error = %e, "leaving failed; the others take over after the lease")
                }
            }
        }
        // Requests under way get a moment to be answered; a connection left idle is
        // already closed.
        let _ = tokio::time::timeout(API_CLOSE, api).await;
        // The spans of what was done, sent before the process ends (the exporter gives up
        // on a collector that does not answer after 5 s).
        self.engine.clone().flush_spans_off_thread().await;
    }
}

/// The fewest API connections a server is started with room for.
const MIN_API_CONNECTIONS: u64 = 16;

/// How long a shutdown waits for the API's requests under way, after the deliveries.
const API_CLOSE: Duration = Duration::from_secs(5);

/// How often the running bulk jobs are looked for (a new one starts within this).
const BULK_JOBS_PERIOD: Duration = Duration::from_secs(1);

/// Ctrl-C and SIGTERM, listened to from the service's start until it ends: a signal that
/// comes while the first is being handled is kept for the next wait, not lost.
struct StopSignals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    fn listen() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            StopSignals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// The next Ctrl-C or SIGTERM.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            async fn next_of(signal: &mut Option<tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => drop(signal.recv().await),
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                () = next_of(&mut self.interrupt) => {}
                () = next_of(&mut self.terminate) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Checks the configuration, builds the backend and starts its background loops. Must run
/// inside a Tokio runtime.
pub async fn start(config: ServiceConfig) -> Result<Service, ServiceError> {
    config.validate()?;
    // Before anything opens a file or a socket.
    let (open_files, file_limit) = open_files::raise_to_hard_limit();
    if let Some(limit) = file_limit {
        let needed = connections::reserved_files(config.concurrency) + MIN_API_CONNECTIONS;
        if limit < needed {
            return Err(ServiceError::TooFewFiles {
                concurrency: config.concurrency,
                needed,
                limit,
            });
        }
        if let Some(max_connections) = config.max_connections {
            let needed = connections::reserved_files(config.concurrency) + max_connections as u64;
            if limit < needed {
                return Err(ServiceError::TooManyConnections {
                    max_connections,
                    needed,
                    limit,
                });
            }
        }
    }
    let mut started = match &config.backend {
        BackendChoice::Embedded {
            data_dir,
            api_key,
            signing_secret,
            load,
        } => start_embedded(
            &config,
            data_dir,
            (api_key.clone(), signing_secret.clone()),
            *load,
            config.retention.unwrap_or(DEFAULT_RETENTION),
        ),
        BackendChoice::Postgres {
            database,
            api_key,
            signing_secret,
            load,
            server_lease,
        } => {
            start_postgres(
                &config,
                database,
                (api_key.clone(), signing_secret.clone()),
                (*load, *server_lease),
            )
            .await
        }
        BackendChoice::Aws {
            emulate_triggers,
            sweep_lag,
        } => start_aws(&config, *emulate_triggers, *sweep_lag).await,
    }?;
    started.summary.push(open_files);
    let max_connections = config.max_connections.unwrap_or_else(|| {
        let limit = file_limit.unwrap_or(1024);
        connections::max_connections_for(limit, config.concurrency)
    });
    started.summary.push(format!(
        "connections:    at most {max_connections}; headers within {}",
        humantime::format_duration(config.header_timeout)
    ));
    started.summary.push(format!(
        "deliveries:     at most {} at once, {} per destination",
        config.concurrency, config.destination_limit
    ));
    started.summary.push(if config.dev {
        "dev mode: http:// and private/loopback targets are allowed".into()
    } else {
        "callback URLs must be public https:// (use --dev for local receivers)".into()
    });
    Ok(Service {
        engine: started.engine,
        summary: started.summary,
        connections: ConnectionLimits {
            header_timeout: config.header_timeout,
            max_connections,
        },
        shutdown_grace: config.shutdown_grace,
        _owner: started.owner,
        servers: started.servers,
    })
}

/// A backend built and its loops started: what `start` makes a [`Service`] of.
struct Started {
    engine: Arc<Engine>,
    summary: Vec<String>,
    owner: Option<std::fs::File>,
    servers: Option<Arc<boomerang_postgres::servers::Servers>>,
}

fn start_embedded(
    config: &ServiceConfig,
    data_dir: &std::path::Path,
    (api_key, signing_secret): (Option<String>, Option<String>),
    load: LoadSettings,
    retention: Duration,
) -> Result<Started, ServiceError> {
    std::fs::create_dir_all(data_dir).map_err(|e| ServiceError::DataDir(data_dir.into(), e))?;
    let owner = lock::lock_data_dir(data_dir)?;
    let creds = credentials::load_or_create(data_dir, api_key, signing_secret)?;
    let tenant = TenantId::parse(LOCAL_TENANT).expect("a valid constant");
    let kept = match (&creds.file, creds.secret_given) {
        (_, true) => SecretsKept::Fixed,
        (Some(file), false) => SecretsKept::File(file.clone()),
        (None, false) => SecretsKept::InMemory,
    };
    let tenants = StaticTenants::with_secrets(&creds.api_key, tenant, creds.secrets.clone(), kept);
    let metrics = Arc::new(PrometheusMetrics::new());
    let backend = boomerang_embedded::embedded(EmbeddedConfig {
        data_dir,
        tenants: Arc::new(tenants),
        webhooks: Arc::new(HttpWebhooks::new(
            DestinationPolicy {
                dev: config.dev,
                allowed_cidrs: config.allowed_cidrs.clone(),
            },
            // Twice the calls one destination may have in flight: those, and as many
            // idle or being set up. The server has one tenant, held to this limit.
            2 * config.destination_limit,
        )?),
        metrics: metrics.clone(),
        metrics_view: Some(metrics),
        spans: boomerang_telemetry::otlp_from_env()?,
        load,
        clock: Arc::new(SystemClock),
        settings: config.engine_settings(),
    })?;
    let engine = backend.engine;
    tokio::spawn(loops::run_deliveries(engine.clone(), backend.fires));
    tokio::spawn(backend.loader.run(engine.clone()));
    tokio::spawn(loops::run_retention(
        engine.clone(),
        retention,
        config.sweep_interval,
    ));
    tokio::spawn(loops::run_bulk_jobs(engine.clone(), BULK_JOBS_PERIOD));
    let mut summary = vec![
        format!("data dir:       {}", data_dir.display()),
        format!("API key:        {}", creds.api_key),
        format!("signing secret: {}", creds.secrets.newest().expose()),
    ];
    if let Some(file) = &creds.file {
        summary.push(format!("(kept in {})", file.display()));
    }
    Ok(Started {
        engine,
        summary,
        owner: Some(owner),
        servers: None,
    })
}

async fn start_postgres(
    config: &ServiceConfig,
    database: &boomerang_postgres::PgSettings,
    (api_key, signing_secret): (Option<String>, Option<String>),
    (load, server_lease): (LoadSettings, Duration),
) -> Result<Started, ServiceError> {
    let api_key = api_key
        .filter(|k| !k.is_empty())
        .ok_or(ServiceError::NoApiKey)?;
    let signing_secret = signing_secret
        .map(|s| SigningSecret::parse(&s).map_err(|e| ServiceError::SigningSecret(e.to_string())))
        .transpose()?;
    let metrics = Arc::new(PrometheusMetrics::new());
    let backend = boomerang_postgres::postgres(boomerang_postgres::PostgresConfig {
        database: database.clone(),
        api_key,
        signing_secret,
        webhooks: Arc::new(HttpWebhooks::new(
            DestinationPolicy {
                dev: config.dev,
                allowed_cidrs: config.allowed_cidrs.clone(),
            },
            2 * config.destination_limit,
        )?),
        metrics: metrics.clone(),
        metrics_view: Some(metrics),
        load,
        server_lease,
        clock: Arc::new(SystemClock),
        settings: config.engine_settings(),
        spans: boomerang_telemetry::otlp_from_env()?,
    })
    .await?;
    let engine = backend.engine;
    tokio::spawn(loops::run_deliveries(engine.clone(), backend.fires));
    tokio::spawn(backend.loader.run(engine.clone()));
    tokio::spawn(backend.servers.clone().run());
    tokio::spawn(loops::run_retention(
        engine.clone(),
        config.retention.unwrap_or(DEFAULT_RETENTION),
        config.sweep_interval,
    ));
    tokio::spawn(loops::run_bulk_jobs(engine.clone(), BULK_JOBS_PERIOD));
    let summary = vec![
        "backend:        postgres".to_string(),
        format!("server id:      {}", backend.servers.id()),
        format!(
            "schema:         version {}",
            boomerang_postgres::migrate::known_version()
        ),
        // Not the secret itself: several servers' logs go to a log store, and the secret
        // is in the database for whoever holds the API key (`boomerang secrets list`).
        format!(
            "signing secret: id {} (in full: boomerang secrets list)",
            SecretId::of(backend.secrets.newest())
        ),
    ];
    Ok(Started {
        engine,
        summary,
        owner: None,
        servers: Some(backend.servers),
    })
}

async fn start_aws(
    config: &ServiceConfig,
    emulate_triggers: bool,
    sweep_lag: Duration,
) -> Result<Started, ServiceError> {
    let mut settings = AwsSettings::from_env()?;
    settings
        .allowed_cidrs
        .extend(config.allowed_cidrs.iter().copied());
    if let Some(retention) = config.retention {
        settings.retention = retention;
    }
    let sdk = boomerang_aws::sdk_config().await;
    let metrics = Arc::new(PrometheusMetrics::new());
    let backend = boomerang_aws::backend::aws(
        &sdk,
        AwsBackendConfig {
            settings,
            dev: config.dev,
            clock: Arc::new(SystemClock),
            metrics: metrics.clone(),
            metrics_view: Some(metrics),
            spans: boomerang_telemetry::otlp_from_env()?,
            engine: config.engine_settings(),
        },
    )?;
    let mut summary = vec![
        "backend:        aws".to_string(),
        format!("table:          {}", backend.settings.table),
        format!("schedule group: {}", backend.settings.schedule_group),
        "API keys:       boomerang keys create --tenant NAME".to_string(),
    ];
    if emulate_triggers {
        tokio::spawn(TriggerEmulator::for_backend(&backend).run(Duration::from_secs(1)));
        tokio::spawn(loops::run_aws_sweeper(
            backend.engine.clone(),
            backend.buckets.clone(),
            backend.system_failures(),
            config.sweep_interval,
            -chrono_of(sweep_lag),
        ));
        tokio::spawn(loops::run_bulk_jobs(
            backend.engine.clone(),
            BULK_JOBS_PERIOD,
        ));
        summary
            .push("triggers:       emulated (schedules, timer queue and sweeper run here)".into());
    }
    Ok(Started {
        engine: backend.engine,
        summary,
        owner: None,
        servers: None,
    })
}

/// For durations bounded by [`ServiceConfig::validate`], so always in range.
fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::zero())
}
