//! Everything about calling a webhook, in one HTTP client: the client with its timeouts,
//! its Standard Webhooks signature, and its SSRF rules.

pub mod client;
pub mod destination;
pub mod signing;

pub use client::HttpWebhooks;
pub use destination::DestinationPolicy;
