//! Boomerang's core: the vocabulary, the task lifecycle, the use cases and the ports they
//! need, with no I/O of its own. It depends on no HTTP, AWS, SQLite or metrics-exporter
//! crate; the adapter crates depend on it, never the reverse.
//!
//! - `domain`: the vocabulary and the task lifecycle (every transition, and what work a
//!   task has pending), with no I/O;
//! - `engine`: the use cases (register, get/list, cancel, retry, deliver, sweep) over the
//!   `ports`, doing only I/O around the domain's transitions;
//! - `ports`: what the engine needs from outside, one small trait per capability;
//! - `clock`, `metrics`: time, randomness and counted events, as ports too;
//! - `infra_retry`: the one helper for retrying an infrastructure call;
//! - `testing` (feature `testing`): in-memory store and dead letters, a recording timer, a
//!   manual clock, and the contract suites every store and timer adapter runs.

pub mod clock;
pub mod domain;
pub mod engine;
pub mod error_chain;
pub mod infra_retry;
pub mod log_limit;
pub mod metrics;
pub mod ports;

#[cfg(any(test, feature = "testing"))]
pub mod testing;
