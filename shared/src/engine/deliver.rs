//! `deliver(attempt)`: what every timer fire, in every backend, ends up calling.

use std::time::Duration;

use super::{Engine, EngineError};
use crate::domain::{AttemptRef, Refusal, Status, Task, Verdict};
use crate::metrics::MetricEvent;
use crate::ports::{StoreError, WebhookCall, WebhookError, WebhookResult};
use crate::retry::with_retries;

/// What a timer fire led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliverOutcome {
    /// No such task (never existed, or retention removed it).
    Unknown,
    /// The attempt was already handled, canceled, or claimed by another worker.
    Stale,
    /// The timer fired before the attempt was due; it was re-armed for the due time.
    Early,
    /// The webhook was called; the task is now in this state.
    Attempted(Status),
}

impl Engine {
    /// Claims the attempt with a conditional write, calls the webhook, records the attempt
    /// and moves the task on. Safe under duplicate, early and late timer fires.
    pub async fn deliver(&self, at: AttemptRef) -> Result<DeliverOutcome, EngineError> {
        let Some(task) = self.ports.store.get(&at.task_id).await? else {
            tracing::info!(task = %at.task_id, attempt = at.attempt, "timer fired for an unknown task");
            return Ok(DeliverOutcome::Unknown);
        };
        let started = self.ports.clock.now();
        let lease = task.spec.timeout.saturating_add(self.settings.lease_margin);
        let claimed = match task.claim(at.attempt, started, lease) {
            Ok(claimed) => claimed,
            Err(Refusal::NotDue(due)) => {
                self.arm(at, due).await;
                return Ok(DeliverOutcome::Early);
            }
            Err(Refusal::StaleAttempt(_) | Refusal::Leased(_)) => return Ok(DeliverOutcome::Stale),
            Err(other) => return Err(EngineError::Conflict(other)),
        };
        if task.status == Status::Delivering {
            tracing::warn!(task = %at.task_id, attempt = at.attempt, "lease expired mid-delivery; taking the attempt over");
        }
        match self.ports.store.claim(&claimed, task.version).await {
            Ok(()) => {}
            Err(StoreError::Conflict) => return Ok(DeliverOutcome::Stale),
            Err(e) => return Err(e.into()),
        }

        let result = self.call(&claimed).await;
        let finished = self.ports.clock.now();
        let verdict = judge(&result, &claimed);
        let next = claimed
            .after_attempt(&verdict, finished, self.ports.random.draw())
            .map_err(EngineError::Conflict)?;
        let record =
            claimed.attempt_record(&next, started, finished, result.status, result.excerpt);
        match self
            .ports
            .store
            .finish_attempt(&record, &next, claimed.version)
            .await
        {
            Ok(()) => {}
            // Our lease ran out and another worker took the attempt over; its result stands.
            Err(StoreError::Conflict) => return Ok(DeliverOutcome::Stale),
            Err(e) => return Err(e.into()),
        }
        let lateness_ms = record.lateness_ms;
        self.ports.metrics.record(match next.status {
            Status::Succeeded => MetricEvent::Delivered { lateness_ms },
            Status::Scheduled => MetricEvent::Retried { lateness_ms },
            _ => MetricEvent::Failed { lateness_ms },
        });
        tracing::info!(
            task = %at.task_id, attempt = at.attempt, status = next.status.as_str(),
            http_status = record.status_code, lateness_ms,
            duration_ms = record.duration_ms, "attempt finished"
        );

        match (next.status, next.pending_work()) {
            (Status::Scheduled, Some(work)) => self.arm(work.attempt, work.due_at).await,
            (Status::Failed, _) => {
                tracing::warn!(
                    task = %at.task_id, tenant = %next.tenant, attempts = next.attempts_in_round(),
                    error = next.last_error.as_deref().unwrap_or(""),
                    "task failed; dead-lettering it for manual handling"
                );
                self.dead_letter(next).await?;
                return Ok(DeliverOutcome::Attempted(Status::Failed));
            }
            _ => {}
        }
        Ok(DeliverOutcome::Attempted(next.status))
    }

    async fn call(&self, task: &Task) -> WebhookResult {
        let secret = match self.ports.tenants.signing_secret(&task.tenant).await {
            Ok(Some(secret)) => secret,
            Ok(None) => {
                return transport_error(format!("tenant {} has no signing secret", task.tenant))
            }
            Err(e) => return transport_error(e.to_string()),
        };
        let call = WebhookCall {
            attempt: AttemptRef::new(task.id, task.attempt),
            spec: &task.spec,
            secret: &secret,
            timestamp: self.ports.clock.now(),
        };
        self.ports.webhooks.send(&call).await
    }

    /// Sends the dead letter (retried), then clears the pending flag. If the queue stays
    /// down, the flag stays set and the sweeper tries again later.
    pub(super) async fn dead_letter(&self, task: Task) -> Result<(), EngineError> {
        let letter = task.dead_letter();
        let sent = with_retries(
            "dead-letter send",
            self.settings.dead_letter_tries,
            Duration::from_millis(200),
            || self.ports.dead_letters.send(&letter),
        )
        .await;
        if let Err(e) = sent {
            tracing::error!(task = %task.id, error = %e, "dead letter not sent; the sweeper will retry");
            return Ok(());
        }
        // Refused: a retry moved the task on meanwhile; nothing is left to acknowledge.
        let Ok(done) = task.dead_letter_sent(self.ports.clock.now()) else {
            return Ok(());
        };
        match self.ports.store.update(&done, task.version).await {
            Ok(()) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// How the response (or its absence) is judged, by the task's own rules.
fn judge(result: &WebhookResult, task: &Task) -> Verdict {
    let policy = &task.spec.retry;
    match (&result.error, result.status) {
        (Some(WebhookError::Refused(why)), _) => {
            Verdict::Fail(format!("destination refused: {why}"))
        }
        (Some(WebhookError::Transport(why)), _) => Verdict::Retry {
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

fn transport_error(why: String) -> WebhookResult {
    WebhookResult {
        error: Some(WebhookError::Transport(why)),
        ..WebhookResult::default()
    }
}
