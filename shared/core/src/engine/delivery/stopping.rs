//! Stopping deliveries: a line past which no call starts (a server's shutdown; a Lambda
//! invocation's deadline), and the attempts claimed in this process, so that a shutdown
//! can wait for their calls to end and hand back those still running when its grace ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use super::{DeliverOutcome, Step};
use crate::domain::{AttemptRef, Task, TaskId};
use crate::engine::{Engine, EngineError};

/// A call is started only if it can end this long before the stop line: its result still
/// has to be written.
const WRITE_ROOM: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct Stopping {
    /// No call starts at all (a shutdown).
    halted: AtomicBool,
    /// When the line was drawn, and the line: a call that would end past it does not
    /// start, unless it could not end before it even when the line was drawn (an
    /// invocation shorter than a call: stopping would only send the call round again).
    line: Mutex<Option<(DateTime<Utc>, DateTime<Utc>)>>,
    /// The attempts claimed here whose result is not yet written, as claimed (shared with
    /// their deliveries, not copied: a task's body may be large).
    claimed: Mutex<HashMap<TaskId, Arc<Task>>>,
    /// Told each time a claimed attempt is settled.
    settled: Notify,
}

/// An attempt claimed here, until its result is written (or its delivery is dropped).
pub(crate) struct Claimed<'a> {
    stopping: &'a Stopping,
    id: TaskId,
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        let mut claimed = self
            .stopping
            .claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        claimed.remove(&self.id);
        self.stopping.settled.notify_waiters();
    }
}

impl Stopping {
    /// Whether a call that needs `needs` may start at `now`.
    fn allows(&self, now: DateTime<Utc>, needs: chrono::Duration) -> bool {
        if self.halted.load(Ordering::SeqCst) {
            return false;
        }
        let line = *self.line.lock().unwrap_or_else(|e| e.into_inner());
        let Some((drawn, line)) = line else {
            return true;
        };
        let ends_by = |start: DateTime<Utc>| {
            start
                .checked_add_signed(needs)
                .is_some_and(|end| end <= line)
        };
        ends_by(now) || !ends_by(drawn)
    }

    pub(crate) fn hold(&self, claimed: &Arc<Task>) -> Claimed<'_> {
        let mut all = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
        all.insert(claimed.id, claimed.clone());
        Claimed {
            stopping: self,
            id: claimed.id,
        }
    }

    fn still_claimed(&self) -> Vec<Arc<Task>> {
        let claimed = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
        claimed.values().cloned().collect()
    }
}

/// What a shutdown's drain did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drained {
    /// Calls that were under way and ended within the grace, their results written.
    pub finished: usize,
    /// Attempts still under way when the grace ended, handed back: due at once, for the
    /// next worker (or the next start).
    pub handed_back: usize,
}

impl Engine {
    /// From now on (a Lambda invocation's start), no call starts unless it can end (its
    /// timeout, and a second to write its result) before `line`, the invocation's
    /// deadline; `None` lifts the line. A call too long for the whole invocation still
    /// starts (stopping it would only send it round again). Attempts it stops are left
    /// due: armed again at once where the timer is durable (another invocation takes
    /// them), and otherwise found by the next sweep.
    pub fn deliver_until(&self, line: Option<DateTime<Utc>>) {
        let drawn = line.map(|line| (self.ports.clock.now(), line));
        *self.stopping.line.lock().unwrap_or_else(|e| e.into_inner()) = drawn;
    }

    /// Stops starting calls, waits up to `grace` for the calls under way to end and their
    /// results to be written, then hands back the attempts still under way.
    pub async fn drain(&self, grace: Duration) -> Result<Drained, EngineError> {
        self.stopping.halted.store(true, Ordering::SeqCst);
        let under_way = self.stopping.still_claimed().len();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let settled = self.stopping.settled.notified();
            if self.stopping.still_claimed().is_empty() {
                break;
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                break;
            }
        }
        let left = self.stopping.still_claimed();
        let mut handed_back = 0;
        for claimed in &left {
            let now = self.ports.clock.now();
            if self
                .give_back(claimed, now, "the server is stopping")
                .await?
                == DeliverOutcome::GivenBack
            {
                handed_back += 1;
            }
        }
        Ok(Drained {
            finished: under_way.saturating_sub(left.len()),
            handed_back,
        })
    }

    /// [`DeliverOutcome::Stopped`] if `task`'s call could not end before the stop line,
    /// with the attempt left due (armed again at once where the timer is durable).
    pub(in crate::engine) async fn check_stop_line(
        &self,
        at: &AttemptRef,
        task: &Task,
    ) -> Step<()> {
        let now = self.ports.clock.now();
        let needs = task.spec.timeout.saturating_add(WRITE_ROOM);
        let needs = chrono::Duration::from_std(needs).unwrap_or(chrono::Duration::MAX);
        if self.stopping.allows(now, needs) {
            return Step::Continue(());
        }
        if self.ports.timer.durable() {
            self.arm(at.clone(), now).await;
        }
        Step::Done(DeliverOutcome::Stopped)
    }
}
