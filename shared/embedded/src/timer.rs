//! The in-process timer of the local binary.
//!
//! It keeps in memory only what falls due within `horizon`; anything later is left to the
//! store, from which the local sweep loads it as it comes near. So a million far-future
//! tasks cost no memory, and after a restart the sweep re-arms everything from disk.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, Notify};

use boomerang_core::domain::time::checked_add;
use boomerang_core::domain::AttemptRef;
use boomerang_core::ports::{Timer, TimerError};

pub struct LocalTimer {
    horizon: Duration,
    state: Mutex<State>,
    wake: Notify,
    /// When its loop last ran: it runs at least every [`BEAT`].
    beat: Mutex<std::time::Instant>,
}

/// The timer's loop runs at least this often, so that a stalled loop shows.
pub const BEAT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct State {
    queue: BinaryHeap<Reverse<(DateTime<Utc>, AttemptRef)>>,
    /// The earliest armed time per attempt; duplicates of an armed attempt are dropped.
    armed: HashMap<AttemptRef, DateTime<Utc>>,
}

impl LocalTimer {
    /// The timer and the receiving end of its fires.
    pub fn new(horizon: Duration) -> (Arc<Self>, mpsc::UnboundedReceiver<AttemptRef>) {
        let timer = Arc::new(Self {
            horizon,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            beat: Mutex::new(std::time::Instant::now()),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(timer.clone().run(tx));
        (timer, rx)
    }

    /// How many fires are held in memory.
    pub fn pending(&self) -> usize {
        self.state.lock().expect("timer lock").armed.len()
    }

    /// How long its loop has not run.
    pub fn silent_for(&self) -> Duration {
        self.beat.lock().expect("timer lock").elapsed()
    }

    async fn run(self: Arc<Self>, fires: mpsc::UnboundedSender<AttemptRef>) {
        loop {
            *self.beat.lock().expect("timer lock") = std::time::Instant::now();
            let next = self.pop_due(Utc::now());
            match next {
                Ok(fire) => {
                    if fires.send(fire).is_err() {
                        return; // nobody is listening any more
                    }
                }
                Err(wait) => {
                    let wait = wait.unwrap_or(BEAT).min(BEAT);
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.wake.notified() => {}
                    }
                }
            }
        }
    }

    /// The next due fire, or how long to wait for one (`None`: nothing armed).
    fn pop_due(&self, now: DateTime<Utc>) -> Result<AttemptRef, Option<Duration>> {
        let mut state = self.state.lock().expect("timer lock");
        while let Some(Reverse((at, attempt))) = state.queue.peek().cloned() {
            if state.armed.get(&attempt) != Some(&at) {
                state.queue.pop(); // superseded by an earlier arm of the same attempt
                continue;
            }
            if at > now {
                return Err(Some((at - now).to_std().unwrap_or_default()));
            }
            state.queue.pop();
            state.armed.remove(&attempt);
            return Ok(attempt);
        }
        Err(None)
    }
}

#[async_trait]
impl Timer for LocalTimer {
    /// Its timers live in this process only: the store keeps every task where the sweep
    /// looks, and the sweep re-arms them after a restart.
    fn durable(&self) -> bool {
        false
    }

    /// It sleeps until the very time.
    fn precision(&self) -> Duration {
        Duration::ZERO
    }

    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> Result<(), TimerError> {
        if checked_add(Utc::now(), self.horizon).is_some_and(|horizon| at > horizon) {
            return Ok(()); // the sweep loads it when it comes near
        }
        let mut state = self.state.lock().expect("timer lock");
        if state.armed.get(&attempt).is_some_and(|armed| *armed <= at) {
            return Ok(());
        }
        state.armed.insert(attempt.clone(), at);
        state.queue.push(Reverse((at, attempt)));
        drop(state);
        self.wake.notify_one();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fires_in_time_order_once_per_attempt_and_skips_far_work() {
        let (timer, mut fires) = LocalTimer::new(Duration::from_secs(60));
        let now = Utc::now();
        let tenant = boomerang_core::testing::unique_tenant("local");
        let new_attempt =
            |_: u8| AttemptRef::new(tenant.clone(), boomerang_core::domain::TaskId::new(), 1);
        let (a, b, far) = (new_attempt(0), new_attempt(1), new_attempt(2));
        let ms = chrono::Duration::milliseconds;
        timer.arm(b.clone(), now + ms(80)).await.unwrap();
        timer.arm(a.clone(), now + ms(20)).await.unwrap();
        timer.arm(a.clone(), now + ms(40)).await.unwrap();
        timer
            .arm(far.clone(), now + chrono::Duration::hours(2))
            .await
            .unwrap();
        assert_eq!(timer.pending(), 2, "the far task is not held in memory");
        let first = tokio::time::timeout(Duration::from_secs(5), fires.recv())
            .await
            .unwrap();
        let second = tokio::time::timeout(Duration::from_secs(5), fires.recv())
            .await
            .unwrap();
        assert_eq!(first, Some(a));
        assert_eq!(second, Some(b));
        assert!(Utc::now() >= now + chrono::Duration::milliseconds(80));
        assert_eq!(timer.pending(), 0);
    }
}
