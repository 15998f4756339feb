//! Everything about calling a webhook: the client, its signature and its SSRF rules.

pub mod client;
pub mod destination;
pub mod signing;

pub use client::HttpWebhooks;
pub use destination::DestinationPolicy;
