//! The system-failures queue collects timer messages that failed over and over, fires
//! Scheduler could not deliver, and failed asynchronous invocations of the delivery
//! function. A durable timer is the custody of a task's pending work (the store does not
//! keep armed tasks where the sweep looks), so such a message may be the only record of an
//! attempt's timer: the sweeper hands each one back to the timer queue and then deletes it.

use serde_json::Value;

use crate::sdk::delete_messages;
use crate::sdk::describe;
use boomerang_core::domain::AttemptRef;
use boomerang_core::engine::Engine;

/// Most messages one sweep hands back.
const MAX_PER_SWEEP: usize = 500;

pub struct SystemFailures {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
}

impl SystemFailures {
    /// Re-arms the attempt of every message it can read one in; returns how many.
    /// Messages it cannot read stay in the queue for an operator (and its alarm).
    pub async fn redrive(&self, engine: &Engine) -> Result<usize, String> {
        let mut redriven = 0;
        while redriven < MAX_PER_SWEEP {
            let received = self
                .sqs
                .receive_message()
                .queue_url(&self.queue_url)
                .max_number_of_messages(10)
                .visibility_timeout(60)
                .send()
                .await
                .map_err(|e| describe(&e))?;
            let messages = received.messages.unwrap_or_default();
            if messages.is_empty() {
                break;
            }
            let mut done = Vec::new();
            for m in &messages {
                let Some(attempt) = m.body().and_then(attempt_in) else {
                    tracing::warn!(message = ?m.message_id(), "system failure without a timer in it; left for an operator");
                    continue;
                };
                if engine.rearm(attempt).await {
                    redriven += 1;
                    done.push(m);
                }
            }
            if done.is_empty() {
                break;
            }
            delete_messages(&self.sqs, &self.queue_url, &done).await?;
        }
        Ok(redriven)
    }
}

/// The timer message a system failure carries: the message itself (a timer queue
/// redrive), the request payload of a failed invocation record, or the input inside
/// Scheduler's dead-letter event. (A schedule's name alone would not do: it names the
/// task and attempt but not the tenant, which finds the task.)
pub fn attempt_in(body: &str) -> Option<AttemptRef> {
    if let Ok(attempt) = serde_json::from_str::<AttemptRef>(body) {
        return Some(attempt);
    }
    serde_json::from_str::<Value>(body)
        .ok()
        .as_ref()
        .and_then(search)
}

fn search(value: &Value) -> Option<AttemptRef> {
    if let Ok(attempt) = serde_json::from_value::<AttemptRef>(value.clone()) {
        return Some(attempt);
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

#[cfg(test)]
mod tests {
    use super::*;
    use boomerang_core::domain::{TaskId, TenantId};

    #[test]
    fn finds_the_timer_in_every_shape_of_failure() {
        let at = AttemptRef::new(TenantId::parse("acme").unwrap(), TaskId::new(), 3);
        let plain = serde_json::to_string(&at).unwrap();
        assert_eq!(attempt_in(&plain), Some(at.clone()));
        let record = serde_json::json!({
            "version": "1.0", "requestContext": {"condition": "RetriesExhausted"},
            "requestPayload": at.clone(), "responsePayload": {"errorMessage": "boom"}
        });
        assert_eq!(attempt_in(&record.to_string()), Some(at.clone()));
        let event = serde_json::json!({"detail": {"input": plain}});
        assert_eq!(attempt_in(&event.to_string()), Some(at));
        assert_eq!(attempt_in("not ours"), None);
    }
}
