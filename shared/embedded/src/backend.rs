//! The embedded backend's adapters, wired to an engine: the one place that knows which
//! embedded adapter goes with which port.

use std::path::Path;
use std::sync::Arc;

use boomerang_core::clock::{Clock, ThreadRandom};
use boomerang_core::domain::AttemptRef;
use boomerang_core::engine::{Engine, EngineSettings, Ports};
use boomerang_core::metrics::{Metrics, MetricsView};
use boomerang_core::ports::{FlowPorts, ProcessFlowCounters, StoreError, Tenants, Webhooks};
use tokio::sync::mpsc;

use crate::readiness::EmbeddedReadiness;
use crate::store::SqliteStore;
use crate::timer::LocalTimer;

/// The database file inside the data directory.
pub const DB_FILE: &str = "boomerang.db";

/// The engine on the embedded store and the in-process timer, plus the timer's fires
/// (which the local runtime hands to `Engine::deliver`).
pub struct EmbeddedBackend {
    pub engine: Arc<Engine>,
    pub fires: mpsc::UnboundedReceiver<AttemptRef>,
}

pub struct EmbeddedConfig<'a> {
    pub data_dir: &'a Path,
    pub tenants: Arc<dyn Tenants>,
    pub webhooks: Arc<dyn Webhooks>,
    pub metrics: Arc<dyn Metrics>,
    pub metrics_view: Option<Arc<dyn MetricsView>>,
    /// How far ahead the in-process timer holds work in memory.
    pub timer_horizon: std::time::Duration,
    pub clock: Arc<dyn Clock>,
    pub settings: EngineSettings,
}

pub fn embedded(config: EmbeddedConfig<'_>) -> Result<EmbeddedBackend, StoreError> {
    let store =
        SqliteStore::open_with_metrics(&config.data_dir.join(DB_FILE), config.metrics.clone())?;
    let (timer, fires) = LocalTimer::new(config.timer_horizon);
    let store = Arc::new(store);
    let ports = Ports {
        store: store.clone(),
        sweep: store.clone(),
        policies: store.clone(),
        schedules: store.clone(),
        keyed: store.clone(),
        retention: Some(store.clone()),
        counts: Some(store.clone()),
        // This process alone delivers the data directory's tasks: its memory is exact.
        flows: Some(FlowPorts {
            counters: Arc::new(ProcessFlowCounters::default()),
            pauses: store.clone(),
        }),
        readiness: Arc::new(EmbeddedReadiness::new(
            store.clone(),
            config.data_dir,
            timer.clone(),
        )),
        timer,
        dead_letters: store,
        tenants: config.tenants,
        webhooks: config.webhooks,
        clock: config.clock,
        random: Arc::new(ThreadRandom),
        metrics: config.metrics,
        metrics_view: config.metrics_view,
    };
    Ok(EmbeddedBackend {
        engine: Arc::new(Engine::new(ports, config.settings)),
        fires,
    })
}
