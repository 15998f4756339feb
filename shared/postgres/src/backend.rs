//! The PostgreSQL backend's adapters, wired to an engine: the one place that knows which
//! adapter goes with which port.

use std::sync::Arc;
use std::time::Duration;

use boomerang_core::clock::Clock;
use boomerang_core::domain::{SecretSet, SigningSecret};
use boomerang_core::engine::{Engine, EngineSettings, Ports, StorePorts};
use boomerang_core::metrics::{Metrics, MetricsView};
use boomerang_core::ports::{FlowPorts, SpanExport, StoreError, TenantsError, Webhooks};
use boomerang_embedded::{Fire, LoadSettings, LocalTimer};
use tokio::sync::mpsc;

use crate::connect::{pool, ConnectError, PgSettings};
use crate::loader::LeaseLoader;
use crate::migrate::{migrate, MigrateError};
use crate::readiness::PgReadiness;
use crate::servers::{new_server_id, Servers};
use crate::store::PgStore;
use crate::tenants::PgTenants;
use crate::timer::PgTimer;

/// The engine on the shared database, plus what the server runs beside it: the timer's
/// fires (handed to `Engine::deliver`), the loader, and the heartbeat.
pub struct PostgresBackend {
    pub engine: Arc<Engine>,
    pub fires: mpsc::UnboundedReceiver<Fire>,
    pub loader: Arc<LeaseLoader>,
    pub servers: Arc<Servers>,
    pub store: Arc<PgStore>,
    /// The signing secrets in force.
    pub secrets: SecretSet,
}

pub struct PostgresConfig {
    pub database: PgSettings,
    /// The API key clients send (the same on every server).
    pub api_key: String,
    /// The secret to sign with if the database has none yet.
    pub signing_secret: Option<SigningSecret>,
    pub webhooks: Arc<dyn Webhooks>,
    pub metrics: Arc<dyn Metrics>,
    pub metrics_view: Option<Arc<dyn MetricsView>>,
    /// How due work is leased and brought into memory.
    pub load: LoadSettings,
    /// How long a server that stopped beating keeps its work before others take it.
    pub server_lease: Duration,
    pub clock: Arc<dyn Clock>,
    pub settings: EngineSettings,
    pub spans: Option<Arc<dyn SpanExport>>,
}

#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error(transparent)]
    Migrate(#[from] MigrateError),
    #[error("cannot read the signing secrets: {0}")]
    Tenants(#[from] TenantsError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Far enough that every arm is held: the timer holds what this server owns, whatever
/// its time (the store decides what this server owns).
const HOLD_EVERYTHING: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

pub async fn postgres(config: PostgresConfig) -> Result<PostgresBackend, PostgresError> {
    let server = new_server_id();
    let database = PgSettings {
        server: Some(server.clone()),
        ..config.database
    };
    let pool = pool(&database)?;
    migrate(&pool).await?;
    let (tenants, secrets) =
        PgTenants::open(pool.clone(), &config.api_key, config.signing_secret).await?;
    let servers = Arc::new(Servers::new(
        pool.clone(),
        server.clone(),
        config.server_lease,
    ));
    servers.beat().await?;
    let store = Arc::new(PgStore::new(
        pool,
        server,
        config.load.ahead,
        config.metrics.clone(),
    ));
    store.listen(database, config.server_lease);
    let (local, fires) = LocalTimer::new(HOLD_EVERYTHING);
    let timer = Arc::new(PgTimer::new(local.clone(), store.clone()));
    let loader = Arc::new(LeaseLoader::new(store.clone(), local.clone(), config.load));
    let store_ports = StorePorts::of(store.clone())
        .with_retention(store.clone())
        .with_counts(store.clone())
        .with_flows(FlowPorts {
            counters: store.clone(),
            pauses: store.clone(),
        })
        .with_destination_slots(store.clone());
    let readiness = PgReadiness::new(store.clone(), local);
    let ports = Ports::new(
        store_ports,
        timer,
        Arc::new(tenants),
        config.webhooks,
        store.clone(),
        Arc::new(readiness),
    )
    .with_clock(config.clock)
    .with_metrics(config.metrics, config.metrics_view);
    let ports = match config.spans {
        Some(spans) => ports.with_spans(spans),
        None => ports,
    };
    Ok(PostgresBackend {
        engine: Arc::new(Engine::new(ports, config.settings)),
        fires,
        loader,
        servers,
        store,
        secrets,
    })
}
