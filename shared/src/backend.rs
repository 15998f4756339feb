//! The adapters of each backend, wired to an engine: the one place that knows which
//! adapter goes with which port. [`crate::service`] adds the background loops.

use std::path::Path;
use std::sync::Arc;

use aws_config::SdkConfig;
use tokio::sync::mpsc;

use crate::aws::system_failures::SystemFailures;
use crate::aws::triggers::TriggerEmulator;
use crate::aws::AwsSettings;
use crate::clock::{Clock, ThreadRandom};
use crate::dead_letters::SqsDeadLetters;
use crate::domain::AttemptRef;
use crate::engine::{Engine, EngineSettings, Ports};
use crate::metrics::prometheus::PrometheusMetrics;
use crate::metrics::Metrics;
use crate::ports::{StoreError, Tenants};
use crate::store::{DynamoStore, SqliteStore};
use crate::tenants::DynamoTenants;
use crate::timer::{AwsTimer, LocalTimer};
use crate::webhook::client::ClientBuildError;
use crate::webhook::{DestinationPolicy, HttpWebhooks};

/// The database file inside the data directory.
pub const DB_FILE: &str = "boomerang.db";

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Client(#[from] ClientBuildError),
}

/// The engine on the embedded store and the in-process timer, plus the timer's fires
/// (which the local runtime hands to `Engine::deliver`).
pub struct EmbeddedBackend {
    pub engine: Arc<Engine>,
    pub fires: mpsc::UnboundedReceiver<AttemptRef>,
}

pub struct EmbeddedConfig<'a> {
    pub data_dir: &'a Path,
    pub policy: DestinationPolicy,
    pub tenants: Arc<dyn Tenants>,
    /// How far ahead the in-process timer holds work in memory.
    pub timer_horizon: std::time::Duration,
    pub clock: Arc<dyn Clock>,
    pub settings: EngineSettings,
}

pub fn embedded(config: EmbeddedConfig<'_>) -> Result<EmbeddedBackend, BackendError> {
    let metrics = Arc::new(PrometheusMetrics::new());
    let store = SqliteStore::open_with_metrics(&config.data_dir.join(DB_FILE), metrics.clone())?;
    let (timer, fires) = LocalTimer::new(config.timer_horizon);
    let ports = Ports {
        store: Arc::new(store.clone()),
        timer,
        dead_letters: Arc::new(store),
        tenants: config.tenants,
        webhooks: Arc::new(HttpWebhooks::new(config.policy)?),
        clock: config.clock,
        random: Arc::new(ThreadRandom),
        metrics,
    };
    Ok(EmbeddedBackend {
        engine: Arc::new(Engine::new(ports, config.settings)),
        fires,
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
    pub clock: Arc<dyn Clock>,
}

pub struct AwsBackendConfig {
    pub settings: AwsSettings,
    /// Allow `http://` and private targets (only for local runs against an emulator).
    pub dev: bool,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<dyn Metrics>,
    pub engine: EngineSettings,
}

/// The service clients the AWS backend talks through.
#[derive(Clone)]
pub struct AwsClients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub scheduler: aws_sdk_scheduler::Client,
}

impl AwsClients {
    pub fn new(sdk: &SdkConfig) -> Self {
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
            scheduler: aws_sdk_scheduler::Client::new(sdk),
        }
    }
}

pub fn aws(sdk: &SdkConfig, config: AwsBackendConfig) -> Result<AwsBackend, BackendError> {
    aws_with_clients(AwsClients::new(sdk), config)
}

/// [`aws`] on clients built elsewhere (the cost meter adds an interceptor to them).
pub fn aws_with_clients(
    clients: AwsClients,
    config: AwsBackendConfig,
) -> Result<AwsBackend, BackendError> {
    let settings = config.settings;
    let AwsClients {
        dynamodb: ddb,
        sqs,
        scheduler,
    } = clients;
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
        clock: config.clock.clone(),
        random: Arc::new(ThreadRandom),
        metrics: config.metrics,
    };
    Ok(AwsBackend {
        engine: Arc::new(Engine::new(ports, config.engine)),
        store,
        tenants,
        settings,
        sqs,
        scheduler,
        clock: config.clock,
    })
}

impl AwsBackend {
    /// The system-failures queue, if configured (the sweeper drains it).
    pub fn system_failures(&self) -> Option<SystemFailures> {
        self.settings
            .system_failures_queue_url
            .clone()
            .map(|queue_url| SystemFailures {
                sqs: self.sqs.clone(),
                queue_url,
            })
    }

    /// The stand-in for Scheduler and the SQS event source mapping (emulators only).
    pub fn trigger_emulator(&self) -> Arc<TriggerEmulator> {
        Arc::new(TriggerEmulator {
            scheduler: self.scheduler.clone(),
            sqs: self.sqs.clone(),
            group: self.settings.schedule_group.clone(),
            queue_url: self.settings.timer_queue_url.clone(),
            engine: self.engine.clone(),
            clock: self.clock.clone(),
        })
    }
}
