//! The embedded store: one SQLite file in the data directory.
//!
//! Writes go through one writer thread that commits whatever is waiting in one
//! transaction ([`writer`]); every durable write is answered only after its commit, so a
//! `kill -9` at any moment loses nothing that was acknowledged. Reads use their own
//! connections (WAL lets them run beside the writer). Claims of an attempt are held in
//! memory: one process owns the data directory, and a crash re-runs the attempt.
//!
//! The task document is kept as JSON beside the columns the queries need; those columns
//! are derived from the task (its [`Task::pending_work`] for the sweep), so they never
//! disagree with the document.

mod breakers;
mod bulk_jobs;
mod codec;
mod definitions;
mod due;
mod order_keys;
mod pauses;
mod rows;
mod schedules;
mod sqlite;
mod tasks;
pub(crate) mod writer;

#[cfg(test)]
mod tests;

pub use due::{DueKey, DuePage};
pub use sqlite::SqliteStore;
