//! One constructor for a running Boomerang: it checks the configuration, builds the
//! backend's adapters and engine ([`crate::backend`]) and starts the background loops that
//! backend needs. `boomerang serve` and the Lambdas only parse their arguments and call it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use tokio::sync::{mpsc, Semaphore};

use crate::aws::{AwsSettings, SettingsError};
use crate::backend::{self, AwsBackend, AwsBackendConfig, BackendError, EmbeddedConfig};
use crate::clock::SystemClock;
use crate::domain::{AlertTarget, AttemptRef, TenantId};
use crate::engine::{Engine, EngineSettings};
use crate::metrics::prometheus::PrometheusMetrics;
use crate::metrics::MetricLines;
use crate::tenants::credentials::{self, CredentialsError};
use crate::tenants::StaticTenants;
use crate::webhook::DestinationPolicy;

/// The bounds of each setting; anything outside is refused at start-up.
pub const SWEEP_INTERVAL: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(3600));
pub const LEASE_MARGIN: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3600));
pub const SWEEP_LAG: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(24 * 3600));
pub const CONCURRENCY: (usize, usize) = (1, 10_000);
pub const RETENTION: (Duration, Duration) = (
    Duration::from_secs(1),
    Duration::from_secs(3650 * 24 * 3600),
);
/// The tenant of the local binary's single API key.
pub const LOCAL_TENANT: &str = "default";

#[derive(Clone, Debug)]
pub struct ServiceConfig {
    pub backend: BackendChoice,
    /// Allow `http://` and private or loopback targets (local development).
    pub dev: bool,
    /// Private ranges webhooks may reach even without `dev`.
    pub allowed_cidrs: Vec<IpNet>,
    /// Added to a task's timeout to form its delivery lease.
    pub lease_margin: Duration,
    /// How often the store is swept for work that is near, overdue or interrupted.
    pub sweep_interval: Duration,
    /// Most deliveries in flight at once (embedded backend).
    pub concurrency: usize,
    /// How long finished tasks are kept. Default: [`DEFAULT_RETENTION`] on the embedded
    /// backend, `BOOMERANG_RETENTION_DAYS` on AWS (where DynamoDB's TTL removes them).
    pub retention: Option<Duration>,
    /// Where failure alerts go when neither a task nor its tenant names a destination.
    pub alert_url: Option<String>,
}

pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Clone, Debug)]
pub enum BackendChoice {
    /// SQLite in `data_dir`, the in-process timer, and one API key (given or generated
    /// once and kept in `data_dir`).
    Embedded {
        data_dir: PathBuf,
        api_key: Option<String>,
        signing_secret: Option<String>,
    },
    /// DynamoDB, Scheduler and SQS as the environment says (AWS, or an emulator at
    /// `AWS_ENDPOINT_URL`). With `emulate_triggers`, this process also plays Scheduler,
    /// the SQS trigger and the sweeper, which re-arms work overdue by `sweep_lag`.
    Aws {
        emulate_triggers: bool,
        sweep_lag: Duration,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{setting} must be between {min} and {max} (got {got})")]
    OutOfRange {
        setting: &'static str,
        min: String,
        max: String,
        got: String,
    },
    #[error("{setting} must be an absolute http:// or https:// URL (got `{got}`)")]
    InvalidUrl { setting: &'static str, got: String },
    #[error("cannot create the data directory {0}: {1}")]
    DataDir(PathBuf, #[source] std::io::Error),
    #[error("the data directory {dir} is in use by another boomerang (pid {pid}); stop it first")]
    DataDirInUse { dir: PathBuf, pid: String },
    #[error("cannot lock the data directory {0}: {1}")]
    Lock(PathBuf, #[source] std::io::Error),
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// A started service: the engine (to serve the API with) and what to tell the operator.
pub struct Service {
    pub engine: Arc<Engine>,
    pub summary: Vec<String>,
    /// Held for as long as the service lives: the data directory's lock (embedded backend).
    _owner: Option<std::fs::File>,
}

impl Service {
    /// Serves the API on `listener` until Ctrl-C or SIGTERM. Deliveries in flight then are
    /// retried after their lease, at the next start.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        axum::serve(listener, crate::api::router(self.engine))
            .with_graceful_shutdown(shutdown_signal())
            .await
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut s) = signal(SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down; unfinished tasks resume at the next start");
}

impl ServiceConfig {
    /// Refuses settings that are out of range, naming the flag that sets them.
    pub fn validate(&self) -> Result<(), ServiceError> {
        within("--sweep-interval", self.sweep_interval, SWEEP_INTERVAL)?;
        within("--lease-margin", self.lease_margin, LEASE_MARGIN)?;
        if !(CONCURRENCY.0..=CONCURRENCY.1).contains(&self.concurrency) {
            return Err(out_of_range("--concurrency", CONCURRENCY, self.concurrency));
        }
        if let BackendChoice::Aws { sweep_lag, .. } = self.backend {
            within("--sweep-lag", sweep_lag, SWEEP_LAG)?;
        }
        if let Some(retention) = self.retention {
            within("--retention", retention, RETENTION)?;
        }
        if let Some(url) = &self.alert_url {
            check_alert_url("--alert-url", url)?;
        }
        Ok(())
    }

    fn engine_settings(&self) -> EngineSettings {
        EngineSettings {
            lease_margin: self.lease_margin,
            alert: self.alert_url.as_deref().map(server_alert),
            ..EngineSettings::default()
        }
    }
}

/// Checks the configuration, builds the backend and starts its background loops. Must run
/// inside a Tokio runtime.
pub async fn start(config: ServiceConfig) -> Result<Service, ServiceError> {
    config.validate()?;
    let mut service = match &config.backend {
        BackendChoice::Embedded {
            data_dir,
            api_key,
            signing_secret,
        } => start_embedded(
            &config,
            data_dir,
            (api_key.clone(), signing_secret.clone()),
            config.retention.unwrap_or(DEFAULT_RETENTION),
        ),
        BackendChoice::Aws {
            emulate_triggers,
            sweep_lag,
        } => start_aws(&config, *emulate_triggers, *sweep_lag).await,
    }?;
    service.summary.push(if config.dev {
        "dev mode: http:// and private/loopback targets are allowed".into()
    } else {
        "callback URLs must be public https:// (use --dev for local receivers)".into()
    });
    Ok(service)
}

fn start_embedded(
    config: &ServiceConfig,
    data_dir: &std::path::Path,
    (api_key, signing_secret): (Option<String>, Option<String>),
    retention: Duration,
) -> Result<Service, ServiceError> {
    std::fs::create_dir_all(data_dir).map_err(|e| ServiceError::DataDir(data_dir.into(), e))?;
    let owner = lock_data_dir(data_dir)?;
    let creds = credentials::load_or_create(data_dir, api_key, signing_secret)?;
    let tenant = TenantId::parse(LOCAL_TENANT).expect("a valid constant");
    let tenants = StaticTenants::new(&creds.api_key, tenant, creds.secret.clone());
    // The sweep loads work due within two sweep intervals, so nothing is missed between
    // sweeps while far-future tasks stay on disk. (Both are bounded by `validate`.)
    let lookahead = config.sweep_interval * 2;
    let backend = backend::embedded(EmbeddedConfig {
        data_dir,
        policy: DestinationPolicy {
            dev: config.dev,
            allowed_cidrs: config.allowed_cidrs.clone(),
        },
        tenants: Arc::new(tenants),
        timer_horizon: lookahead + Duration::from_secs(1),
        clock: Arc::new(SystemClock),
        settings: config.engine_settings(),
    })?;
    let engine = backend.engine;
    tokio::spawn(run_deliveries(
        engine.clone(),
        backend.fires,
        config.concurrency,
    ));
    tokio::spawn(run_sweeper(
        engine.clone(),
        config.sweep_interval,
        chrono_of(lookahead),
    ));
    tokio::spawn(run_retention(
        engine.clone(),
        retention,
        config.sweep_interval,
    ));
    let mut summary = vec![
        format!("data dir:       {}", data_dir.display()),
        format!("API key:        {}", creds.api_key),
        format!("signing secret: {}", creds.secret.expose()),
    ];
    if let Some(file) = &creds.file {
        summary.push(format!("(kept in {})", file.display()));
    }
    Ok(Service {
        engine,
        summary,
        _owner: Some(owner),
    })
}

/// The file whose lock says which process owns a data directory.
pub const LOCK_FILE: &str = "lock";

/// Takes the data directory for this process alone, or says which process has it. The
/// operating system releases the lock when the process ends, however it ends.
fn lock_data_dir(dir: &std::path::Path) -> Result<std::fs::File, ServiceError> {
    use std::io::{Read, Seek, Write};
    let path = dir.join(LOCK_FILE);
    let lock_error = |e| ServiceError::Lock(path.clone(), e);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(lock_error)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            return Err(ServiceError::DataDirInUse {
                dir: dir.to_path_buf(),
                pid: pid.trim().to_string(),
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(lock_error(e)),
    }
    file.set_len(0).map_err(lock_error)?;
    file.rewind().map_err(lock_error)?;
    writeln!(file, "{}", std::process::id()).map_err(lock_error)?;
    Ok(file)
}

async fn start_aws(
    config: &ServiceConfig,
    emulate_triggers: bool,
    sweep_lag: Duration,
) -> Result<Service, ServiceError> {
    let mut settings = AwsSettings::from_env()?;
    settings
        .allowed_cidrs
        .extend(config.allowed_cidrs.iter().copied());
    if let Some(retention) = config.retention {
        settings.retention = retention;
    }
    let sdk = crate::aws::sdk_config().await;
    let backend = backend::aws(
        &sdk,
        AwsBackendConfig {
            settings,
            dev: config.dev,
            clock: Arc::new(SystemClock),
            metrics: Arc::new(PrometheusMetrics::new()),
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
        tokio::spawn(backend.trigger_emulator().run(Duration::from_secs(1)));
        tokio::spawn(run_aws_sweeper(
            backend.engine.clone(),
            backend.system_failures(),
            config.sweep_interval,
            -chrono_of(sweep_lag),
        ));
        summary
            .push("triggers:       emulated (schedules, timer queue and sweeper run here)".into());
    }
    Ok(Service {
        engine: backend.engine,
        summary,
        _owner: None,
    })
}

/// The AWS backend as a Lambda builds it: settings from the environment (a missing or
/// invalid one is a start-up error naming it), the SDK's credential chain, metric lines.
pub async fn lambda() -> Result<AwsBackend, ServiceError> {
    let settings = AwsSettings::from_env()?;
    let dev = lambda_dev_mode(|k| std::env::var(k).ok())?;
    let sdk = crate::aws::sdk_config().await;
    Ok(backend::aws(
        &sdk,
        AwsBackendConfig {
            settings,
            dev,
            clock: Arc::new(SystemClock),
            metrics: Arc::new(MetricLines),
            engine: EngineSettings {
                alert: lambda_alert_url(|k| std::env::var(k).ok())?,
                ..EngineSettings::default()
            },
        },
    )?)
}

/// The server's default alert destination, from `--alert-url`.
fn server_alert(url: &str) -> AlertTarget {
    AlertTarget {
        url: url.trim().to_string(),
        headers: Vec::new(),
    }
}

/// `BOOMERANG_ALERT_URL`: the functions' default alert destination, if set.
pub fn lambda_alert_url(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<AlertTarget>, ServiceError> {
    let Some(url) = get(ENV_ALERT_URL).filter(|u| !u.trim().is_empty()) else {
        return Ok(None);
    };
    check_alert_url(ENV_ALERT_URL, &url)?;
    Ok(Some(server_alert(&url)))
}

pub const ENV_ALERT_URL: &str = "BOOMERANG_ALERT_URL";

/// An alert URL must at least be an absolute http(s) URL; where it may point is checked
/// by the webhook client's rules when an alert is raised.
pub fn check_alert_url(setting: &'static str, url: &str) -> Result<(), ServiceError> {
    match reqwest::Url::parse(url.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        _ => Err(ServiceError::InvalidUrl {
            setting,
            got: url.to_string(),
        }),
    }
}

/// `BOOMERANG_DEV=true` lets the functions call `http://` and loopback receivers, for
/// running the real binaries on this machine (cargo-lambda's runtime emulator) against an
/// emulator. It is refused unless `AWS_ENDPOINT_URL` is a loopback address, so that no
/// deployed function can have it.
pub fn lambda_dev_mode(get: impl Fn(&str) -> Option<String>) -> Result<bool, ServiceError> {
    if get("BOOMERANG_DEV").as_deref() != Some("true") {
        return Ok(false);
    }
    let endpoint = get("AWS_ENDPOINT_URL").unwrap_or_default();
    if !crate::aws::is_loopback_endpoint(&endpoint) {
        return Err(SettingsError::Invalid(
            "BOOMERANG_DEV",
            "is only for functions run locally against an emulator (AWS_ENDPOINT_URL on loopback)"
                .into(),
        )
        .into());
    }
    Ok(true)
}

/// JSON logs on stderr, the way CloudWatch Logs reads them (stdout carries the metric lines).
pub fn init_lambda_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_current_span(false)
        // CloudWatch Logs bills by the byte: no span list (the invocation's request id)
        // on every line.
        .with_span_list(false)
        .without_time()
        .init();
}

/// Hands each timer fire to `Engine::deliver`, at most `concurrency` at a time.
async fn run_deliveries(
    engine: Arc<Engine>,
    mut fires: mpsc::UnboundedReceiver<AttemptRef>,
    concurrency: usize,
) {
    let permits = Arc::new(Semaphore::new(concurrency));
    while let Some(attempt) = fires.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return; // never closed
        };
        let engine = engine.clone();
        tokio::spawn(async move {
            let (task, number) = (attempt.task_id, attempt.attempt);
            if let Err(e) = engine.deliver(attempt).await {
                // The task is still in the store; the sweep retries it.
                tracing::error!(task = %task, attempt = number, error = %e, "delivery failed");
            }
            drop(permit);
        });
    }
}

/// Sweeps every `period` (see `Engine::sweep` for `lookahead`). The first sweep runs at
/// once: start-up recovery.
async fn run_sweeper(engine: Arc<Engine>, period: Duration, lookahead: chrono::Duration) {
    every(period, || async {
        match engine.sweep(lookahead).await {
            Ok(r) if r.leases_taken_over > 0 || r.dead_letters_resent > 0 => {
                tracing::info!(?r, "sweep repaired work")
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "sweep failed"),
        }
    })
    .await
}

/// Removes tasks finished more than `retention` ago, every `period`.
async fn run_retention(engine: Arc<Engine>, retention: Duration, period: Duration) {
    every(period, || async {
        match engine.purge(retention).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(removed = n, "finished tasks past retention removed"),
            Err(e) => tracing::error!(error = %e, "removing finished tasks failed"),
        }
    })
    .await
}

/// The AWS sweeper's work, played locally: the sweep and the system-failures redrive.
async fn run_aws_sweeper(
    engine: Arc<Engine>,
    failures: Option<crate::aws::system_failures::SystemFailures>,
    period: Duration,
    lookahead: chrono::Duration,
) {
    every(period, || async {
        if let Err(e) = crate::aws::lambda::sweep(&engine, failures.as_ref(), lookahead).await {
            tracing::error!(error = %e, "sweep failed");
        }
    })
    .await
}

/// Runs `work` at once and then every `period`, for ever; a tick missed while `work` ran
/// waits for the next period instead of firing in a burst.
async fn every<F, Fut>(period: Duration, mut work: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        work().await;
    }
}

/// For durations bounded by [`ServiceConfig::validate`], so always in range.
fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::zero())
}

fn within(
    setting: &'static str,
    got: Duration,
    (min, max): (Duration, Duration),
) -> Result<(), ServiceError> {
    if (min..=max).contains(&got) {
        return Ok(());
    }
    let human = |d| humantime::format_duration(d).to_string();
    Err(ServiceError::OutOfRange {
        setting,
        min: human(min),
        max: human(max),
        got: human(got),
    })
}

fn out_of_range(setting: &'static str, (min, max): (usize, usize), got: usize) -> ServiceError {
    ServiceError::OutOfRange {
        setting,
        min: min.to_string(),
        max: max.to_string(),
        got: got.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ServiceConfig {
        ServiceConfig {
            backend: BackendChoice::Aws {
                emulate_triggers: true,
                sweep_lag: Duration::from_secs(90),
            },
            dev: false,
            allowed_cidrs: vec![],
            lease_margin: Duration::from_secs(30),
            sweep_interval: Duration::from_secs(5),
            concurrency: 64,
            retention: None,
            alert_url: None,
        }
    }

    #[test]
    fn alert_urls_must_be_absolute_http_urls() {
        let env =
            |v: &'static str| lambda_alert_url(move |k| (k == ENV_ALERT_URL).then(|| v.into()));
        assert_eq!(env("").unwrap(), None);
        let target = env(" https://ops.example.com/alerts ").unwrap().unwrap();
        assert_eq!(target.url, "https://ops.example.com/alerts");
        for bad in [
            "ops.example.com",
            "ftp://ops.example.com",
            "https://",
            "/alerts",
        ] {
            let err = env(bad).unwrap_err().to_string();
            assert!(err.contains(ENV_ALERT_URL), "{bad}: {err}");
        }
        let mut flagged = config();
        flagged.alert_url = Some("nope".into());
        assert!(flagged
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--alert-url"));
    }

    #[test]
    fn lambda_dev_mode_needs_a_loopback_emulator() {
        let env = |dev: Option<&str>, endpoint: Option<&str>| {
            let (dev, endpoint) = (dev.map(str::to_string), endpoint.map(str::to_string));
            lambda_dev_mode(move |k| match k {
                "BOOMERANG_DEV" => dev.clone(),
                "AWS_ENDPOINT_URL" => endpoint.clone(),
                _ => None,
            })
        };
        assert!(!env(None, None).unwrap());
        assert!(!env(Some("false"), Some("http://127.0.0.1:5000")).unwrap());
        assert!(env(Some("true"), Some("http://127.0.0.1:5000")).unwrap());
        assert!(env(Some("true"), Some("http://localhost:4566")).unwrap());
        for far in [
            None,
            Some("https://dynamodb.us-east-1.amazonaws.com"),
            Some("http://127.0.0.1.nip.io"),
        ] {
            let err = env(Some("true"), far).unwrap_err().to_string();
            assert!(err.starts_with("BOOMERANG_DEV"), "{err}");
        }
    }

    #[test]
    fn settings_out_of_range_are_refused_by_flag_name() {
        assert!(config().validate().is_ok());
        let refused = |c: ServiceConfig| c.validate().unwrap_err().to_string();
        let mut c = config();
        c.sweep_interval = Duration::ZERO;
        assert_eq!(
            refused(c),
            "--sweep-interval must be between 100ms and 1h (got 0s)"
        );
        let mut c = config();
        c.concurrency = 0;
        assert!(refused(c).starts_with("--concurrency must be between 1 and"));
        let mut c = config();
        c.lease_margin = Duration::from_secs(u64::MAX);
        assert!(refused(c).starts_with("--lease-margin"));
        let mut c = config();
        c.backend = BackendChoice::Aws {
            emulate_triggers: true,
            sweep_lag: Duration::from_secs(u64::MAX / 2),
        };
        assert!(refused(c).starts_with("--sweep-lag"));
        let mut c = config();
        c.retention = Some(Duration::ZERO);
        assert!(refused(c).starts_with("--retention"));
    }
}
