//! Builds the engine's adapters from configuration, in one place.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aws_config::SdkConfig;
use ipnet::IpNet;
use tokio::sync::mpsc;

use crate::aws::dynamodb::DynamoStore;
use crate::aws::sqs_dead_letters::SqsDeadLetters;
use crate::aws::tenants::DynamoTenants;
use crate::aws::timer::AwsTimer;
use crate::aws::triggers::TriggerEmulator;
use crate::aws::AwsSettings;
use crate::clock::{Clock, SystemClock};
use crate::engine::{Engine, EngineSettings, Ports};
use crate::metrics::{Metrics, NoMetrics};
use crate::ports::{StoreError, Tenants};
use crate::store::SqliteStore;
use crate::timer::local::{Fire, LocalTimer};
use crate::webhook::client::ClientBuildError;
use crate::webhook::{DestinationPolicy, HttpWebhooks};

/// The database file inside the data directory.
pub const DB_FILE: &str = "boomerang.db";

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("cannot create the data directory {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Client(#[from] ClientBuildError),
    #[error(transparent)]
    Settings(#[from] crate::aws::SettingsError),
}

pub struct EmbeddedConfig {
    pub data_dir: PathBuf,
    /// Allow `http://` and private targets.
    pub dev: bool,
    pub allowed_cidrs: Vec<IpNet>,
    pub tenants: Arc<dyn Tenants>,
    /// How far ahead the in-process timer holds work in memory.
    pub timer_horizon: Duration,
    pub settings: EngineSettings,
}

/// The engine on the embedded store and the in-process timer, plus the timer's fires
/// (to feed to [`crate::local_runtime::run_deliveries`]).
pub struct EmbeddedBackend {
    pub engine: Arc<Engine>,
    pub fires: mpsc::UnboundedReceiver<Fire>,
    pub store: SqliteStore,
}

pub fn embedded(config: EmbeddedConfig) -> Result<EmbeddedBackend, BackendError> {
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| BackendError::DataDir(config.data_dir.clone(), e))?;
    let store = SqliteStore::open(&config.data_dir.join(DB_FILE))?;
    let (timer, fires) = LocalTimer::new(config.timer_horizon);
    let webhooks = HttpWebhooks::new(DestinationPolicy {
        dev: config.dev,
        allowed_cidrs: config.allowed_cidrs,
    })?;
    let ports = Ports {
        store: Arc::new(store.clone()),
        timer,
        dead_letters: Arc::new(store.clone()),
        tenants: config.tenants,
        webhooks: Arc::new(webhooks),
        clock: Arc::new(SystemClock),
        metrics: Arc::new(NoMetrics),
    };
    Ok(EmbeddedBackend {
        engine: Arc::new(Engine::new(ports, config.settings)),
        fires,
        store,
    })
}

/// The engine on DynamoDB, Scheduler + SQS timers and SQS dead letters.
pub struct AwsBackend {
    pub engine: Arc<Engine>,
    pub store: Arc<DynamoStore>,
    pub tenants: Arc<DynamoTenants>,
    pub settings: AwsSettings,
    pub sqs: aws_sdk_sqs::Client,
    pub scheduler: aws_sdk_scheduler::Client,
}

pub struct AwsBackendConfig {
    pub settings: AwsSettings,
    /// Allow `http://` and private targets (only for local runs against an emulator).
    pub dev: bool,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<dyn Metrics>,
    pub engine: EngineSettings,
}

pub fn aws(sdk: &SdkConfig, config: AwsBackendConfig) -> Result<AwsBackend, BackendError> {
    let settings = config.settings;
    let ddb = aws_sdk_dynamodb::Client::new(sdk);
    let sqs = aws_sdk_sqs::Client::new(sdk);
    let scheduler = aws_sdk_scheduler::Client::new(sdk);
    let store = Arc::new(DynamoStore::new(
        ddb.clone(),
        &settings.table,
        settings.retention,
    ));
    let tenants = Arc::new(DynamoTenants::new(ddb, &settings.table));
    let timer = AwsTimer::new(
        sqs.clone(),
        scheduler.clone(),
        &settings,
        config.clock.clone(),
    );
    let webhooks = HttpWebhooks::new(DestinationPolicy {
        dev: config.dev,
        allowed_cidrs: settings.allowed_cidrs.clone(),
    })?;
    let ports = Ports {
        store: store.clone(),
        timer: Arc::new(timer),
        dead_letters: Arc::new(SqsDeadLetters::new(
            sqs.clone(),
            &settings.dead_letter_queue_url,
        )),
        tenants: tenants.clone(),
        webhooks: Arc::new(webhooks),
        clock: config.clock,
        metrics: config.metrics,
    };
    Ok(AwsBackend {
        engine: Arc::new(Engine::new(ports, config.engine)),
        store,
        tenants,
        settings,
        sqs,
        scheduler,
    })
}

impl AwsBackend {
    /// The stand-in for Scheduler and the SQS event source mapping (emulators only).
    pub fn trigger_emulator(&self) -> Arc<TriggerEmulator> {
        Arc::new(TriggerEmulator {
            scheduler: self.scheduler.clone(),
            sqs: self.sqs.clone(),
            group: self.settings.schedule_group.clone(),
            queue_url: self.settings.timer_queue_url.clone(),
            engine: self.engine.clone(),
            clock: self.engine.ports().clock.clone(),
        })
    }
}

/// The AWS backend as a Lambda builds it: settings from the environment (a missing one is
/// a start-up error naming it), the SDK's credential chain, EMF metrics.
pub async fn aws_from_env() -> Result<AwsBackend, BackendError> {
    let settings = AwsSettings::from_env()?;
    let sdk = crate::aws::sdk_config().await;
    aws(
        &sdk,
        AwsBackendConfig {
            settings,
            dev: false,
            clock: Arc::new(SystemClock),
            metrics: Arc::new(crate::metrics::EmfMetrics),
            engine: EngineSettings::default(),
        },
    )
}

/// JSON logs on stderr, the way CloudWatch Logs reads them (stdout carries EMF lines).
pub fn init_lambda_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_current_span(false)
        .without_time()
        .init();
}
