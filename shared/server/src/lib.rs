//! The local server, `boomerang serve`: one constructor ([`service::start`]) that checks
//! the configuration, builds the backend it names (embedded or AWS) and starts the loops
//! that backend needs; and the server's own metrics (Prometheus).

pub mod config;
pub mod connections;
mod lock;
pub mod log_writer;
mod loops;
mod open_files;
pub mod prometheus;
pub mod service;

pub use config::{BackendChoice, ServiceConfig};
pub use lock::{LockError, LOCK_FILE};
pub use service::{start, Service, ServiceError};
