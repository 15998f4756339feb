//! Tasks: registering them (one, a batch, or replacing by key), reading them, canceling
//! and redriving them; a tenant's named policies and templates, and its limits.

mod admission;
mod definitions;
mod keys;
mod policies;
mod register;
mod replace;
pub(in crate::engine) mod tenant_limits;

pub use definitions::Stored;
pub use keys::KeyOutcome;
pub(in crate::engine) use policies::no_flows;
pub use policies::RetrySource;
pub use register::{FireTime, NewTask, Registration, TaskDetails};
pub use replace::{Replacement, Submission};
pub use tenant_limits::{
    TenantLimits, DEFAULT_MAX_PENDING, DEFAULT_TENANT_RATE, MAX_PENDING_RANGE, TENANT_RATE_RANGE,
};
