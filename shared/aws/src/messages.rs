//! What the timer queue, the slow lane's queue and a bucket's schedule carry: one attempt
//! (the slow lane's marked as such), a bucket's work, or a sweep pass. The timer sends
//! them, the delivery function and the bucket's fire read them, and the sweeper finds
//! them again in failure records; none of those need the others to know their shape.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::keys::BUCKET_SHARDS;
use boomerang_core::domain::AttemptRef;

/// The message group of bucket work (tenant ids never contain `#`).
pub const BUCKET_GROUP: &str = "#buckets";
/// The message group of sweep passes.
pub const SWEEP_GROUP: &str = "#sweep";
/// SQS takes a message group id of up to 128 printable ASCII characters.
const MAX_GROUP: usize = 128;

/// The message group of an attempt: its tenant's ([`TimerMessage::group`]).
pub fn attempt_group(attempt: &AttemptRef) -> String {
    let tenant = attempt.tenant.as_str();
    if tenant.len() <= MAX_GROUP && tenant.bytes().all(|b| b.is_ascii_graphic()) {
        tenant.to_string()
    } else {
        format!("#{:x}", Sha256::digest(tenant.as_bytes()))
    }
}

/// What a timer message carries: one attempt (the whole message, as it always was), a
/// bucket's work, a sweep pass, or an attempt handed to the slow lane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TimerMessage {
    Attempt(AttemptRef),
    Bucket {
        bucket: BucketWork,
    },
    /// A sweep pass between the sweeper's once-a-minute runs ([`SweepPass`]).
    Sweep {
        sweep: SweepPass,
    },
    /// An attempt handed to the slow lane: delivered by whichever queue carries it,
    /// whatever its destination's mark ([`crate::slow_lane`]).
    Slow {
        slow: AttemptRef,
    },
}

/// A sweep the timer queue carries: EventBridge runs the sweeper once a minute at most,
/// so each run queues one more pass half a minute later, which the delivery function runs.
/// A pass queues nothing itself, so passes never multiply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepPass {
    HalfMinute,
}

impl TimerMessage {
    /// The message a body holds, if it is one of ours.
    pub fn parse(body: &str) -> Option<TimerMessage> {
        serde_json::from_str(body).ok()
    }

    /// The message group it is sent under, which makes the timer queue fair (SQS fair
    /// queues): an attempt is grouped by its tenant, so one tenant's burst takes its turn
    /// instead of delaying every other tenant's callbacks; bucket work is its own group.
    /// A tenant id SQS would refuse as a group (beyond printable ASCII, or too long) is
    /// grouped by its digest.
    pub fn group(&self) -> String {
        match self {
            TimerMessage::Attempt(attempt) | TimerMessage::Slow { slow: attempt } => {
                attempt_group(attempt)
            }
            TimerMessage::Bucket { .. } => BUCKET_GROUP.to_string(),
            TimerMessage::Sweep { .. } => SWEEP_GROUP.to_string(),
        }
    }

    /// The timer message somewhere inside a failure record: the message itself, the
    /// payload of a failed invocation, or the input inside Scheduler's dead-letter event.
    pub fn find_in(body: &str) -> Option<TimerMessage> {
        Self::parse(body).or_else(|| {
            serde_json::from_str::<Value>(body)
                .ok()
                .as_ref()
                .and_then(search)
        })
    }
}

fn search(value: &Value) -> Option<TimerMessage> {
    if let Ok(message) = serde_json::from_value::<TimerMessage>(value.clone()) {
        return Some(message);
    }
    match value {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .as_ref()
            .and_then(search),
        Value::Array(items) => items.iter().find_map(search),
        Value::Object(map) => map.values().find_map(search),
        _ => None,
    }
}

/// A bucket's work: its minute, the partitions `first..end` still to read, and where the
/// first of them carries on from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BucketWork {
    pub minute: DateTime<Utc>,
    pub first: u32,
    pub end: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl BucketWork {
    /// The whole minute: what its schedule carries.
    pub fn whole(minute: DateTime<Utc>) -> Self {
        Self {
            minute,
            first: 0,
            end: BUCKET_SHARDS,
            after: None,
        }
    }

    /// Whether this is a minute's own fire, from its schedule (handed-on work names one
    /// partition).
    pub(crate) fn is_whole(&self) -> bool {
        self.first == 0 && self.end > 1 && self.after.is_none()
    }

    pub(crate) fn partition(minute: DateTime<Utc>, shard: u32, after: Option<String>) -> Self {
        Self {
            minute,
            first: shard,
            end: shard + 1,
            after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use boomerang_core::domain::{TaskId, TenantId};
    use chrono::TimeZone;

    #[test]
    fn attempts_are_grouped_by_tenant_in_a_form_sqs_takes() {
        let group = |tenant: &str| {
            TimerMessage::Attempt(AttemptRef::delivery(
                TenantId::parse(tenant).unwrap(),
                TaskId::new(),
                1,
            ))
            .group()
        };
        assert_eq!(group("acme"), "acme");
        assert_eq!(group("émile"), group("émile"));
        assert_ne!(group("émile"), group("emile"));
        for g in [group("émile"), group("acme")] {
            assert!(g.len() <= MAX_GROUP && g.bytes().all(|b| b.is_ascii_graphic()));
        }
        let bucket = TimerMessage::Bucket {
            bucket: BucketWork::whole(Utc::now()),
        };
        assert_eq!(bucket.group(), BUCKET_GROUP);
    }

    #[test]
    fn a_slow_lane_message_is_its_attempt_marked_and_grouped_by_its_tenant() {
        let at = AttemptRef::delivery(TenantId::parse("acme").unwrap(), TaskId::new(), 2);
        let slow = TimerMessage::Slow { slow: at.clone() };
        let text = serde_json::to_string(&slow).unwrap();
        let plain = serde_json::to_string(&at).unwrap();
        assert_eq!(text, format!(r#"{{"slow":{plain}}}"#));
        assert_eq!(TimerMessage::parse(&text), Some(slow.clone()));
        assert_eq!(slow.group(), TimerMessage::Attempt(at).group());
        // Failed five times, it is found in its system-failures record as it was.
        assert_eq!(TimerMessage::find_in(&text), Some(slow));
    }

    #[test]
    fn timer_messages_keep_the_attempt_shape_and_tell_buckets_apart() {
        let at = AttemptRef::delivery(TenantId::parse("acme").unwrap(), TaskId::new(), 3);
        let plain = serde_json::to_string(&at).unwrap();
        assert_eq!(
            serde_json::to_string(&TimerMessage::Attempt(at.clone())).unwrap(),
            plain
        );
        assert_eq!(
            TimerMessage::parse(&plain),
            Some(TimerMessage::Attempt(at.clone()))
        );
        let minute = Utc.with_ymd_and_hms(2030, 1, 1, 12, 20, 0).unwrap();
        let bucket = TimerMessage::Bucket {
            bucket: BucketWork::whole(minute),
        };
        let text = serde_json::to_string(&bucket).unwrap();
        assert_eq!(TimerMessage::parse(&text), Some(bucket.clone()));
        let pass = TimerMessage::Sweep {
            sweep: SweepPass::HalfMinute,
        };
        assert_eq!(
            serde_json::to_string(&pass).unwrap(),
            r#"{"sweep":"half_minute"}"#
        );
        assert_eq!(
            TimerMessage::parse(r#"{"sweep":"half_minute"}"#),
            Some(pass)
        );
        assert_eq!(TimerMessage::parse(r#"{"sweep":"hourly"}"#), None);
        assert_eq!(TimerMessage::parse("not ours"), None);
        assert_eq!(TimerMessage::parse(r#"{"bucket": {"minute": 3}}"#), None);
        // Inside a failed invocation's record, and inside Scheduler's dead-letter event.
        let record = serde_json::json!({
            "version": "1.0", "requestContext": {"condition": "RetriesExhausted"},
            "requestPayload": bucket.clone(), "responsePayload": {"errorMessage": "boom"}
        });
        assert_eq!(TimerMessage::find_in(&record.to_string()), Some(bucket));
        let event = serde_json::json!({"detail": {"input": plain}});
        assert_eq!(
            TimerMessage::find_in(&event.to_string()),
            Some(TimerMessage::Attempt(at))
        );
    }
}
