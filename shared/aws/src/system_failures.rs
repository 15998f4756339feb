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
/// back about 160 messages per round trip of three calls.
const READERS: usize = 16;
/// How long a reader's receive waits for a message (long polling): an empty answer then
/// means the queue is empty, not that the servers sampled had nothing, so a reader stops
/// only when the backlog is gone.
const LONG_POLL_SECONDS: i32 = 1;

/// What one read of the queue came to.
struct Read {
    /// Messages handed back (and deleted).
    redriven: usize,
    /// Messages it could not hand back (left in the queue, visible again later).
    failed: usize,
    /// Whether to read on: something came, and something of it was handed back.
    more: bool,
}

/// What a redrive did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redrive {
    /// Messages handed back to the timer queue (and deleted).
    pub redriven: usize,
    /// Messages received that could not be handed back: they stay in the queue.
    pub failed: usize,
}

pub struct SystemFailures {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub timer: Arc<AwsTimer>,
}

impl SystemFailures {
    /// Re-arms the attempt, or re-queues the bucket, of every message it can read one in,
    /// until the queue is empty or `budget` has passed (no read starts after it). Messages
    /// it cannot read stay in the queue for an operator (and its alarm). One reader looks
    /// first, without waiting: the queue is empty nearly always, and sixteen readers'
    /// empty receives, twice a minute, would cost more than the rest of the sweeper's
    /// requests together. Anything found starts the readers, which long-poll until the
    /// queue is empty.
    pub async fn redrive(&self, engine: &Engine, budget: Duration) -> Result<Redrive, String> {
        let deadline = Instant::now() + budget;
        let first = self.read_once(engine, 0).await?;
        let mut total = Redrive {
            redriven: first.redriven,
            failed: first.failed,
        };
        if !first.more {
            return Ok(total);
        }
        let readers = (0..READERS).map(|_| self.redrive_until(engine, deadline));
        for read in join_all(readers).await {
            let read = read?;
            total.redriven += read.redriven;
            total.failed += read.failed;
        }
        Ok(total)
    }

    /// One reader: batches of ten until the queue is empty or the deadline.
    async fn redrive_until(&self, engine: &Engine, deadline: Instant) -> Result<Redrive, String> {
        let mut total = Redrive::default();
        while Instant::now() < deadline {
            let read = self.read_once(engine, LONG_POLL_SECONDS).await?;
            total.redriven += read.redriven;
            total.failed += read.failed;
            if !read.more {
                break;
            }
        }
        Ok(total)
    }

    /// Receives up to ten messages (waiting up to `wait_seconds` for one), hands back
    /// what it can and deletes those.
    async fn read_once(&self, engine: &Engine, wait_seconds: i32) -> Result<Read, String> {
        let received = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait_seconds)
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
            failed: messages.len() - done.len(),
            more: !messages.is_empty() && !done.is_empty(),
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
