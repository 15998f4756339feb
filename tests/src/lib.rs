//! Harness for end-to-end tests: the real `boomerang` binary, real HTTP receivers on
//! loopback, and waits with deadlines instead of sleeps.

pub mod aws;

mod binaries;
pub mod bulk_jobs;
mod cli;
pub mod disk;
pub mod fault_proxy;
pub mod iam_requests;
pub mod otlp;
mod receiver;
mod requests;
mod server;
pub mod standard_webhooks;
pub mod tcp_proxy;
mod wait;

pub use binaries::{bench_binary, binary};
pub use cli::*;
pub use receiver::*;
pub use requests::*;
pub use server::*;
pub use wait::{try_wait_for, wait_for};

/// Generates a test per scenario and backend: `embedded::NAME`, `postgres::NAME` and
/// `aws::NAME`. The calling file has `Backend` in scope and a function
/// `NAME(backend: Backend)` for each.
#[macro_export]
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $( #[tokio::test] async fn $name() { super::$name(super::Backend::Embedded).await } )*
        }
        mod postgres {
            $( #[tokio::test] async fn $name() { super::$name(super::Backend::Postgres).await } )*
        }
        mod aws {
            $( #[tokio::test] async fn $name() { super::$name(super::Backend::Aws).await } )*
        }
    };
}
