//! The engine: every use case of Boomerang, as logic over the ports. Its methods are
//! grouped by use case, each group an `impl Engine` block (or several) in a module named
//! after it: `tasks`, `delivery`, `holds`, `schedules`, `flows` and `operations`. The
//! engine's callers see one type, so a method's group is where to read it, not part of
//! its name.

mod delivery;
mod flows;
mod holds;
mod operations;
mod ports;
mod schedules;
mod tasks;

use std::time::Duration;

use crate::domain::{AlertTarget, Refusal};
use crate::ports::StoreError;

pub use delivery::{
    DeliverOutcome, DeliveryLimits, Drained, WorkSlot, DEFAULT_PER_DESTINATION,
    PER_DESTINATION_RANGE,
};
pub use flows::FlowState;
pub use holds::Release;
pub use operations::{Stats, SweepReport};
pub use ports::{Ports, StorePorts};
pub use schedules::NewSchedule;
pub use tasks::{
    FireTime, KeyOutcome, NewTask, Registration, RetrySource, Submission, TaskDetails,
    TenantLimits, DEFAULT_MAX_PENDING, DEFAULT_TENANT_RATE, MAX_PENDING_RANGE, TENANT_RATE_RANGE,
};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("no such task")]
    NotFound,
    /// The task is not in a state that allows the operation.
    #[error(transparent)]
    Conflict(Refusal),
    #[error("this idempotency key was already used with a different request")]
    IdempotencyMismatch,
    #[error("{field}: {detail}")]
    Invalid { field: &'static str, detail: String },
    /// Over one of the tenant's limits: nothing was done; try again after `retry_after`.
    #[error("{detail}")]
    Limited {
        detail: String,
        retry_after: Duration,
    },
    /// The schedule is not in a state that allows the operation.
    #[error(transparent)]
    ScheduleConflict(crate::domain::ScheduleRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

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
        }
    }
}

/// `<host>:<process id>`.
pub fn this_process() -> String {
    format!(
        "{}:{}",
        gethostname::gethostname().to_string_lossy(),
        std::process::id()
    )
}

pub struct Engine {
    ports: Ports,
    settings: EngineSettings,
    gate: delivery::gate::Gate,
    stopping: delivery::stopping::Stopping,
    guards: tasks::TenantGuards,
}

impl Engine {
    pub fn new(ports: Ports, settings: EngineSettings) -> Self {
        Self {
            gate: delivery::gate::Gate::new(settings.limits),
            stopping: delivery::stopping::Stopping::default(),
            guards: tasks::TenantGuards::default(),
            ports,
            settings,
        }
    }
}
