//! Task stores, one per backend: embedded SQLite for the local binary, DynamoDB for AWS,
//! and an in-memory one for engine unit tests. Each indexes exactly what
//! [`crate::domain::Task::pending_work`] says, so the sweep finds the same work on all.

pub(crate) mod codec;
pub mod dynamodb;
#[cfg(any(test, feature = "testing"))]
pub mod memory;
pub mod sqlite;

pub use dynamodb::DynamoStore;
#[cfg(any(test, feature = "testing"))]
pub use memory::MemoryStore;
pub use sqlite::SqliteStore;
