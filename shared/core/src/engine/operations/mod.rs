//! Operations: what runs the service rather than its tasks: readiness, figures and
//! metrics, authentication, the sweep that takes over lost timers, and retention.

mod retention;
mod stats;
mod sweep;

pub use stats::Stats;
pub use sweep::SweepReport;
