//! The PostgreSQL backend: any number of `boomerang serve` processes sharing one database.
//!
//! - `connect`: the connection pool (TLS, connect and statement timeouts);
//! - `migrate`: the schema's versioned migrations, applied at start under a lock;
//! - `store`: every store port on the database's tables;
//! - `servers`: each server's heartbeat, and the take-over of a dead server's work;
//! - `loader`: leases due work to this server and brings it into the in-process timer;
//! - `backlog`: the backlog one server holds alone, read without a write per row;
//! - `timer`: the in-process timer, holding only work this server owns;
//! - `tenants`: the API key and the signing secrets, kept in the database;
//! - `readiness`: the database answers, the timer runs;
//! - `backend`: those adapters wired to an engine.
//!
//! How servers divide the work: every row of pending work has an `owner` column. A
//! server's loader leases unowned rows coming due (`FOR UPDATE SKIP LOCKED`, so servers
//! never wait on each other's rows) by writing its id there, and holds them in its
//! in-process timer; a write of a task whose next work is near leaves it with the server
//! that wrote it, which holds it at once. Only the owner loads and calls a row, so each due
//! attempt is called by one server in the normal case. A server's heartbeat keeps its row
//! in `servers` alive; when it stops beating for a lease, any other server deletes it and
//! frees its rows in the same transaction, and their loaders take them up.

pub mod backend;
mod backlog;
pub mod connect;
pub mod loader;
pub mod migrate;
pub mod readiness;
pub mod servers;
pub mod store;
pub mod tenants;
#[cfg(feature = "testing")]
pub mod testing;
pub mod timer;

pub use backend::{postgres, PostgresBackend, PostgresConfig, PostgresError};
pub use connect::{ConnectError, PgSettings};
pub use store::PgStore;
