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
    /// [`Engine::deliver_by`] names another (a Lambda invocation's request id).
    pub worker: String,
    /// Where failure alerts go when neither the task nor its tenant names a destination.
    pub alert: Option<AlertTarget>,
    /// How many deliveries run at once, in all and per destination.
    pub limits: DeliveryLimits,
    /// What one tenant may ask of this process.
    pub tenant_limits: TenantLimits,
    /// A call that takes this long or longer counts as slow. Where the backend has a slow
    /// lane, a destination with enough of its recent calls slow ([`SLOW_WINDOW`],
    /// [`SLOW_MIN_CALLS`], [`SLOW_SHARE_PERCENT`]) has its attempts handed to it for a while.
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

/// The span of a destination's latest calls that tells whether it is slow: long enough to
/// hold a fair sample of a busy receiver's calls, short enough that a receiver that turns
/// slow is found within about a minute.
pub const SLOW_WINDOW: Duration = Duration::from_secs(60);
/// The fewest calls in [`SLOW_WINDOW`] that can mark a destination slow: with fewer, two
/// unlucky calls would make a high share, and a destination that quiet holds up little
/// of the shared lane however slow it is.
pub const SLOW_MIN_CALLS: u32 = 10;
/// The share of the calls in [`SLOW_WINDOW`] (in percent) that must be slow to mark the
/// destination. At one in five, calls of [`DEFAULT_SLOW_CALL`] or more take most of the
/// time spent on a receiver that otherwise answers in a tenth of a second (3 s against
/// 4 × 0.1 s), so it is a slow receiver; a tail of a percent or a few is a quick receiver,
/// whose volume the slow lane's small concurrency would throttle.
pub const SLOW_SHARE_PERCENT: u32 = 20;

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
