//! The engine: every use case of Boomerang, as logic over the ports. Its methods are
//! grouped by use case, each group an `impl Engine` block (or several) in a module named
//! after it: `tasks`, `bulk`, `delivery`, `holds`, `schedules`, `flows`, `breakers`, `signing_secrets` and `operations`. The
//! engine's callers see one type, so a method's group is where to read it, not part of
//! its name.

mod breakers;
mod bulk;
mod delivery;
mod error;
mod flows;
mod holds;
mod operations;
mod orders;
mod ports;
mod schedules;
mod signing_secrets;
mod state;
mod tasks;
mod traces;

pub use bulk::{bulk_runner, BulkPreview, JobRun, MAX_RUNNING_JOBS};
pub use delivery::{
    DeliverOutcome, DeliveryLimits, Drained, Route, WorkSlot, DEFAULT_CONCURRENCY,
    DEFAULT_PER_DESTINATION, PER_DESTINATION_RANGE, PLACES_PER_CALL,
};
pub use error::{EngineError, Missing};
pub use flows::FlowState;
pub use holds::Release;
pub use operations::{Stats, SweepReport};
pub use orders::{OrderLine, ORDER_RECHECK};
pub use ports::{Ports, StorePorts};
pub use schedules::NewSchedule;
pub use state::{
    this_process, Engine, EngineSettings, DEFAULT_SLOW_CALL, SLOW_MIN_CALLS, SLOW_SHARE_PERCENT,
    SLOW_WINDOW,
};
pub use tasks::{
    FireTime, KeyOutcome, NewTask, Registration, Replacement, RetrySource, Stored, Submission,
    TaskDetails, TenantLimits, DEFAULT_MAX_PENDING, DEFAULT_TENANT_RATE, MAX_PENDING_RANGE,
    TENANT_RATE_RANGE,
};
