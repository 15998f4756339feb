//! A timer that records what was armed instead of firing, for engine unit tests: the tests
//! play the timer by calling `Engine::deliver`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::{Attempt, AttemptRef, TaskId};
use crate::ports::{Timer, TimerError};

#[derive(Default)]
pub struct RecordingTimer {
    armed: Mutex<Vec<(AttemptRef, DateTime<Utc>)>>,
    failures_left: AtomicU32,
    durable: bool,
    precision: Duration,
}

impl RecordingTimer {
    /// One that says it is durable, as the AWS timer does.
    pub fn durable() -> Self {
        Self {
            durable: true,
            ..Self::default()
        }
    }

    /// One that says it fires up to `precision` late, as a queue counting whole seconds.
    pub fn imprecise(precision: Duration) -> Self {
        Self {
            precision,
            ..Self::durable()
        }
    }

    /// Every arm so far, as (task, attempt, time).
    pub fn armed(&self) -> Vec<(TaskId, Attempt, DateTime<Utc>)> {
        self.armed
            .lock()
            .expect("timer lock")
            .iter()
            .map(|(a, at)| (a.task_id, a.attempt, *at))
            .collect()
    }

    pub fn fail_next(&self, n: u32) {
        self.failures_left.store(n, Ordering::SeqCst);
    }

    pub fn clear(&self) {
        self.armed.lock().expect("timer lock").clear();
    }
}

#[async_trait]
impl Timer for RecordingTimer {
    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> Result<(), TimerError> {
        let left = self.failures_left.load(Ordering::SeqCst);
        if left > 0 {
            self.failures_left.store(left - 1, Ordering::SeqCst);
            return Err(TimerError("injected failure".into()));
        }
        self.armed.lock().expect("timer lock").push((attempt, at));
        Ok(())
    }

    /// Recorded as any other arm: this timer holds everything it is given.
    async fn put_off(&self, attempt: AttemptRef, until: DateTime<Utc>) -> Result<(), TimerError> {
        self.arm(attempt, until).await
    }

    fn durable(&self) -> bool {
        self.durable
    }

    fn precision(&self) -> Duration {
        self.precision
    }
}
