//! The system-failures queue collects timer messages that failed over and over, fires
//! Scheduler could not deliver, and failed asynchronous invocations of the delivery
//! function. A durable timer is the custody of a task's pending work (the store does not
//! keep armed tasks where the sweep looks), and a bucket's schedule the custody of its
//! minute, so such a message may be the only record of an attempt's timer or of a bucket's
//! fire: the sweeper hands each one back to the timer queue and then deletes it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::Message;
use futures_util::future::join_all;

use crate::messages::TimerMessage;
use crate::sdk::delete_messages;
use crate::sdk::describe;
use crate::timer::AwsTimer;
use boomerang_core::engine::Engine;

/// Readers of the queue side by side once it has a backlog: each receives ten messages,
/// hands them back (the attempts armed ten to a request) and deletes them, so a run hands
/// back about eighty messages per round trip of three calls.
const READERS: usize = 8;

/// What one read of the queue came to.
struct Read {
    /// Messages handed back (and deleted).
    redriven: usize,
    /// Whether to read on: a full batch came, and something of it was handed back.
    more: bool,
}

pub struct SystemFailures {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub timer: Arc<AwsTimer>,
}

impl SystemFailures {
    /// Re-arms the attempt, or re-queues the bucket, of every message it can read one in,
    /// until the queue is empty or `budget` has passed (no read starts after it); returns
    /// how many. Messages it cannot read stay in the queue for an operator (and its
    /// alarm). One reader looks first: the queue is empty nearly always, and eight
    /// readers' empty receives, twice a minute, would cost more than the rest of the
    /// sweeper's requests together.
    pub async fn redrive(&self, engine: &Engine, budget: Duration) -> Result<usize, String> {
        let deadline = Instant::now() + budget;
        let first = self.read_once(engine).await?;
        if !first.more {
            return Ok(first.redriven);
        }
        let readers = (0..READERS).map(|_| self.redrive_until(engine, deadline));
        let mut redriven = first.redriven;
        for read in join_all(readers).await {
            redriven += read?;
        }
        Ok(redriven)
    }

    /// One reader: batches of ten until the queue is empty or the deadline.
    async fn redrive_until(&self, engine: &Engine, deadline: Instant) -> Result<usize, String> {
        let mut redriven = 0;
        while Instant::now() < deadline {
            let read = self.read_once(engine).await?;
            redriven += read.redriven;
            if !read.more {
                break;
            }
        }
        Ok(redriven)
    }

    /// Receives up to ten messages, hands back what it can and deletes those.
    async fn read_once(&self, engine: &Engine) -> Result<Read, String> {
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
        let done = self.hand_back(engine, &messages).await;
        if !done.is_empty() {
            delete_messages(&self.sqs, &self.queue_url, &done).await?;
        }
        Ok(Read {
            redriven: done.len(),
            more: messages.len() == 10 && !done.is_empty(),
        })
    }

    /// Hands back the timer in each message, the attempts armed together and the buckets
    /// queued together; returns the messages handed back.
    async fn hand_back<'m>(&self, engine: &Engine, messages: &'m [Message]) -> Vec<&'m Message> {
        let mut done = Vec::new();
        let mut attempts = Vec::new();
        let mut buckets = Vec::new();
        for m in messages {
            match m.body().and_then(TimerMessage::find_in) {
                // A slow attempt goes back the shared way, and to the slow lane from there
                // if its destination is still slow.
                Some(TimerMessage::Attempt(attempt) | TimerMessage::Slow { slow: attempt }) => {
                    attempts.push((m, attempt))
                }
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
