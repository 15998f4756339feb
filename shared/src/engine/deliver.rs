//! `deliver(task, attempt)`: what every timer fire, in every backend, ends up calling.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Engine, EngineError};
use crate::domain::{AttemptOutcome, AttemptRecord, DeadLetter, Status, Task, TaskId};
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

/// How one response is judged.
enum Verdict {
    Success,
    Fail(String),
    Retry {
        error: String,
        retry_after: Option<Duration>,
    },
}

impl Engine {
    /// Claims the attempt with a conditional write, calls the webhook, records the attempt
    /// and moves the task on. Safe under duplicate, early and late timer fires.
    pub async fn deliver(&self, id: &TaskId, attempt: u32) -> Result<DeliverOutcome, EngineError> {
        let Some(task) = self.ports.store.get(id).await? else {
            tracing::info!(task = %id, attempt, "timer fired for an unknown task");
            return Ok(DeliverOutcome::Unknown);
        };
        let now = self.ports.clock.now();
        let due = task.next_fire_at.unwrap_or(now);
        let claimable = task.attempt == attempt
            && match task.status {
                Status::Scheduled => true,
                Status::Delivering => task.lease_until.is_some_and(|l| l <= now),
                _ => false,
            };
        if !claimable {
            return Ok(DeliverOutcome::Stale);
        }
        if task.status == Status::Scheduled && due > now {
            self.arm(id, attempt, due).await;
            return Ok(DeliverOutcome::Early);
        }
        if task.status == Status::Delivering {
            tracing::warn!(task = %id, attempt, "lease expired mid-delivery; taking the attempt over");
        }

        let mut claimed = task.next_version(now);
        claimed.status = Status::Delivering;
        claimed.lease_until = Some(now + to_chrono(task.spec.timeout + self.settings.lease_margin));
        match self.ports.store.update(&claimed, task.version).await {
            Ok(()) => {}
            Err(StoreError::Conflict) => return Ok(DeliverOutcome::Stale),
            Err(e) => return Err(e.into()),
        }

        let result = self.call(&claimed).await;
        let finished = self.ports.clock.now();
        let verdict = judge(&result, &claimed);
        let next = self.next_state(&claimed, &verdict, finished);

        let record = AttemptRecord {
            task_id: *id,
            number: attempt,
            scheduled_at: due,
            started_at: now,
            lateness_ms: (now - due).num_milliseconds().max(0),
            duration_ms: (finished - now).num_milliseconds().max(0) as u64,
            status_code: result.status,
            error: next
                .last_error
                .clone()
                .filter(|_| next.status != Status::Succeeded),
            response_excerpt: result.excerpt.clone(),
            outcome: match next.status {
                Status::Succeeded => AttemptOutcome::Succeeded,
                Status::Scheduled => AttemptOutcome::Retrying,
                _ => AttemptOutcome::Failed,
            },
        };
        self.ports.store.put_attempt(&record).await?;
        match self.ports.store.update(&next, claimed.version).await {
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
            task = %id, attempt, status = next.status.as_str(),
            http_status = result.status, lateness_ms = record.lateness_ms,
            duration_ms = record.duration_ms, "attempt finished"
        );

        match next.status {
            Status::Scheduled => {
                let at = next.next_fire_at.expect("scheduled tasks have a fire time");
                self.arm(id, next.attempt, at).await;
            }
            Status::Failed => {
                tracing::warn!(
                    task = %id, tenant = %next.tenant, attempts = next.attempts_in_round(),
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
            task_id: &task.id,
            attempt: task.attempt,
            spec: &task.spec,
            secret: &secret,
            timestamp: self.ports.clock.now(),
        };
        self.ports.webhooks.send(&call).await
    }

    /// The task after this attempt: succeeded, scheduled for the next one, or failed.
    fn next_state(&self, claimed: &Task, verdict: &Verdict, now: DateTime<Utc>) -> Task {
        let mut next = claimed.next_version(now);
        next.lease_until = None;
        let policy = &claimed.spec.retry;
        let (error, next_at) = match verdict {
            Verdict::Success => {
                next.status = Status::Succeeded;
                next.next_fire_at = None;
                next.last_error = None;
                return next;
            }
            Verdict::Fail(error) => (error, None),
            Verdict::Retry { error, retry_after } => (
                error,
                policy.next_attempt_at(
                    claimed.attempts_in_round(),
                    claimed.round_started_at,
                    now,
                    *retry_after,
                    rand::random(),
                ),
            ),
        };
        next.last_error = Some(error.clone());
        match next_at {
            Some(at) => {
                next.status = Status::Scheduled;
                next.attempt += 1;
                next.next_fire_at = Some(at);
            }
            None => {
                next.status = Status::Failed;
                next.next_fire_at = None;
                next.dead_letter_pending = true;
            }
        }
        next
    }

    /// Sends the dead letter (retried), then clears the pending flag. If the queue stays
    /// down, the flag stays set and the sweeper tries again later.
    pub(super) async fn dead_letter(&self, task: Task) -> Result<(), EngineError> {
        let letter = DeadLetter {
            task_id: task.id,
            tenant: task.tenant.clone(),
            url: task.spec.request.url.clone(),
            attempts: task.attempts_in_round(),
            last_error: task.last_error.clone(),
            failed_at: task.updated_at,
        };
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
        let mut done = task.next_version(self.ports.clock.now());
        done.dead_letter_pending = false;
        match self.ports.store.update(&done, task.version).await {
            Ok(()) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

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

fn to_chrono(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}
