//! The system-failures queue collects timer messages that failed over and over, fires
//! Scheduler could not deliver, and failed asynchronous invocations of the delivery
//! function. A durable timer is the custody of a task's pending work (the store does not
//! keep armed tasks where the sweep looks), and a bucket's schedule the custody of its
//! minute, so such a message may be the only record of an attempt's timer or of a bucket's
//! fire: the sweeper hands each one back to the timer queue and then deletes it.

use std::sync::Arc;

use aws_sdk_sqs::types::Message;

use crate::messages::TimerMessage;
use crate::sdk::delete_messages;
use crate::sdk::describe;
use crate::timer::AwsTimer;
use boomerang_core::engine::Engine;

/// Most messages one sweep hands back.
const MAX_PER_SWEEP: usize = 500;

pub struct SystemFailures {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub timer: Arc<AwsTimer>,
}

impl SystemFailures {
    /// Re-arms the attempt, or re-queues the bucket, of every message it can read one in;
    /// returns how many. Messages it cannot read stay in the queue for an operator (and
    /// its alarm).
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
            let done = self.hand_back(engine, &messages).await;
            if done.is_empty() {
                break;
            }
            redriven += done.len();
            delete_messages(&self.sqs, &self.queue_url, &done).await?;
        }
        Ok(redriven)
    }

    /// Hands back the timer in each message, the attempts armed together and the buckets
    /// queued together; returns the messages handed back.
    async fn hand_back<'m>(&self, engine: &Engine, messages: &'m [Message]) -> Vec<&'m Message> {
        let mut done = Vec::new();
        let mut attempts = Vec::new();
        let mut buckets = Vec::new();
        for m in messages {
            match m.body().and_then(TimerMessage::find_in) {
                Some(TimerMessage::Attempt(attempt)) => attempts.push((m, attempt)),
                Some(bucket @ TimerMessage::Bucket { .. }) => buckets.push((m, (bucket, 0))),
                // The run handing it back is itself a sweep: the pass is done.
                Some(TimerMessage::Sweep { .. }) => done.push(m),
                None => {
                    tracing::warn!(message = ?m.message_id(), "system failure without a timer in it; left for an operator");
                }
            }
        }
        let refs: Vec<_> = attempts.iter().map(|(_, a)| a.clone()).collect();
        let armed = engine.rearm_many(&refs).await;
        done.extend((attempts.iter().zip(armed)).filter_map(|((m, _), ok)| ok.then_some(*m)));
        let work: Vec<_> = buckets.iter().map(|(_, w)| w.clone()).collect();
        for ((m, _), sent) in buckets.iter().zip(self.timer.send_many(&work).await) {
            match sent {
                Ok(()) => done.push(m),
                Err(e) => {
                    tracing::error!(error = %e, "could not hand a bucket back to the timer queue")
                }
            }
        }
        done
    }
}
