//! Brings stored work back into the in-process timer as fast as delivery takes it.
//!
//! The loader pages through the store's index of pending work in due order, from a
//! watermark it moves forward: everything due up to the watermark is in memory (held,
//! being delivered, or done), so no row is read twice. It reads [`LoadSettings::ahead`]
//! of time, so a second's work is in memory before its second starts, however large.
//! Memory stays bounded: it stops reading while [`LoadSettings::window`] attempts are held
//! or in hand, and goes on as they drain.
//!
//! Work already overdue (a backlog after downtime) is read oldest first, a page at a time,
//! whenever fewer than a page of attempts are in hand: a callback that falls due meanwhile
//! is armed directly, and waits behind at most two pages of the backlog.
//!
//! The repair pass re-reads the index from its start up to the watermark every
//! [`LoadSettings::repair_every`]: what it finds there that is neither held nor in hand
//! lost its timer (a delivery that failed, say), and is armed again; it also resends dead
//! letters and raises owed alerts the first try could not.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use boomerang_core::domain::{PendingWork, WorkKind};
use boomerang_core::engine::{Engine, EngineError, SweepReport};
use boomerang_core::ports::StoreError;

use crate::store::{DueKey, SqliteStore};
use crate::timer::LocalTimer;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSettings {
    /// How long before its due time work is loaded into memory.
    pub ahead: Duration,
    /// Most rows one read of the index takes.
    pub page: usize,
    /// Most attempts held in memory (waiting, being delivered or queued at their
    /// destination) before the loader waits for them to drain.
    pub window: usize,
    /// How often the repair pass runs.
    pub repair_every: Duration,
}

impl Default for LoadSettings {
    fn default() -> Self {
        Self {
            ahead: Duration::from_secs(5),
            page: 1000,
            window: 100_000,
            repair_every: Duration::from_secs(5),
        }
    }
}

/// How often the loader looks at the clock and at what is in hand: well within the time
/// a page takes to deliver, so the deliveries never run dry while a backlog drains.
const TICK: Duration = Duration::from_millis(20);

pub struct Loader {
    store: Arc<SqliteStore>,
    timer: Arc<LocalTimer>,
    settings: LoadSettings,
    /// The watermark: every row due up to it has been read.
    covered: Mutex<DueKey>,
}

impl Loader {
    pub fn new(store: Arc<SqliteStore>, timer: Arc<LocalTimer>, settings: LoadSettings) -> Self {
        Self {
            store,
            timer,
            settings,
            covered: Mutex::new(DueKey::START),
        }
    }

    fn covered(&self) -> DueKey {
        *self.covered.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_covered(&self, key: DueKey) {
        *self.covered.lock().unwrap_or_else(|e| e.into_inner()) = key;
    }

    /// Loads for ever, and runs the repair pass beside it.
    pub async fn run(self: Arc<Self>, engine: Arc<Engine>) {
        tokio::spawn(self.clone().repair_forever(engine.clone()));
        let mut ticks = tokio::time::interval(TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(e) = self.load(&engine).await {
                tracing::error!(error = %e, "loading due work failed; trying again");
            }
        }
    }

    /// Reads pages until the watermark is `ahead` of now, or memory or the backlog's
    /// share of the deliveries is full. Returns how many attempts it took.
    pub async fn load(&self, engine: &Engine) -> Result<usize, StoreError> {
        let LoadSettings { ahead, page, .. } = self.settings;
        let mut taken = 0;
        loop {
            let now = Utc::now();
            let target = now + chrono::Duration::from_std(ahead).unwrap_or_default();
            let covered = self.covered();
            if self.near_enough(covered, now, target) || !self.has_room(engine, covered, now) {
                return Ok(taken);
            }
            // Before the read: a write it misses is armed with its time up to `target`,
            // and such an arm is now held.
            self.timer.cover(target);
            let read = self.store.due_page(covered, target, page).await?;
            for work in read.work {
                taken += usize::from(self.take(engine, work, Taking::Due));
            }
            self.set_covered(read.end);
        }
    }

    /// Whether the watermark is close enough to `target` to skip a read: past it, or
    /// ahead of the clock by all but a twentieth of `ahead` (a quarter second by default),
    /// so an idle server reads a few times a second, not at every tick.
    fn near_enough(&self, covered: DueKey, now: DateTime<Utc>, target: DateTime<Utc>) -> bool {
        let slack = chrono::Duration::from_std(self.settings.ahead / 20).unwrap_or_default();
        let overdue = covered.due_ms < now.timestamp_millis();
        covered >= DueKey::after(target) || (!overdue && covered >= DueKey::after(target - slack))
    }

    /// Whether another page may be read: memory has room for it, and if the page is
    /// overdue work, fewer than a page of attempts are in hand (so the backlog takes turns
    /// with work that falls due meanwhile instead of going ahead of it).
    fn has_room(&self, engine: &Engine, covered: DueKey, now: DateTime<Utc>) -> bool {
        let LoadSettings { page, window, .. } = self.settings;
        let in_hand = self.timer.in_hand() + engine.queued_deliveries();
        let held = self.timer.pending() + in_hand;
        let overdue = covered.due_ms < now.timestamp_millis();
        held + page <= window && !(overdue && in_hand >= page)
    }

    /// Takes one row of the index: a claimed task's lease end, a timed piece of work
    /// (unless the timer or a destination's queue has it already), or, for the repair
    /// pass, a dead letter or an attempt whose timer was lost. Returns whether the timer
    /// took it; `Taking::Repair` leaves lost work to the caller in `lost`.
    fn take(&self, engine: &Engine, work: PendingWork, how: Taking<'_>) -> bool {
        // A claimed task's pending work is its lease's end, which only memory knows: held
        // for then (whatever its time), unless its delivery has the attempt in hand.
        match self.store.claimed_work(&work.attempt.task_id) {
            Some(Some(lease)) => return self.timer.load(lease.attempt, lease.due_at),
            Some(None) => return false,
            None => {}
        }
        let timed = !matches!(work.kind, WorkKind::DeadLetter);
        if timed && (self.timer.has(&work.attempt) || engine.is_queued(&work.attempt)) {
            return false;
        }
        match how {
            Taking::Due if timed => self.timer.load(work.attempt, work.due_at),
            // A dead letter is left to the repair pass.
            Taking::Due => false,
            Taking::Repair(lost) => {
                lost.push(work);
                false
            }
        }
    }

    async fn repair_forever(self: Arc<Self>, engine: Arc<Engine>) {
        let mut ticks = tokio::time::interval(self.settings.repair_every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match self.repair(&engine).await {
                Ok(r) if r != SweepReport::default() => {
                    tracing::info!(?r, "repair pass took over work whose timer was lost")
                }
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "repair pass failed"),
            }
        }
    }

    /// One repair pass: the index from its start up to the watermark (and no further than
    /// now), a page at a time.
    pub async fn repair(&self, engine: &Engine) -> Result<SweepReport, EngineError> {
        let covered = self.covered().due_ms.min(Utc::now().timestamp_millis());
        let Some(upto) = DateTime::from_timestamp_millis(covered) else {
            return Ok(SweepReport::default()); // nothing read yet
        };
        let mut from = DueKey::START;
        let mut total = SweepReport::default();
        loop {
            let read = self.store.due_page(from, upto, self.settings.page).await?;
            let mut lost = Vec::new();
            for work in read.work {
                self.take(engine, work, Taking::Repair(&mut lost));
            }
            let (report, _) = engine.repair(lost).await?;
            total.rearmed += report.rearmed;
            total.leases_taken_over += report.leases_taken_over;
            total.dead_letters_resent += report.dead_letters_resent;
            total.alerts_raised += report.alerts_raised;
            if read.complete {
                return Ok(total);
            }
            from = read.end;
        }
    }
}

/// Who reads a row: the loader, which takes what is due, or the repair pass, which
/// gathers what lost its timer.
enum Taking<'a> {
    Due,
    Repair(&'a mut Vec<PendingWork>),
}
