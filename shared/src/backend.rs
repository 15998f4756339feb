//! Builds the engine's adapters from configuration, in one place.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use tokio::sync::mpsc;

use crate::clock::SystemClock;
use crate::engine::{Engine, EngineSettings, Ports};
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
    };
    Ok(EmbeddedBackend {
        engine: Arc::new(Engine::new(ports, config.settings)),
        fires,
        store,
    })
}
