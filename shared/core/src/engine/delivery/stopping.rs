//! Stopping deliveries: a line past which no call starts (a server's shutdown; a Lambda
//! invocation's deadline), and the attempts claimed in this process, so that a shutdown
//! can wait for their calls to end and hand back those still running when its grace ends.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use crate::domain::{Task, TaskId};

/// A call is started only if it can end this long before the stop line: its result still
/// has to be written.
pub(super) const WRITE_ROOM: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct Stopping {
    /// No call starts at all (a shutdown).
    pub(super) halted: AtomicBool,
    /// When the line was drawn, and the line: a call that would end past it does not
    /// start, unless it could not end before it even when the line was drawn (an
    /// invocation shorter than a call: stopping would only send the call round again).
    pub(super) line: Mutex<Option<(DateTime<Utc>, DateTime<Utc>)>>,
    /// The attempts claimed here whose result is not yet written, as claimed (shared with
    /// their deliveries, not copied: a task's body may be large).
    pub(super) claimed: Mutex<HashMap<TaskId, Arc<Task>>>,
    /// Told each time a claimed attempt is settled.
    pub(super) settled: Notify,
    /// Attempts claimed and then given back without their call, because a drain began
    /// meanwhile: the drain counts them as handed back, not as calls that ended.
    pub(super) uncalled: Mutex<HashSet<TaskId>>,
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
    pub(super) fn allows(&self, now: DateTime<Utc>, needs: chrono::Duration) -> bool {
        if self.halted() {
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

    /// Whether no call starts at all (a shutdown's drain began).
    pub(super) fn halted(&self) -> bool {
        self.halted.load(Ordering::SeqCst)
    }

    /// Holds `claimed` until the returned guard drops. A drain sees it once held: an
    /// attempt held before the drain began, or that sees [`Self::halted`] after its hold,
    /// cannot call unseen.
    pub(crate) fn hold(&self, claimed: &Arc<Task>) -> Claimed<'_> {
        let mut all = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
        all.insert(claimed.id, claimed.clone());
        Claimed {
            stopping: self,
            id: claimed.id,
        }
    }

    pub(super) fn still_claimed(&self) -> Vec<Arc<Task>> {
        let claimed = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
        claimed.values().cloned().collect()
    }

    /// Notes that `id`'s attempt was given back without its call, a drain having begun.
    pub(super) fn gave_back_uncalled(&self, id: TaskId) {
        let mut uncalled = self.uncalled.lock().unwrap_or_else(|e| e.into_inner());
        uncalled.insert(id);
    }

    pub(super) fn uncalled(&self) -> HashSet<TaskId> {
        self.uncalled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// What a shutdown's drain did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drained {
    /// Calls that were under way and ended within the grace, their results written.
    pub finished: usize,
    /// Attempts handed back uncalled, due at once for the next worker (or the next
    /// start): still under way when the grace ended, or claimed as the drain began and
    /// stopped before their call.
    pub handed_back: usize,
}
