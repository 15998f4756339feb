//! Each minute's bucket schedule: made once for the whole fleet, not once per instance.
//!
//! The first arm into a minute makes sure its schedule exists. An instance remembers the
//! minutes it made sure of, and the table remembers them for every instance
//! ([`ScheduledMinutes`]): an instance that has not seen a minute yet reads the table's
//! record first, and calls Scheduler only if there is none. So `CreateSchedule` calls
//! grow with minutes (plus the few instances that race on the same new minute), not with
//! instances × minutes, and a cold fleet spreading due times over a month reads the table
//! instead of spending Scheduler's request quota.
//!
//! The record is written only after the schedule exists (made here, or found made by
//! another instance), so a record never stands for a schedule that is not there. A
//! schedule lost afterwards is the sweeper's to repair ([`crate::buckets`]).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_scheduler::types::{
    ActionAfterCompletion, DeadLetterConfig, FlexibleTimeWindow, FlexibleTimeWindowMode,
    RetryPolicy as SchedulerRetryPolicy, Target,
};
use chrono::{DateTime, Utc};

use crate::messages::{BucketWork, TimerMessage};
use crate::plan::bucket_fire_at;
use crate::sdk::sdk_failure;
use boomerang_core::clock::Clock;
use boomerang_core::ports::{StoreError, TimerError};

/// Deterministic, so that every function instance arming into the minute finds the same
/// schedule (≤ 64 chars).
pub fn bucket_schedule_name(minute: DateTime<Utc>) -> String {
    format!("bucket-{}", minute.format("%Y%m%dT%H%M"))
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

/// Minutes one instance remembers having made sure of, before it forgets the past ones.
const ENSURED_KEPT: usize = 4096;

/// The fleet's record of the minutes whose schedule exists.
#[async_trait]
pub trait ScheduledMinutes: Send + Sync {
    /// Whether some instance recorded `minute`'s schedule as made.
    async fn is_scheduled(&self, minute: DateTime<Utc>) -> Result<bool, StoreError>;
    /// Records that `minute`'s schedule exists.
    async fn mark_scheduled(&self, minute: DateTime<Utc>) -> Result<(), StoreError>;
}

/// Where a bucket's schedule sends its fire.
#[derive(Clone, Debug)]
pub struct ScheduleTarget {
    pub group: String,
    /// The delivery function.
    pub target_arn: String,
    /// The role Scheduler invokes it with.
    pub role_arn: String,
    /// Where Scheduler puts a fire it could not deliver (the system-failures queue).
    pub dlq_arn: Option<String>,
}

impl ScheduleTarget {
    pub fn of(settings: &crate::settings::AwsSettings) -> Self {
        Self {
            group: settings.schedule_group.clone(),
            target_arn: settings.delivery_target_arn.clone(),
            role_arn: settings.scheduler_role_arn.clone(),
            dlq_arn: settings.scheduler_dlq_arn.clone(),
        }
    }
}

pub struct BucketSchedules {
    scheduler: aws_sdk_scheduler::Client,
    target: ScheduleTarget,
    shared: Arc<dyn ScheduledMinutes>,
    clock: Arc<dyn Clock>,
    /// Minutes this instance made sure of: the next arm into the same minute costs no call.
    ensured: Mutex<BTreeSet<DateTime<Utc>>>,
    /// Whether the table's records are believed ([`Self::ignore_records`]).
    trust_records: AtomicBool,
}

impl BucketSchedules {
    pub fn new(
        scheduler: aws_sdk_scheduler::Client,
        target: ScheduleTarget,
        shared: Arc<dyn ScheduledMinutes>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            scheduler,
            target,
            shared,
            clock,
            ensured: Mutex::new(BTreeSet::new()),
            trust_records: AtomicBool::new(true),
        }
    }

    /// From now on every minute's schedule is made (or found) with Scheduler itself, the
    /// table's records aside: for `aws rearm`, whose timers may be gone with the schedule
    /// group while the records that they were made remain (a restored table keeps them).
    pub fn ignore_records(&self) {
        self.trust_records.store(false, Ordering::Relaxed);
    }

    /// Makes sure `minute`'s bucket has its schedule.
    pub async fn ensure(&self, minute: DateTime<Utc>) -> Result<(), TimerError> {
        if self.ensured.lock().expect("not poisoned").contains(&minute) {
            return Ok(());
        }
        // Unreadable, the record is taken as absent: creating finds the schedule made.
        let recorded = match self.trust_records.load(Ordering::Relaxed) {
            true => (self.shared.is_scheduled(minute).await).unwrap_or_else(|e| {
                tracing::warn!(%minute, error = %e, "could not read a bucket's schedule record; creating it");
                false
            }),
            false => false,
        };
        if !recorded {
            self.create(minute).await?;
            // The record is what the sweeper's check looks for before it fires a minute
            // again: a minute scheduled without it would have no repair if its fire were
            // lost. So the arm fails without it, and the attempt goes to the sweep's index
            // (the schedule made stays, harmless: an instance creating it again is told so).
            (self.shared.mark_scheduled(minute).await).map_err(|e| TimerError(e.into()))?;
        }
        self.remember(minute);
        Ok(())
    }

    fn remember(&self, minute: DateTime<Utc>) {
        let mut ensured = self.ensured.lock().expect("not poisoned");
        if ensured.len() >= ENSURED_KEPT {
            // Past buckets have fired: no arm goes into them again.
            let now = self.clock.now();
            ensured.retain(|m| *m > now);
        }
        ensured.insert(minute);
    }

    /// Creates the schedule; one that exists already (another instance made it) is as good.
    async fn create(&self, minute: DateTime<Utc>) -> Result<(), TimerError> {
        let input = serde_json::to_string(&TimerMessage::Bucket {
            bucket: BucketWork::whole(minute),
        })
        .map_err(|e| TimerError(e.into()))?;
        let target = Target::builder()
            .arn(&self.target.target_arn)
            .role_arn(&self.target.role_arn)
            .input(input)
            // Scheduler retries a failed invoke for a while; what still fails goes to its DLQ
            // (the system-failures queue), and the sweeper hands it back to the timer queue.
            .retry_policy(
                SchedulerRetryPolicy::builder()
                    .maximum_retry_attempts(10)
                    .maximum_event_age_in_seconds(3600)
                    .build(),
            )
            .set_dead_letter_config(
                (self.target.dlq_arn.as_ref())
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
            .name(bucket_schedule_name(minute))
            .group_name(&self.target.group)
            .schedule_expression(at_expression(bucket_fire_at(minute)))
            .schedule_expression_timezone("UTC")
            .flexible_time_window(window)
            .action_after_completion(ActionAfterCompletion::Delete)
            .target(target)
            .send()
            .await;
        match created {
            Ok(_) => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_buckets_schedule_is_named_after_its_minute() {
        let minute = Utc.with_ymd_and_hms(2030, 1, 1, 12, 20, 0).unwrap();
        let name = bucket_schedule_name(minute);
        assert_eq!(name, "bucket-20300101T1220");
        assert!(name.len() <= 64);
    }

    #[test]
    fn at_expressions_round_trip() {
        let t = Utc.with_ymd_and_hms(2031, 2, 3, 4, 5, 0).unwrap();
        assert_eq!(at_expression(t), "at(2031-02-03T04:05:00)");
        assert_eq!(parse_at_expression(&at_expression(t)), Some(t));
        assert_eq!(parse_at_expression("rate(1 minute)"), None);
    }
}
