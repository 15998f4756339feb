//! The in-process timer of the local binary.
//!
//! It holds in memory only what falls due soon. Later work stays in the store, and the
//! loader ([`crate::loader`]) pages it in as it comes near; so a million far-future tasks
//! cost no memory, and after a restart the loader brings back everything from disk.
//!
//! The timer keeps custody of an attempt from the moment it holds it until its delivery
//! ends: a fire carries a [`Custody`] that the delivery keeps while it runs, and an attempt
//! the engine puts off ([`Timer::put_off`]) is held whatever its time, since the store
//! shows it due already and would not bring it back. What the timer holds or has in hand
//! is what the loader and the repair pass skip.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, Notify};

use boomerang_core::domain::time::checked_add;
use boomerang_core::domain::AttemptRef;
use boomerang_core::ports::{Timer, TimerError};

pub struct LocalTimer {
    /// How far ahead an arm is held; later ones are left to the loader.
    horizon: Duration,
    state: Mutex<State>,
    fires: mpsc::UnboundedSender<Fire>,
    wake: Notify,
    /// When its loop last ran: it runs at least every [`BEAT`].
    beat: Mutex<std::time::Instant>,
}

/// The timer's loop runs at least this often, so that a stalled loop shows.
pub const BEAT: Duration = Duration::from_secs(1);

/// A fire: the attempt is due. Its delivery keeps it until the delivery ends, so that
/// the timer still counts the attempt as in hand.
pub struct Fire {
    pub attempt: AttemptRef,
    _custody: Custody,
}

/// An attempt fired and not yet delivered, counted in [`LocalTimer::in_hand`] while it
/// lives.
struct Custody {
    timer: Arc<LocalTimer>,
    attempt: AttemptRef,
}

impl Drop for Custody {
    fn drop(&mut self) {
        let mut state = self.timer.state();
        if let Some(n) = state.in_hand.get_mut(&self.attempt) {
            *n -= 1;
            if *n == 0 {
                state.in_hand.remove(&self.attempt);
            }
        }
    }
}

#[derive(Default)]
struct State {
    queue: BinaryHeap<Reverse<(DateTime<Utc>, AttemptRef)>>,
    /// The time each held attempt fires at; a queue entry at another time was superseded.
    armed: HashMap<AttemptRef, DateTime<Utc>>,
    /// The held attempts the engine put off (a subset of `armed`): they wait on something
    /// else (a pause, a flow's turn), not on the loader's window.
    parked: HashSet<AttemptRef>,
    /// Attempts fired whose delivery has not ended, with how many fires of each.
    in_hand: HashMap<AttemptRef, u32>,
    /// The furthest due time a read of the loader has covered or is covering: an arm up
    /// to it is held, since that read may have missed the write behind the arm.
    ceiling: Option<DateTime<Utc>>,
}

impl LocalTimer {
    /// The timer and the receiving end of its fires. Arms due within `horizon` are held;
    /// later ones are left to the loader, which must read at most that far ahead.
    pub fn new(horizon: Duration) -> (Arc<Self>, mpsc::UnboundedReceiver<Fire>) {
        let (fires, rx) = mpsc::unbounded_channel();
        let timer = Arc::new(Self {
            horizon,
            state: Mutex::new(State::default()),
            fires,
            wake: Notify::new(),
            beat: Mutex::new(std::time::Instant::now()),
        });
        tokio::spawn(timer.clone().run());
        (timer, rx)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change under this lock is a single insert or remove: a panic elsewhere
        // cannot leave it half-made, so a poisoned lock is still good.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many attempts are held, waiting for their time.
    pub fn pending(&self) -> usize {
        self.state().armed.len()
    }

    /// How many of those the engine put off (a paused destination, a flow's turn).
    pub fn parked(&self) -> usize {
        self.state().parked.len()
    }

    /// How many fired attempts are still being delivered (or wait for a work slot).
    pub fn in_hand(&self) -> usize {
        self.state().in_hand.len()
    }

    /// Whether the attempt is held or in hand.
    pub fn has(&self, attempt: &AttemptRef) -> bool {
        let state = self.state();
        state.armed.contains_key(attempt) || state.in_hand.contains_key(attempt)
    }

    /// How long its loop has not run.
    pub fn silent_for(&self) -> Duration {
        self.beat.lock().expect("timer lock").elapsed()
    }

    /// The loader is about to read the store up to `until`: arms up to there are held
    /// from now on.
    pub(crate) fn cover(&self, until: DateTime<Utc>) {
        let mut state = self.state();
        state.ceiling = state.ceiling.max(Some(until));
    }

    /// Takes work the loader read from the store, unless the attempt is already held or
    /// in hand (the held time, perhaps one the engine put it off to, stands). Work
    /// already due fires at once. Returns whether it was taken.
    pub fn load(self: &Arc<Self>, attempt: AttemptRef, at: DateTime<Utc>) -> bool {
        let mut state = self.state();
        if state.armed.contains_key(&attempt) || state.in_hand.contains_key(&attempt) {
            return false;
        }
        if at <= Utc::now() {
            let fire = self.fire(&mut state, attempt);
            drop(state);
            self.send(fire);
            return true;
        }
        Self::hold(&mut state, attempt, at);
        drop(state);
        self.wake.notify_one();
        true
    }

    fn hold(state: &mut State, attempt: AttemptRef, at: DateTime<Utc>) {
        state.parked.remove(&attempt);
        state.armed.insert(attempt.clone(), at);
        state.queue.push(Reverse((at, attempt)));
    }

    /// Takes the attempt in hand: the fire to send once the lock is let go (a fire
    /// dropped unsent takes the lock to give its custody back).
    fn fire(self: &Arc<Self>, state: &mut State, attempt: AttemptRef) -> Fire {
        *state.in_hand.entry(attempt.clone()).or_default() += 1;
        let custody = Custody {
            timer: self.clone(),
            attempt: attempt.clone(),
        };
        Fire {
            attempt,
            _custody: custody,
        }
    }

    /// Hands a fire to the deliveries. Nobody listening: the process is stopping, and the
    /// store keeps the work.
    fn send(&self, fire: Fire) {
        let _ = self.fires.send(fire);
    }

    async fn run(self: Arc<Self>) {
        loop {
            *self.beat.lock().expect("timer lock") = std::time::Instant::now();
            if self.fires.is_closed() {
                return; // nobody is listening any more
            }
            let wait = self.fire_due(Utc::now());
            let wait = wait.unwrap_or(BEAT).min(BEAT);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.wake.notified() => {}
            }
        }
    }

    /// Fires everything due by `now`; how long until the next is due (`None`: nothing
    /// held).
    fn fire_due(self: &Arc<Self>, now: DateTime<Utc>) -> Option<Duration> {
        let mut due = Vec::new();
        let wait = {
            let mut state = self.state();
            loop {
                let Some(Reverse((at, attempt))) = state.queue.peek().cloned() else {
                    break None;
                };
                if state.armed.get(&attempt) != Some(&at) {
                    state.queue.pop(); // superseded by another arm of the same attempt
                    continue;
                }
                if at > now {
                    break Some((at - now).to_std().unwrap_or_default());
                }
                state.queue.pop();
                state.armed.remove(&attempt);
                state.parked.remove(&attempt);
                due.push(self.fire(&mut state, attempt));
            }
        };
        for fire in due {
            self.send(fire);
        }
        wait
    }
}

#[async_trait]
impl Timer for LocalTimer {
    /// Its timers live in this process only: the store keeps every task where the loader
    /// looks, and the loader brings them back after a restart.
    fn durable(&self) -> bool {
        false
    }

    /// It sleeps until the very time.
    fn precision(&self) -> Duration {
        Duration::ZERO
    }

    /// Held if due within the horizon or the loader's reach; an earlier arm of the same
    /// attempt stands. Later work is left to the loader: its write is in the store, due
    /// after anything the loader has read.
    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> Result<(), TimerError> {
        let mut state = self.state();
        let near = checked_add(Utc::now(), self.horizon);
        // In whole milliseconds, as the loader's reads cover them.
        let reach = near.max(state.ceiling).map(|r| r.timestamp_millis());
        if reach.is_some_and(|reach| at.timestamp_millis() > reach) {
            return Ok(());
        }
        if state.armed.get(&attempt).is_some_and(|armed| *armed <= at) {
            return Ok(());
        }
        Self::hold(&mut state, attempt, at);
        drop(state);
        self.wake.notify_one();
        Ok(())
    }

    /// Held whatever its time, replacing an earlier arm of the same attempt, and counted
    /// as parked: it waits on a pause or a turn, so it does not hold the loader back.
    async fn put_off(&self, attempt: AttemptRef, until: DateTime<Utc>) -> Result<(), TimerError> {
        let mut state = self.state();
        Self::hold(&mut state, attempt.clone(), until);
        state.parked.insert(attempt);
        drop(state);
        self.wake.notify_one();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use boomerang_core::domain::TaskId;

    fn new_attempt() -> AttemptRef {
        let tenant = boomerang_core::testing::unique_tenant("local");
        AttemptRef::delivery(tenant, TaskId::new(), 1)
    }

    async fn next(fires: &mut mpsc::UnboundedReceiver<Fire>) -> Fire {
        tokio::time::timeout(Duration::from_secs(5), fires.recv())
            .await
            .expect("a fire within 5 s")
            .expect("the timer runs")
    }

    #[tokio::test]
    async fn fires_in_time_order_once_per_attempt_and_skips_far_work() {
        let (timer, mut fires) = LocalTimer::new(Duration::from_secs(60));
        let now = Utc::now();
        let (a, b, far) = (new_attempt(), new_attempt(), new_attempt());
        let ms = chrono::Duration::milliseconds;
        timer.arm(b.clone(), now + ms(80)).await.unwrap();
        timer.arm(a.clone(), now + ms(20)).await.unwrap();
        timer.arm(a.clone(), now + ms(40)).await.unwrap();
        timer
            .arm(far.clone(), now + chrono::Duration::hours(2))
            .await
            .unwrap();
        assert_eq!(timer.pending(), 2, "the far task is not held in memory");
        let first = next(&mut fires).await;
        let second = next(&mut fires).await;
        assert_eq!(first.attempt, a);
        assert_eq!(second.attempt, b);
        assert!(Utc::now() >= now + ms(80));
        assert_eq!(timer.pending(), 0);
        assert_eq!(timer.in_hand(), 2, "both are being delivered");
        drop(first);
        assert!(!timer.has(&a) && timer.has(&b));
        drop(second);
        assert_eq!(timer.in_hand(), 0);
    }

    #[tokio::test]
    async fn put_off_work_is_held_however_far_and_replaces_an_earlier_arm() {
        let (timer, _fires) = LocalTimer::new(Duration::from_secs(1));
        let a = new_attempt();
        let later = Utc::now() + chrono::Duration::hours(1);
        timer
            .arm(a.clone(), Utc::now() + chrono::Duration::milliseconds(500))
            .await
            .unwrap();
        timer.put_off(a.clone(), later).await.unwrap();
        assert!(timer.has(&a));
        assert_eq!(timer.state().armed.get(&a), Some(&later));
        // The loader reading the attempt at its stored (earlier) time does not undo it.
        assert!(!timer.load(a.clone(), Utc::now()));
        assert_eq!(timer.state().armed.get(&a), Some(&later));
    }

    #[tokio::test]
    async fn an_arm_within_the_loaders_reach_is_held_past_the_horizon() {
        let (timer, _fires) = LocalTimer::new(Duration::from_secs(1));
        let in_reach = Utc::now() + chrono::Duration::seconds(30);
        let (inside, beyond) = (new_attempt(), new_attempt());
        timer.cover(in_reach);
        timer.arm(inside.clone(), in_reach).await.unwrap();
        timer
            .arm(beyond.clone(), in_reach + chrono::Duration::seconds(1))
            .await
            .unwrap();
        assert!(
            timer.has(&inside),
            "the loader may have read past its write"
        );
        assert!(!timer.has(&beyond), "the loader will read it");
    }

    #[tokio::test]
    async fn a_fire_nobody_receives_gives_its_custody_back() {
        let (timer, fires) = LocalTimer::new(Duration::from_secs(1));
        drop(fires);
        let a = new_attempt();
        // Sent with no receiver: the fire is dropped, and with it the custody, which takes
        // the timer's lock (held while firing, this would hang).
        assert!(timer.load(a.clone(), Utc::now() - chrono::Duration::seconds(1)));
        assert_eq!(timer.in_hand(), 0);
        assert!(!timer.has(&a));
    }

    #[tokio::test]
    async fn put_off_work_is_parked_until_it_fires() {
        let (timer, mut fires) = LocalTimer::new(Duration::from_secs(1));
        let a = new_attempt();
        let soon = Utc::now() + chrono::Duration::milliseconds(50);
        timer.put_off(a.clone(), soon).await.unwrap();
        assert_eq!((timer.pending(), timer.parked()), (1, 1));
        let fire = next(&mut fires).await;
        assert_eq!(fire.attempt, a);
        assert_eq!((timer.pending(), timer.parked()), (0, 0));
    }

    #[tokio::test]
    async fn loaded_work_already_due_fires_at_once_and_is_not_loaded_twice() {
        let (timer, mut fires) = LocalTimer::new(Duration::from_secs(1));
        let a = new_attempt();
        let overdue = Utc::now() - chrono::Duration::minutes(5);
        assert!(timer.load(a.clone(), overdue));
        let fire = next(&mut fires).await;
        assert_eq!(fire.attempt, a);
        assert!(
            !timer.load(a.clone(), overdue),
            "in hand while it is delivered"
        );
        drop(fire);
        assert!(
            timer.load(a.clone(), overdue),
            "its delivery ended without a write"
        );
    }
}
