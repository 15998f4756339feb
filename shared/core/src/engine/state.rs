//! The engine itself: its ports, its settings and the state its use cases share.

use std::time::Duration;

use super::delivery::gate::{DeliveryLimits, Gate};
use super::delivery::slow_marks::SlowDestinations;
use super::delivery::stopping::Stopping;
use super::ports::Ports;
use super::tasks::tenant_limits::{TenantGuards, TenantLimits};
use crate::domain::AlertTarget;

#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Added to a task's timeout to form its delivery lease.
    pub lease_margin: Duration,
    /// Tries of a dead-letter send before it is left to the sweeper.
    pub dead_letter_tries: u32,
    /// Most tasks one sweep handles.
    pub sweep_batch: usize,
    /// The name attempts record as their worker, unless the caller of
    /// [`Engine::deliver_as`] names another (a Lambda invocation's request id).
    pub worker: String,
    /// Where failure alerts go when neither the task nor its tenant names a destination.
    pub alert: Option<AlertTarget>,
    /// How many deliveries run at once, in all and per destination.
    pub limits: DeliveryLimits,
    /// What one tenant may ask of this process.
    pub tenant_limits: TenantLimits,
    /// A call that takes this long or longer marks its destination slow: where the
    /// backend has a slow lane, attempts there are handed to it for a while.
    pub slow_call: Duration,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            lease_margin: Duration::from_secs(30),
            dead_letter_tries: 5,
            sweep_batch: 1000,
            worker: this_process(),
            alert: None,
            limits: DeliveryLimits::default(),
            tenant_limits: TenantLimits::default(),
            slow_call: DEFAULT_SLOW_CALL,
        }
    }
}

/// The default of [`EngineSettings::slow_call`]: well past a healthy receiver's answer
/// (tens to hundreds of milliseconds), well short of the 10-second default timeout.
pub const DEFAULT_SLOW_CALL: Duration = Duration::from_secs(3);

/// `<host>:<process id>`.
pub fn this_process() -> String {
    format!(
        "{}:{}",
        gethostname::gethostname().to_string_lossy(),
        std::process::id()
    )
}

pub struct Engine {
    pub(super) ports: Ports,
    pub(super) settings: EngineSettings,
    pub(super) gate: Gate,
    pub(super) stopping: Stopping,
    pub(super) guards: TenantGuards,
    pub(super) slow: SlowDestinations,
}

impl Engine {
    pub fn new(ports: Ports, settings: EngineSettings) -> Self {
        Self {
            gate: Gate::new(settings.limits),
            stopping: Stopping::default(),
            guards: TenantGuards::default(),
            slow: SlowDestinations::default(),
            ports,
            settings,
        }
    }
}
