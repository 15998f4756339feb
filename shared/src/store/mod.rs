//! Task stores: embedded SQLite for the local binary, in-memory for engine unit tests.

pub(crate) mod codec;
pub mod memory;
pub mod sqlite;

pub use memory::MemoryStore;
pub use sqlite::SqliteStore;
