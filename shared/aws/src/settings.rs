//! Where the AWS resources are, and the functions' own settings: every one from an
//! environment variable, checked at start-up with an error that names it.

use std::time::Duration;

use ipnet::IpNet;

/// Where the AWS resources are. Every field comes from an environment variable.
#[derive(Clone, Debug)]
pub struct AwsSettings {
    pub table: String,
    pub timer_queue_url: String,
    pub dead_letter_queue_url: String,
    pub schedule_group: String,
    /// What Scheduler invokes: the delivery Lambda's ARN.
    pub delivery_target_arn: String,
    pub scheduler_role_arn: String,
    /// Scheduler's own dead-letter queue for fires it could not deliver (optional).
    pub scheduler_dlq_arn: Option<String>,
    /// The queue where failed timer messages, fires and invocations end up; the sweeper
    /// hands them back to the timer queue (optional).
    pub system_failures_queue_url: Option<String>,
    /// The slow lane's queue, where attempts to destinations that answered slowly of late
    /// are handed (optional: without it they stay in the timer queue's batches).
    pub slow_queue_url: Option<String>,
    pub allowed_cidrs: Vec<IpNet>,
    /// How long finished tasks are kept.
    pub retention: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("missing environment variable(s): {}", .0.join(", "))]
    Missing(Vec<&'static str>),
    #[error("{0}: {1}")]
    Invalid(&'static str, String),
}

pub const ENV_TABLE: &str = "BOOMERANG_TABLE";
pub const ENV_TIMER_QUEUE_URL: &str = "BOOMERANG_TIMER_QUEUE_URL";
pub const ENV_DEAD_LETTER_QUEUE_URL: &str = "BOOMERANG_DEAD_LETTER_QUEUE_URL";
pub const ENV_SCHEDULE_GROUP: &str = "BOOMERANG_SCHEDULE_GROUP";
pub const ENV_DELIVERY_FUNCTION_ARN: &str = "BOOMERANG_DELIVERY_FUNCTION_ARN";
pub const ENV_SCHEDULER_ROLE_ARN: &str = "BOOMERANG_SCHEDULER_ROLE_ARN";
pub const ENV_SCHEDULER_DLQ_ARN: &str = "BOOMERANG_SCHEDULER_DLQ_ARN";
pub const ENV_SYSTEM_FAILURES_QUEUE_URL: &str = "BOOMERANG_SYSTEM_FAILURES_QUEUE_URL";
pub const ENV_SLOW_QUEUE_URL: &str = "BOOMERANG_SLOW_QUEUE_URL";
pub const ENV_ALLOWED_CIDRS: &str = "BOOMERANG_ALLOWED_CIDRS";
pub const ENV_RETENTION_DAYS: &str = "BOOMERANG_RETENTION_DAYS";

/// How overdue a task's work must be, with no durable timer known to hold it, before the
/// AWS sweeper re-arms it. It covers the index's propagation (well under a second) and the
/// functions' clocks (synchronised far closer than this): the sweep's checkpoint relies on
/// no entry appearing behind its cutoff. Work held by a timer is never in the sweep's
/// partitions, and a bucket's fire comes two minutes early, so Scheduler's minute of
/// lateness needs no room here.
pub const SWEEP_LAG: chrono::Duration = chrono::Duration::seconds(15);

/// Finished tasks are kept at least this long, so that idempotency keys (remembered for
/// [`crate::store::IDEMPOTENCY_WINDOW`]) never outlive their task.
pub const MIN_RETENTION_DAYS: u64 = 2;
/// Ten years: beyond it a retention is surely a typo (and the sums stay in range).
pub const MAX_RETENTION_DAYS: u64 = 3650;
pub const DEFAULT_RETENTION_DAYS: u64 = 7;

impl AwsSettings {
    /// Reads the settings; the error names every variable that is missing.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let required = [
            ENV_TABLE,
            ENV_TIMER_QUEUE_URL,
            ENV_DEAD_LETTER_QUEUE_URL,
            ENV_SCHEDULE_GROUP,
            ENV_DELIVERY_FUNCTION_ARN,
            ENV_SCHEDULER_ROLE_ARN,
        ];
        let missing: Vec<_> = required.into_iter().filter(|k| get(k).is_none()).collect();
        if !missing.is_empty() {
            return Err(SettingsError::Missing(missing));
        }
        let allowed_cidrs = get(ENV_ALLOWED_CIDRS)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse()
                    .map_err(|_| SettingsError::Invalid(ENV_ALLOWED_CIDRS, s.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let days = match get(ENV_RETENTION_DAYS) {
            None => DEFAULT_RETENTION_DAYS,
            Some(d) => d.trim().parse().map_err(|_| {
                SettingsError::Invalid(ENV_RETENTION_DAYS, format!("`{d}` is not a number of days"))
            })?,
        };
        if !(MIN_RETENTION_DAYS..=MAX_RETENTION_DAYS).contains(&days) {
            return Err(SettingsError::Invalid(
                ENV_RETENTION_DAYS,
                format!("must be between {MIN_RETENTION_DAYS} and {MAX_RETENTION_DAYS} days"),
            ));
        }
        let retention = Duration::from_secs(days * 24 * 3600);
        let scheduler_dlq_arn = get(ENV_SCHEDULER_DLQ_ARN);
        let system_failures_queue_url = get(ENV_SYSTEM_FAILURES_QUEUE_URL);
        let slow_queue_url = get(ENV_SLOW_QUEUE_URL);
        let get = |k| get(k).expect("checked above");
        Ok(Self {
            table: get(ENV_TABLE),
            timer_queue_url: get(ENV_TIMER_QUEUE_URL),
            dead_letter_queue_url: get(ENV_DEAD_LETTER_QUEUE_URL),
            schedule_group: get(ENV_SCHEDULE_GROUP),
            delivery_target_arn: get(ENV_DELIVERY_FUNCTION_ARN),
            scheduler_role_arn: get(ENV_SCHEDULER_ROLE_ARN),
            scheduler_dlq_arn,
            system_failures_queue_url,
            slow_queue_url,
            allowed_cidrs,
            retention,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_settings_are_all_named() {
        let err = AwsSettings::from_lookup(|k| (k == ENV_TABLE).then(|| "t".to_string()))
            .unwrap_err()
            .to_string();
        for name in [
            ENV_TIMER_QUEUE_URL,
            ENV_DEAD_LETTER_QUEUE_URL,
            ENV_SCHEDULE_GROUP,
            ENV_DELIVERY_FUNCTION_ARN,
            ENV_SCHEDULER_ROLE_ARN,
        ] {
            assert!(err.contains(name), "{err}");
        }
        assert!(!err.contains(ENV_TABLE));
    }

    #[test]
    fn complete_settings_are_read_with_their_optional_parts() {
        let env: std::collections::HashMap<&str, &str> = [
            (ENV_TABLE, "t"),
            (ENV_TIMER_QUEUE_URL, "https://sqs/timer"),
            (ENV_DEAD_LETTER_QUEUE_URL, "https://sqs/dlq"),
            (ENV_SCHEDULE_GROUP, "g"),
            (
                ENV_DELIVERY_FUNCTION_ARN,
                "arn:aws:lambda:eu-west-1:1:function:d",
            ),
            (ENV_SCHEDULER_ROLE_ARN, "arn:aws:iam::1:role/s"),
            (ENV_SCHEDULER_DLQ_ARN, "arn:aws:sqs:eu-west-1:1:failures"),
            (ENV_ALLOWED_CIDRS, "10.0.0.0/8, 192.168.1.0/24"),
            (ENV_RETENTION_DAYS, "30"),
        ]
        .into();
        let s = AwsSettings::from_lookup(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(
            s.scheduler_dlq_arn.as_deref(),
            Some("arn:aws:sqs:eu-west-1:1:failures")
        );
        assert_eq!(s.allowed_cidrs.len(), 2);
        assert_eq!(s.retention, Duration::from_secs(30 * 24 * 3600));
        let short = AwsSettings::from_lookup(|k| match k {
            ENV_RETENTION_DAYS => Some("1".to_string()),
            k => env.get(k).map(|v| v.to_string()),
        });
        assert!(matches!(
            short,
            Err(SettingsError::Invalid(ENV_RETENTION_DAYS, _))
        ));
        for absurd in ["18446744073709551615", "213503982336", "-1", "seven"] {
            let err = AwsSettings::from_lookup(|k| match k {
                ENV_RETENTION_DAYS => Some(absurd.to_string()),
                k => env.get(k).map(|v| v.to_string()),
            })
            .unwrap_err();
            assert!(err.to_string().starts_with(ENV_RETENTION_DAYS), "{err}");
        }
    }
}
