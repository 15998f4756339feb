//! The embedded backend: every port of the engine on this machine alone, for the local
//! binary and most tests.
//!
//! - `store`: one SQLite file in the data directory (group commit, one writer thread);
//! - `dead_letters`: a table in that file;
//! - `timer`: the in-process timer, which holds only what falls due soon;
//! - `loader`: brings stored work back into the timer as it comes near, and repairs lost
//!   timers;
//! - `tenants`: the one API key and signing secret, kept in the data directory;
//! - `readiness`: the store takes a write, the data directory has room, the timer runs;
//! - `backend`: those adapters wired to an engine.

pub mod backend;
pub mod backup;
pub mod dead_letters;
pub mod loader;
pub mod readiness;
pub mod store;
pub mod tenants;
pub mod timer;

pub use backend::{embedded, EmbeddedBackend, EmbeddedConfig, DB_FILE};
pub use loader::{LoadSettings, Loader};
pub use store::SqliteStore;
pub use tenants::{SecretsKept, StaticTenants};
pub use timer::{Fire, LocalTimer};
