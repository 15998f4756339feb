//! The one HTTP client the engine calls receivers through.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::{AttemptRef, SigningSecret, TaskSpec, TraceParent};

/// One webhook call to make.
pub struct WebhookCall<'a> {
    pub attempt: AttemptRef,
    pub spec: &'a TaskSpec,
    /// What it is signed with: one signature per secret (a rotation's overlap), newest
    /// first.
    pub secrets: &'a [SigningSecret],
    pub timestamp: DateTime<Utc>,
    /// The span the receiver's work is a child of (sent as `traceparent` and
    /// `tracestate`), if the task is traced.
    pub parent: Option<&'a TraceParent>,
}

/// What came back from a webhook call (or why nothing did).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookResult {
    pub status: Option<u16>,
    /// At most 1 KiB of the body, lossily decoded.
    pub excerpt: Option<String>,
    /// Whether the whole body equals the task's `expect_body` (true when none is set).
    pub body_matches: bool,
    pub retry_after: Option<Duration>,
    pub error: Option<WebhookError>,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WebhookError {
    /// The destination is not allowed (SSRF guard): retrying cannot help.
    #[error("destination refused: {0}")]
    Refused(String),
    /// Connect error, timeout, reset: worth another attempt.
    #[error("{0}")]
    Transport(String),
    /// This machine ran out of something (open files, local ports, memory) before the
    /// request left it: the receiver saw nothing, so it is no attempt of the task's. The
    /// engine gives the attempt back and makes it again shortly.
    #[error("local resources exhausted: {0}")]
    Local(String),
    /// The call could not be made for want of what signs it (the tenant's secret): an
    /// attempt that failed, but one that says nothing of the receiver.
    #[error("{0}")]
    NotSent(String),
}

#[async_trait]
pub trait Webhooks: Send + Sync {
    /// Checks a URL before it is accepted (scheme, literal addresses); the resolved addresses
    /// are checked again at call time.
    fn check_destination(&self, url: &str) -> Result<(), String>;

    async fn send(&self, call: &WebhookCall<'_>) -> WebhookResult;
}
