//! The local server's configuration: what `boomerang serve` sets with its flags, each
//! setting bounded, and refused at start-up naming its flag.

use std::path::PathBuf;
use std::time::Duration;

use boomerang_core::engine::{
    DeliveryLimits, EngineSettings, TenantLimits, MAX_PENDING_RANGE, PER_DESTINATION_RANGE,
    TENANT_RATE_RANGE,
};
use boomerang_embedded::LoadSettings;
use boomerang_postgres::PgSettings;
use boomerang_webhook::destination::{alert_destination, InvalidAlertUrl};
use ipnet::IpNet;

/// The bounds of each setting; anything outside is refused at start-up.
pub const SWEEP_INTERVAL_RANGE: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(3600));
pub const LEASE_MARGIN_RANGE: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(3600));
pub const SWEEP_LAG_RANGE: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(24 * 3600));
pub const CONCURRENCY_RANGE: (usize, usize) = (1, 10_000);
pub const LOAD_AHEAD_RANGE: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(3600));
pub const LOAD_PAGE_RANGE: (usize, usize) = (10, 100_000);
pub const LOAD_WINDOW_RANGE: (usize, usize) = (1_000, 10_000_000);
pub const RETENTION_RANGE: (Duration, Duration) = (
    Duration::from_secs(1),
    Duration::from_secs(3650 * 24 * 3600),
);
pub const HEADER_TIMEOUT_RANGE: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(600));
pub const MAX_CONNECTIONS_RANGE: (usize, usize) = (16, 65_536);
pub const SERVER_LEASE_RANGE: (Duration, Duration) =
    (Duration::from_secs(2), Duration::from_secs(600));
pub const DATABASE_POOL_RANGE: (usize, usize) = (2, 1000);
pub const DATABASE_TIMEOUT_RANGE: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(600));
pub const SHUTDOWN_GRACE_RANGE: (Duration, Duration) = (Duration::ZERO, Duration::from_secs(3600));
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
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
    /// Most deliveries in flight at once, in all.
    pub concurrency: usize,
    /// Most calls in flight to one destination at once.
    pub destination_limit: usize,
    /// How long finished tasks are kept. Default: [`DEFAULT_RETENTION`] on the embedded
    /// backend, `BOOMERANG_RETENTION_DAYS` on AWS (where DynamoDB's TTL removes them).
    pub retention: Option<Duration>,
    /// Where failure alerts go when neither a task nor its tenant names a destination.
    pub alert_url: Option<String>,
    /// How long a connection has to send a request's headers, from its start or from its
    /// previous response (so also how long an idle kept-alive connection stays open).
    pub header_timeout: Duration,
    /// Most API connections open at once; `None`: what fits under the open-file limit.
    pub max_connections: Option<usize>,
    /// How long a shutdown waits for the calls under way before handing them back.
    pub shutdown_grace: Duration,
    /// What one tenant may ask of this server.
    pub tenant_limits: TenantLimits,
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
        /// How stored work comes back into memory (`repair_every` is the
        /// `--sweep-interval` flag's).
        load: LoadSettings,
    },
    /// PostgreSQL, shared by any number of servers: each leases the due work it loads
    /// into its in-process timer; one API key, given to every server; the signing
    /// secrets kept in the database.
    Postgres {
        database: PgSettings,
        api_key: Option<String>,
        signing_secret: Option<String>,
        load: LoadSettings,
        /// How long a server that stopped beating keeps its work before others take it.
        server_lease: Duration,
    },
    /// DynamoDB, Scheduler and SQS as the environment says (AWS, or an emulator at
    /// `AWS_ENDPOINT_URL`). With `emulate_triggers`, this process also plays Scheduler,
    /// the SQS trigger and the sweeper, which re-arms work overdue by `sweep_lag`.
    Aws {
        emulate_triggers: bool,
        sweep_lag: Duration,
    },
}

const ALERT_URL_FLAG: &str = "--alert-url";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{setting} must be between {min} and {max} (got {got})")]
    OutOfRange {
        setting: &'static str,
        min: String,
        max: String,
        got: String,
    },
    #[error(transparent)]
    AlertUrl(#[from] InvalidAlertUrl),
}

impl ServiceConfig {
    /// Refuses settings that are out of range, naming the flag that sets them.
    pub fn validate(&self) -> Result<(), ConfigError> {
        within(
            "--sweep-interval",
            self.sweep_interval,
            SWEEP_INTERVAL_RANGE,
        )?;
        within("--lease-margin", self.lease_margin, LEASE_MARGIN_RANGE)?;
        count_within("--concurrency", self.concurrency, CONCURRENCY_RANGE)?;
        count_within(
            "--destination-limit",
            self.destination_limit,
            PER_DESTINATION_RANGE,
        )?;
        match &self.backend {
            BackendChoice::Aws { sweep_lag, .. } => {
                within("--sweep-lag", *sweep_lag, SWEEP_LAG_RANGE)?
            }
            BackendChoice::Embedded { load, .. } => validate_load(load)?,
            BackendChoice::Postgres {
                database,
                load,
                server_lease,
                ..
            } => {
                validate_load(load)?;
                within("--server-lease", *server_lease, SERVER_LEASE_RANGE)?;
                count_within("--database-pool", database.pool_size, DATABASE_POOL_RANGE)?;
                within(
                    "--database-timeout",
                    database.statement_timeout,
                    DATABASE_TIMEOUT_RANGE,
                )?;
            }
        }
        if let Some(retention) = self.retention {
            within("--retention", retention, RETENTION_RANGE)?;
        }
        if let Some(url) = &self.alert_url {
            alert_destination(ALERT_URL_FLAG, url)?;
        }
        within(
            "--header-timeout",
            self.header_timeout,
            HEADER_TIMEOUT_RANGE,
        )?;
        if let Some(max) = self.max_connections {
            count_within("--max-connections", max, MAX_CONNECTIONS_RANGE)?;
        }
        within(
            "--shutdown-grace",
            self.shutdown_grace,
            SHUTDOWN_GRACE_RANGE,
        )?;
        let limits = self.tenant_limits;
        let show = |n: u64| n.to_string();
        let rate = u64::from(limits.requests_per_second);
        let (min, max) = TENANT_RATE_RANGE;
        bounded(
            "--tenant-rate",
            rate,
            (u64::from(min), u64::from(max)),
            show,
        )?;
        bounded("--max-pending", limits.max_pending, MAX_PENDING_RANGE, show)?;
        Ok(())
    }

    pub(crate) fn engine_settings(&self) -> EngineSettings {
        EngineSettings {
            lease_margin: self.lease_margin,
            // Checked by `validate`, which every start runs first.
            alert: (self.alert_url.as_deref())
                .and_then(|url| alert_destination(ALERT_URL_FLAG, url).ok()),
            limits: DeliveryLimits {
                concurrency: self.concurrency,
                per_destination: self.destination_limit,
            },
            tenant_limits: self.tenant_limits,
            ..EngineSettings::default()
        }
    }
}

fn validate_load(load: &LoadSettings) -> Result<(), ConfigError> {
    within("--load-ahead", load.ahead, LOAD_AHEAD_RANGE)?;
    count_within("--load-window", load.window, LOAD_WINDOW_RANGE)?;
    // Two pages in hand at once must fit in the window.
    let (min, max) = LOAD_PAGE_RANGE;
    count_within("--load-page", load.page, (min, max.min(load.window / 2)))
}

fn within(
    setting: &'static str,
    got: Duration,
    range: (Duration, Duration),
) -> Result<(), ConfigError> {
    bounded(setting, got, range, |d| {
        humantime::format_duration(d).to_string()
    })
}

fn count_within(
    setting: &'static str,
    got: usize,
    range: (usize, usize),
) -> Result<(), ConfigError> {
    bounded(setting, got, range, |n| n.to_string())
}

/// Nothing if `got` is within `[min, max]`; else the refusal of `setting`, each figure as `show` says.
fn bounded<T: PartialOrd + Copy>(
    setting: &'static str,
    got: T,
    (min, max): (T, T),
    show: impl Fn(T) -> String,
) -> Result<(), ConfigError> {
    if (min..=max).contains(&got) {
        return Ok(());
    }
    Err(ConfigError::OutOfRange {
        setting,
        min: show(min),
        max: show(max),
        got: show(got),
    })
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
            concurrency: 128,
            destination_limit: 16,
            retention: None,
            alert_url: None,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_connections: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            tenant_limits: TenantLimits::default(),
        }
    }

    #[test]
    fn the_alert_url_must_be_an_absolute_http_url() {
        let mut flagged = config();
        flagged.alert_url = Some("nope".into());
        assert!(flagged
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--alert-url"));
        flagged.alert_url = Some(" https://ops.example.com/alerts ".into());
        let alert = flagged.engine_settings().alert.unwrap();
        assert_eq!(alert.url, "https://ops.example.com/alerts");
    }

    #[test]
    fn loading_settings_out_of_range_are_refused_by_flag_name() {
        let embedded = |load: LoadSettings| ServiceConfig {
            backend: BackendChoice::Embedded {
                data_dir: "unused".into(),
                api_key: None,
                signing_secret: None,
                load,
            },
            ..config()
        };
        let refused = |load| embedded(load).validate().unwrap_err().to_string();
        assert!(embedded(LoadSettings::default()).validate().is_ok());
        let ahead = Duration::from_millis(10);
        let load = LoadSettings {
            ahead,
            ..LoadSettings::default()
        };
        assert!(refused(load).starts_with("--load-ahead must be between 1s and 1h"));
        let load = LoadSettings {
            window: 10,
            ..LoadSettings::default()
        };
        assert!(refused(load).starts_with("--load-window must be between 1000"));
        let load = LoadSettings {
            page: 60_000,
            ..LoadSettings::default()
        };
        assert_eq!(
            refused(load),
            "--load-page must be between 10 and 50000 (got 60000)",
            "two pages must fit in the window"
        );
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
        c.destination_limit = 1001;
        assert_eq!(
            refused(c),
            "--destination-limit must be between 1 and 1000 (got 1001)"
        );
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
        let mut c = config();
        c.header_timeout = Duration::ZERO;
        assert!(refused(c).starts_with("--header-timeout"));
        let mut c = config();
        c.max_connections = Some(2);
        assert!(refused(c).starts_with("--max-connections must be between 16"));
        let mut c = config();
        c.shutdown_grace = Duration::from_secs(7200);
        assert!(refused(c).starts_with("--shutdown-grace"));
        let mut c = config();
        c.tenant_limits.requests_per_second = 0;
        assert!(refused(c).starts_with("--tenant-rate must be between 1"));
        let mut c = config();
        c.tenant_limits.max_pending = 0;
        assert!(refused(c).starts_with("--max-pending must be between 1"));
    }
}
