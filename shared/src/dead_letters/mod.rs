//! Where exhausted tasks are reported: a table in the embedded store, an SQS queue on
//! AWS, and a list for engine unit tests.

#[cfg(any(test, feature = "testing"))]
pub mod memory;
pub mod sqlite;
pub mod sqs;

#[cfg(any(test, feature = "testing"))]
pub use memory::MemoryDeadLetters;
pub use sqs::SqsDeadLetters;
