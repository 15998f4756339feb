//! Timers, one per backend: in-process for the local binary; EventBridge Scheduler + SQS
//! for AWS; and a recording one for engine unit tests.

pub mod aws;
pub mod local;
#[cfg(any(test, feature = "testing"))]
pub mod recording;

pub use aws::AwsTimer;
pub use local::LocalTimer;
#[cfg(any(test, feature = "testing"))]
pub use recording::RecordingTimer;
