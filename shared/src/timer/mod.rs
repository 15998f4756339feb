//! Timers: the in-process one of the local binary (the AWS ones live with the AWS adapters).

pub mod local;

pub use local::LocalTimer;
