//! The vocabulary of Boomerang. Nothing here knows about HTTP servers, databases or AWS.

pub mod duration_ms;
pub mod ids;
pub mod retry_policy;
pub mod task;
pub mod tenant;

pub use ids::{TaskId, TenantId};
pub use retry_policy::{Backoff, RetryPolicy};
pub use task::{
    AttemptOutcome, AttemptRecord, CallbackRequest, DeadLetter, Status, Task, TaskSpec,
};
pub use tenant::{generate_api_key, SigningSecret};
