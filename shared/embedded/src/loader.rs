//! Brings stored work back into the in-process timer as fast as delivery takes it.
//!
//! The loader pages through the store's index of pending work in due order. Its main
//! cursor moves forward from the clock to [`LoadSettings::ahead`] of it: every row it has
//! passed is in memory (held, being delivered, or done), so the loader reads no row twice
//! and a second's work is in memory before its second starts, however large. Memory
//! stays bounded: the loader stops reading while [`LoadSettings::window`] attempts are
//! held or in hand (bar those the engine put off: they wait on a pause or a turn, not on
//! memory), and goes on as they drain.
//!
//! What is already due when the loader gets there (everything stored, at start-up; what
//! fell due while memory was full) is the backlog, read by a cursor of its own, oldest
//! first, a page at a time whenever fewer than a page of attempts are in hand. Work that
//! falls due meanwhile is the main cursor's (or armed directly at registration), so it
//! waits behind at most two pages of the backlog, however long the backlog is.
//!
//! The repair pass re-reads the index from its start up to what the loader has read every
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
    cursors: Mutex<Cursors>,
}

/// Where the loader has read the index to.
#[derive(Clone, Copy, Debug)]
struct Cursors {
    /// Every row due up to here has been read, but the backlog's.
    main: DueKey,
    /// Overdue rows still to read, after the first key and up to the second: what was
    /// already due when the loader got there (at start-up, after downtime, or after
    /// memory held it back).
    backlog: Option<(DueKey, DueKey)>,
}

impl Loader {
    pub fn new(store: Arc<SqliteStore>, timer: Arc<LocalTimer>, settings: LoadSettings) -> Self {
        Self {
            store,
            timer,
            settings,
            cursors: Mutex::new(Cursors {
                main: DueKey::START,
                backlog: None,
            }),
        }
    }

    fn cursors(&self) -> Cursors {
        *self.cursors.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_cursors(&self, cursors: Cursors) {
        *self.cursors.lock().unwrap_or_else(|e| e.into_inner()) = cursors;
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

    /// Reads pages until the main cursor is `ahead` of now and the backlog is read, or
    /// memory, or the backlog's share of the deliveries, is full. Returns how many
    /// attempts it took.
    pub async fn load(&self, engine: &Engine) -> Result<usize, StoreError> {
        let LoadSettings { ahead, page, .. } = self.settings;
        let mut taken = 0;
        loop {
            let now = Utc::now();
            let target = now + chrono::Duration::from_std(ahead).unwrap_or_default();
            let mut cursors = self.cursors();
            // The main cursor reads no overdue work: what is overdue when it gets there
            // joins the backlog, read at its own pace, so that work falling due from now
            // on is never behind it.
            let now_key = DueKey::after(now);
            if cursors.main < now_key {
                let from = cursors.backlog.map_or(cursors.main, |(from, _)| from);
                cursors.backlog = Some((from, now_key));
                cursors.main = now_key;
                self.set_cursors(cursors);
            }
            let room = self.has_room(engine);
            if room && !self.near_enough(cursors.main, target) {
                // Before the read: a write it misses is armed with its time up to
                // `target`, and such an arm is now held.
                self.timer.cover(target);
                let read = self.store.due_page(cursors.main, target, page).await?;
                taken += self.take_all(engine, read.work);
                self.set_cursors(Cursors {
                    main: read.end,
                    ..self.cursors()
                });
                continue;
            }
            let Some((from, until)) = cursors.backlog else {
                return Ok(taken);
            };
            if !room || self.in_hand(engine) >= page {
                return Ok(taken);
            }
            let until_at = DateTime::from_timestamp_millis(until.due_ms).unwrap_or(now);
            let read = self.store.due_page(from, until_at, page).await?;
            taken += self.take_all(engine, read.work);
            let backlog = (!read.complete).then_some((read.end, until));
            self.set_cursors(Cursors {
                backlog,
                ..self.cursors()
            });
        }
    }

    fn take_all(&self, engine: &Engine, work: Vec<PendingWork>) -> usize {
        work.into_iter()
            .map(|w| usize::from(self.take(engine, w, Taking::Due)))
            .sum()
    }

    /// Whether the main cursor is close enough to `target` to skip a read: ahead of the
    /// clock by all but a twentieth of `ahead` (a quarter second by default), so an idle
    /// server reads a few times a second, not at every tick.
    fn near_enough(&self, main: DueKey, target: DateTime<Utc>) -> bool {
        let slack = chrono::Duration::from_std(self.settings.ahead / 20).unwrap_or_default();
        main >= DueKey::after(target - slack)
    }

    /// Attempts the deliveries have in hand: fired and not yet delivered, or queued at
    /// their destination.
    fn in_hand(&self, engine: &Engine) -> usize {
        self.timer.in_hand() + engine.queued_deliveries()
    }

    /// Whether memory has room for another page. Attempts the engine put off (a paused
    /// destination, a flow waiting for its turn) do not count: they wait on something
    /// else, and must not hold back everyone else's work.
    fn has_room(&self, engine: &Engine) -> bool {
        let LoadSettings { page, window, .. } = self.settings;
        let held = self.timer.pending() - self.timer.parked().min(self.timer.pending());
        held + self.in_hand(engine) + page <= window
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

    /// One repair pass: the index from its start up to what the loader has read (and no
    /// further than now), a page at a time.
    pub async fn repair(&self, engine: &Engine) -> Result<SweepReport, EngineError> {
        let cursors = self.cursors();
        let read_to = cursors.backlog.map_or(cursors.main, |(from, _)| from);
        let upto_ms = read_to.due_ms.min(Utc::now().timestamp_millis());
        let Some(upto) = DateTime::from_timestamp_millis(upto_ms) else {
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
            total += report;
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
