//! The embedded backend's adapters, wired to an engine: the one place that knows which
//! embedded adapter goes with which port.

use std::path::Path;
use std::sync::Arc;

use boomerang_core::clock::Clock;
use boomerang_core::engine::{Engine, EngineSettings, Ports, StorePorts};
use boomerang_core::metrics::{Metrics, MetricsView};
use boomerang_core::ports::{SpanExport, StoreError, Tenants, Webhooks};
use tokio::sync::mpsc;

use crate::loader::{LoadSettings, Loader};
use crate::readiness::EmbeddedReadiness;
use crate::store::SqliteStore;
use crate::timer::{Fire, LocalTimer};

/// The database file inside the data directory.
pub const DB_FILE: &str = "boomerang.db";

/// The engine on the embedded store and the in-process timer, plus the timer's fires
/// (which the local runtime hands to `Engine::deliver`, keeping each fire until its
/// delivery ends) and the loader that brings stored work back (which the local runtime
/// runs).
pub struct EmbeddedBackend {
    pub engine: Arc<Engine>,
    pub fires: mpsc::UnboundedReceiver<Fire>,
    pub loader: Arc<Loader>,
    pub timer: Arc<LocalTimer>,
}

pub struct EmbeddedConfig<'a> {
    pub data_dir: &'a Path,
    pub tenants: Arc<dyn Tenants>,
    pub webhooks: Arc<dyn Webhooks>,
    pub metrics: Arc<dyn Metrics>,
    pub metrics_view: Option<Arc<dyn MetricsView>>,
    /// How stored work is brought back into memory.
    pub load: LoadSettings,
    pub clock: Arc<dyn Clock>,
    pub settings: EngineSettings,
    /// Where finished spans go (`None`: nowhere).
    pub spans: Option<Arc<dyn SpanExport>>,
}

pub fn embedded(config: EmbeddedConfig<'_>) -> Result<EmbeddedBackend, StoreError> {
    let store =
        SqliteStore::open_with_metrics(&config.data_dir.join(DB_FILE), config.metrics.clone())?;
    // A second past the loader's reach: an arm is held even if this machine's clock
    // stepped back a little since the loader read.
    let (timer, fires) = LocalTimer::new(config.load.ahead + std::time::Duration::from_secs(1));
    let store = Arc::new(store);
    let loader = Arc::new(Loader::new(store.clone(), timer.clone(), config.load));
    // This process alone delivers the data directory's tasks: its memory keeps flow limits
    // exactly.
    let store_ports = StorePorts::of(store.clone())
        .with_retention(store.clone())
        .with_counts(store.clone())
        .with_process_flows(store.clone());
    let readiness = EmbeddedReadiness::new(store.clone(), config.data_dir, timer.clone());
    let ports = Ports::new(
        store_ports,
        timer.clone(),
        config.tenants,
        config.webhooks,
        store,
        Arc::new(readiness),
    )
    .with_clock(config.clock)
    .with_metrics(config.metrics, config.metrics_view);
    let ports = match config.spans {
        Some(spans) => ports.with_spans(spans),
        None => ports,
    };
    Ok(EmbeddedBackend {
        engine: Arc::new(Engine::new(ports, config.settings)),
        fires,
        loader,
        timer,
    })
}
