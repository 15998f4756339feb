//! The call itself: signed with the tenant's secrets, and judged by the task's own rules.

use chrono::{DateTime, Utc};

use super::gate::Lane;
use crate::domain::limits::MAX_DESTINATION_PAUSE;
use crate::domain::{AttemptRef, Destination, Task, TaskSpec, TraceParent, Verdict};
use crate::engine::state::Engine;
use crate::ports::{WebhookCall, WebhookError, WebhookResult};

impl Engine {
    /// Makes the call `spec` describes, signed with each of the tenant's secrets in force,
    /// as attempt `at` (a delivery attempt, or a held task's check), naming `parent` as
    /// the receiver's parent span if the task is traced.
    pub(in crate::engine) async fn send_signed(
        &self,
        at: AttemptRef,
        spec: &TaskSpec,
        parent: Option<&TraceParent>,
    ) -> WebhookResult {
        let secrets = match self.ports.tenants.signing_secrets(&at.tenant).await {
            Ok(Some(secrets)) => secrets,
            Ok(None) => return not_sent(format!("tenant {} has no signing secret", at.tenant)),
            Err(e) => return not_sent(e.to_string()),
        };
        let now = self.ports.clock.now();
        let call = WebhookCall {
            attempt: at,
            spec,
            secrets: &secrets.signing(now),
            timestamp: now,
            parent,
        };
        self.ports.webhooks.send(&call).await
    }

    /// A 429 or 503 with `Retry-After` speaks for the receiver, not for one task: the whole
    /// destination is paused for that long (at most [`MAX_DESTINATION_PAUSE`]).
    pub(in crate::engine) fn pause_if_asked(
        &self,
        lane: &Lane,
        destination: &Destination,
        result: &WebhookResult,
        now: DateTime<Utc>,
    ) {
        let (Some(429 | 503), Some(wait)) = (result.status, result.retry_after) else {
            return;
        };
        let wait = chrono::Duration::from_std(wait.min(MAX_DESTINATION_PAUSE))
            .unwrap_or(chrono::Duration::zero());
        tracing::info!(%destination, pause_ms = wait.num_milliseconds(), "destination asked for a pause");
        lane.pause(now + wait);
    }
}

/// How the response (or its absence) is judged, by the task's own rules.
pub(in crate::engine) fn judge(result: &WebhookResult, task: &Task) -> Verdict {
    let policy = &task.spec.retry;
    match (&result.error, result.status) {
        (Some(WebhookError::Refused(why)), _) => {
            Verdict::Fail(format!("destination refused: {why}"))
        }
        (
            Some(
                WebhookError::Transport(why)
                | WebhookError::Local(why)
                | WebhookError::NotSent(why),
            ),
            _,
        ) => Verdict::Retry {
            error: why.clone(),
            retry_after: None,
        },
        (None, Some(code)) if (200..300).contains(&code) && result.body_matches => Verdict::Success,
        (None, Some(code)) if (200..300).contains(&code) => Verdict::Retry {
            error: format!("HTTP {code} but the body did not match expect_body"),
            retry_after: None,
        },
        (None, Some(code)) if policy.is_permanent(code) => {
            Verdict::Fail(format!("HTTP {code} (permanent)"))
        }
        (None, Some(code)) => Verdict::Retry {
            error: format!("HTTP {code}"),
            retry_after: result.retry_after,
        },
        (None, None) => Verdict::Retry {
            error: "no response".into(),
            retry_after: None,
        },
    }
}

fn not_sent(why: String) -> WebhookResult {
    WebhookResult {
        error: Some(WebhookError::NotSent(why)),
        ..WebhookResult::default()
    }
}
