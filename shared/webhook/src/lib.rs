//! Everything about calling a webhook, in one HTTP client: the client with its timeouts,
//! its Standard Webhooks signature, its SSRF rules, and its connections, bounded per
//! destination.

pub mod client;
pub mod connector;
pub mod destination;
pub mod signing;

pub use client::HttpWebhooks;
pub use destination::DestinationPolicy;
