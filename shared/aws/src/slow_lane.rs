//! The slow lane on AWS: a queue made like the timer queue, read by the same delivery
//! function under its own event source mapping. Attempts whose destination answered
//! slowly of late are handed to it ([`boomerang_core::ports::SlowLane`]), so a batch of
//! the timer queue ends when its fast calls do, and slow calls share their batches (and
//! the invocations that wait on them) with other slow calls only.

use std::sync::Arc;

use async_trait::async_trait;

use crate::messages::TimerMessage;
use crate::timer::AwsTimer;
use boomerang_core::domain::AttemptRef;
use boomerang_core::ports::{SlowLane, TimerError};

pub struct SlowQueue {
    timer: Arc<AwsTimer>,
    queue_url: String,
}

impl SlowQueue {
    pub fn new(timer: Arc<AwsTimer>, queue_url: &str) -> Self {
        Self {
            timer,
            queue_url: queue_url.to_string(),
        }
    }
}

#[async_trait]
impl SlowLane for SlowQueue {
    async fn hand_over(&self, at: &AttemptRef) -> Result<(), TimerError> {
        let message = TimerMessage::Slow { slow: at.clone() };
        self.timer.send_to(&self.queue_url, &message, 0).await
    }
}
