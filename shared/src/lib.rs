//! Boomerang: reliable delayed callbacks.
//!
//! - `domain`: the vocabulary and the task lifecycle (every transition, and what work a
//!   task has pending), with no I/O;
//! - `engine`: the use cases (register, get/list, cancel, retry, deliver, sweep) over the
//!   `ports`, doing only I/O around the domain's transitions;
//! - adapters, filed by the port they implement: `store` (SQLite, DynamoDB, in-memory),
//!   `timer` (in-process, Scheduler + SQS, recording), `tenants` (one local key, DynamoDB),
//!   `dead_letters` (SQLite, SQS, in-memory) and `webhook` (the one HTTP client);
//! - `aws`: AWS plumbing (settings, SDK configuration, bootstrap, Lambda event dispatch,
//!   trigger emulation);
//! - `api`: the HTTP interface shared by the local server and the API Lambda;
//! - `backend` wires adapters to an engine; `service` is the one constructor the binaries
//!   call. In-memory and recording adapters exist only under `cfg(test)` or the `testing`
//!   feature.

pub mod api;
pub mod aws;
pub mod backend;
pub mod clock;
pub mod dead_letters;
pub mod domain;
pub mod engine;
pub mod metrics;
pub mod ports;
pub mod retry;
pub mod service;
pub mod store;
pub mod tenants;
pub mod timer;
pub mod webhook;

#[cfg(any(test, feature = "testing"))]
pub mod testing;
