//! The AWS timer: SQS `DelaySeconds` for waits up to ~14 minutes, a one-time EventBridge
//! Scheduler schedule for longer ones.
//!
//! Scheduler fires only to the minute (up to a minute late), so a long wait is scheduled a
//! couple of minutes *early*; that fire reaches `deliver`, which finds the attempt not yet
//! due and re-arms for the rest, which is now short enough for SQS, precise to the second.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_scheduler::types::{
    ActionAfterCompletion, DeadLetterConfig, FlexibleTimeWindow, FlexibleTimeWindowMode,
    RetryPolicy as SchedulerRetryPolicy, Target,
};
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use chrono::{DateTime, DurationRound, Utc};

use crate::sdk::sdk_failure;
use boomerang_core::clock::Clock;
use boomerang_core::domain::time::checked_sub;
use boomerang_core::domain::AttemptRef;
use boomerang_core::ports::{Timer, TimerError};

/// Waits up to this long go through the SQS timer queue (its limit is 15 minutes).
pub const QUEUE_MAX_WAIT: Duration = Duration::from_secs(14 * 60);
/// How much earlier than due a schedule is set to fire.
pub const SCHEDULE_LEAD: Duration = Duration::from_secs(2 * 60);

/// How one arm is carried out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimerPlan {
    Queue {
        delay_seconds: i32,
    },
    Schedule {
        name: String,
        fire_at: DateTime<Utc>,
    },
}

/// Chooses SQS or Scheduler for an attempt due at `at`.
pub fn plan(attempt: &AttemptRef, at: DateTime<Utc>, now: DateTime<Utc>) -> TimerPlan {
    let wait = (at - now).to_std().unwrap_or_default();
    if wait <= QUEUE_MAX_WAIT {
        // Rounded up: a second late rather than early (an early fire costs a round trip).
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        return TimerPlan::Queue {
            delay_seconds: secs.min(900) as i32,
        };
    }
    let early = checked_sub(at, SCHEDULE_LEAD).unwrap_or(at);
    let fire_at = early
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap_or(early);
    TimerPlan::Schedule {
        name: schedule_name(attempt),
        fire_at,
    }
}

/// Deterministic, so re-arming the same attempt finds the existing schedule (≤ 64 chars).
pub fn schedule_name(attempt: &AttemptRef) -> String {
    format!("{}-{}", attempt.task_id, attempt.attempt)
}

/// Scheduler's one-time expression, in UTC.
pub fn at_expression(t: DateTime<Utc>) -> String {
    format!("at({})", t.format("%Y-%m-%dT%H:%M:%S"))
}

/// Parses `at(…)` back (the trigger emulation needs it).
pub fn parse_at_expression(expr: &str) -> Option<DateTime<Utc>> {
    let inner = expr.strip_prefix("at(")?.strip_suffix(')')?;
    chrono::NaiveDateTime::parse_from_str(inner, "%Y-%m-%dT%H:%M:%S")
        .ok()
        .map(|t| t.and_utc())
}

pub struct AwsTimer {
    sqs: aws_sdk_sqs::Client,
    scheduler: aws_sdk_scheduler::Client,
    queue_url: String,
    group: String,
    target_arn: String,
    role_arn: String,
    dlq_arn: Option<String>,
    clock: Arc<dyn Clock>,
}

impl AwsTimer {
    pub fn new(
        sqs: aws_sdk_sqs::Client,
        scheduler: aws_sdk_scheduler::Client,
        settings: &crate::settings::AwsSettings,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            sqs,
            scheduler,
            queue_url: settings.timer_queue_url.clone(),
            group: settings.schedule_group.clone(),
            target_arn: settings.delivery_target_arn.clone(),
            role_arn: settings.scheduler_role_arn.clone(),
            dlq_arn: settings.scheduler_dlq_arn.clone(),
            clock,
        }
    }

    async fn enqueue(&self, body: String, delay_seconds: i32) -> Result<(), TimerError> {
        self.sqs
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .delay_seconds(delay_seconds)
            .send()
            .await
            .map_err(|e| TimerError(sdk_failure(e)))?;
        Ok(())
    }

    /// Sends up to ten timer messages in one request; the outcome of each, by index.
    async fn enqueue_batch(
        &self,
        chunk: &[(usize, AttemptRef, i32)],
    ) -> Vec<(usize, Result<(), TimerError>)> {
        let entries: Result<Vec<_>, TimerError> = chunk
            .iter()
            .map(|(i, attempt, delay)| {
                let body = serde_json::to_string(attempt).map_err(|e| TimerError(e.into()))?;
                SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body)
                    .delay_seconds(*delay)
                    .build()
                    .map_err(|e| TimerError(e.into()))
            })
            .collect();
        let sent = match entries {
            Ok(entries) => self
                .sqs
                .send_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| crate::sdk::describe(&e)),
            Err(e) => Err(e.to_string()),
        };
        match sent {
            Ok(out) => {
                let failed: Vec<(String, String)> = out
                    .failed()
                    .iter()
                    .map(|f| {
                        (
                            f.id().to_string(),
                            f.message().unwrap_or("failed").to_string(),
                        )
                    })
                    .collect();
                chunk
                    .iter()
                    .map(|(i, _, _)| {
                        let id = i.to_string();
                        match failed.iter().find(|(f, _)| *f == id) {
                            Some((_, why)) => (*i, Err(TimerError(why.clone().into()))),
                            None => (*i, Ok(())),
                        }
                    })
                    .collect()
            }
            Err(why) => chunk
                .iter()
                .map(|(i, _, _)| (*i, Err(TimerError(why.clone().into()))))
                .collect(),
        }
    }

    async fn schedule(
        &self,
        name: String,
        fire_at: DateTime<Utc>,
        input: String,
    ) -> Result<(), TimerError> {
        let target = Target::builder()
            .arn(&self.target_arn)
            .role_arn(&self.role_arn)
            .input(input)
            // Scheduler retries a failed invoke for a while; what still fails goes to its DLQ
            // and the sweeper re-arms the task.
            .retry_policy(
                SchedulerRetryPolicy::builder()
                    .maximum_retry_attempts(10)
                    .maximum_event_age_in_seconds(3600)
                    .build(),
            )
            .set_dead_letter_config(
                self.dlq_arn
                    .as_ref()
                    .map(|arn| DeadLetterConfig::builder().arn(arn).build()),
            )
            .build()
            .map_err(|e| TimerError(e.into()))?;
        let window = FlexibleTimeWindow::builder()
            .mode(FlexibleTimeWindowMode::Off)
            .build()
            .map_err(|e| TimerError(e.into()))?;
        let created = self
            .scheduler
            .create_schedule()
            .name(name)
            .group_name(&self.group)
            .schedule_expression(at_expression(fire_at))
            .schedule_expression_timezone("UTC")
            .flexible_time_window(window)
            .action_after_completion(ActionAfterCompletion::Delete)
            .target(target)
            .send()
            .await;
        match created {
            Ok(_) => Ok(()),
            // Armed before (a retry, or the sweeper): the schedule already does the job.
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conflict_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(TimerError(sdk_failure(e))),
        }
    }
}

#[async_trait]
impl Timer for AwsTimer {
    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> Result<(), TimerError> {
        // The attempt reference is the message's whole body.
        let body = serde_json::to_string(&attempt).map_err(|e| TimerError(e.into()))?;
        match plan(&attempt, at, self.clock.now()) {
            TimerPlan::Queue { delay_seconds } => self.enqueue(body, delay_seconds).await,
            TimerPlan::Schedule { name, fire_at } => self.schedule(name, fire_at, body).await,
        }
    }

    /// Waits for the queue go ten to a request (`SendMessageBatch`: SQS bills per
    /// request); schedules are created one by one.
    async fn arm_many(&self, arms: &[(AttemptRef, DateTime<Utc>)]) -> Vec<Result<(), TimerError>> {
        let now = self.clock.now();
        let mut results: Vec<Option<Result<(), TimerError>>> = arms.iter().map(|_| None).collect();
        let mut queued = Vec::new();
        for (i, (attempt, at)) in arms.iter().enumerate() {
            match plan(attempt, *at, now) {
                TimerPlan::Queue { delay_seconds } => {
                    queued.push((i, attempt.clone(), delay_seconds))
                }
                TimerPlan::Schedule { name, fire_at } => {
                    let body = serde_json::to_string(attempt).map_err(|e| TimerError(e.into()));
                    results[i] = Some(match body {
                        Ok(body) => self.schedule(name, fire_at, body).await,
                        Err(e) => Err(e),
                    });
                }
            }
        }
        for chunk in queued.chunks(10) {
            for (i, outcome) in self.enqueue_batch(chunk).await {
                results[i] = Some(outcome);
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(TimerError("not armed".into()))))
            .collect()
    }

    /// A queue message or a schedule outlives any process.
    fn durable(&self) -> bool {
        true
    }

    /// SQS counts `DelaySeconds` in whole seconds, rounded up here (see [`plan`]).
    fn precision(&self) -> Duration {
        Duration::from_secs(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn short_waits_use_the_queue_rounded_up() {
        let now = Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 0).unwrap();
        let id = AttemptRef::new(
            boomerang_core::testing::unique_tenant("plan"),
            boomerang_core::domain::TaskId::new(),
            1,
        );
        let at = |ms| now + chrono::Duration::milliseconds(ms);
        assert_eq!(
            plan(&id, at(-5000), now),
            TimerPlan::Queue { delay_seconds: 0 }
        );
        assert_eq!(
            plan(&id, at(2300), now),
            TimerPlan::Queue { delay_seconds: 3 }
        );
        assert_eq!(
            plan(&id, at(300_000), now),
            TimerPlan::Queue { delay_seconds: 300 }
        );
        assert_eq!(
            plan(&id, at(840_000), now),
            TimerPlan::Queue { delay_seconds: 840 }
        );
    }

    #[test]
    fn long_waits_are_scheduled_early_to_the_minute() {
        let now = Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 10).unwrap();
        let id = AttemptRef::new(
            boomerang_core::testing::unique_tenant("plan"),
            boomerang_core::domain::TaskId::new(),
            3,
        );
        let due = now + chrono::Duration::minutes(20); // 12:20:10
        match plan(&id, due, now) {
            TimerPlan::Schedule { name, fire_at } => {
                assert_eq!(name, format!("{}-3", id.task_id));
                assert!(name.len() <= 64);
                assert_eq!(
                    fire_at,
                    Utc.with_ymd_and_hms(2030, 1, 1, 12, 18, 0).unwrap()
                );
                // Even a fire 59 s late stays early enough for the SQS re-arm to be precise.
                let late_fire = fire_at + chrono::Duration::seconds(59);
                assert!(matches!(
                    plan(&id, due, late_fire),
                    TimerPlan::Queue { delay_seconds: 71 }
                ));
                assert!(matches!(
                    plan(&id, due, fire_at),
                    TimerPlan::Queue { delay_seconds: 130 }
                ));
            }
            other => panic!("expected a schedule, got {other:?}"),
        }
    }

    #[test]
    fn at_expressions_round_trip() {
        let t = Utc.with_ymd_and_hms(2031, 2, 3, 4, 5, 0).unwrap();
        assert_eq!(at_expression(t), "at(2031-02-03T04:05:00)");
        assert_eq!(parse_at_expression(&at_expression(t)), Some(t));
        assert_eq!(parse_at_expression("rate(1 minute)"), None);
    }
}
