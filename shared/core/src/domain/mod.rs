//! The vocabulary of Boomerang and the task lifecycle. Nothing here knows about HTTP
//! servers, databases or AWS.

pub mod alert;
pub mod breaker;
pub mod bulk;
pub mod destination;
pub mod duration_ms;
pub mod flow;
pub mod held;
pub mod hold;
pub mod ids;
pub mod invalid;
pub mod lifecycle;
pub mod limits;
pub mod notice;
pub mod occurrence;
pub mod order;
pub mod policy;
pub mod retry_policy;
pub mod schedule;
pub mod signing_secrets;
pub mod spec_rules;
pub mod task;
pub mod task_filter;
pub mod template;
pub mod tenant;
pub mod time;
pub mod trace;
pub mod turn;

pub use alert::{AlertTarget, Notify};
pub use breaker::{
    Admission, Breaker, BreakerAlertBody, BreakerChange, BreakerSettings, CallHealth,
};
pub use bulk::{Act, BulkAction, BulkJob, BulkPlan, InHand, JobRefusal, JobState, Progress};
pub use destination::Destination;
pub use flow::{FlowKey, FlowSpec};
pub use hold::{CheckAnswer, CheckBody, CheckDecision, CheckRecord, HoldSpec, OnUnknown};
pub use ids::{Attempt, AttemptRef, BulkJobId, BusinessKey, DefinitionName, TaskId, TenantId};
pub use invalid::{FieldPath, Invalid};
pub use lifecycle::{PendingWork, Refusal, Verdict, WorkKind};
pub use notice::Notice;
pub use occurrence::Occurrence;
pub use order::{OnHeadFailure, OrderEntry, OrderKey, OrderSpec};
pub use policy::Policy;
pub use retry_policy::{Backoff, BackoffKind, MaxAttempts, RetryPolicy};
pub use schedule::{
    CatchUp, Recurrence, Schedule, ScheduleId, ScheduleRefusal, ScheduleState, Step,
};
pub use signing_secrets::{SecretEntry, SecretId, SecretRefusal, SecretSet};
pub use spec_rules::SpecDraft;
pub use task::{
    AttemptOutcome, AttemptRecord, CallbackRequest, DeadLetter, Status, Task, TaskSpec,
};
pub use task_filter::{Between, ErrorClass, TaskFilter};
pub use template::Template;
pub use tenant::{generate_api_key, SigningSecret};
pub use trace::{SpanId, SpanKind, SpanRecord, SpanValue, TaskTrace, TraceId, TraceParent};
pub use turn::Turn;
