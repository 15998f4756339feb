//! Boomerang: reliable delayed callbacks.
//!
//! `domain` holds the vocabulary, `engine` the use cases over the `ports`; the adapters
//! (`store`, `timer`, `webhook`, `tenants`) plug into the ports, and `api` is the HTTP
//! interface shared by the local server and the API Lambda.

pub mod api;
pub mod aws;
pub mod backend;
pub mod clock;
pub mod domain;
pub mod engine;
pub mod local_runtime;
pub mod metrics;
pub mod ports;
pub mod retry;
pub mod store;
pub mod tenants;
pub mod timer;
pub mod webhook;

#[cfg(feature = "testing")]
pub mod testing;
