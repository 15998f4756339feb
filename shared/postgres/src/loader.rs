//! Leases due work to this server and brings it into its in-process timer, as fast as
//! delivery takes it.
//!
//! Every tick the loader leases the unowned rows coming due within
//! [`LoadSettings::ahead`], oldest first, a page a tick (`FOR UPDATE SKIP LOCKED`:
//! servers leasing at once take different rows and never wait on each other, and take
//! turns at work falling due together), by writing
//! this server's id in their `owner` column; a leased row leaves the index the loaders
//! read, so no row is read twice. Memory stays bounded: the loader stops leasing while
//! [`LoadSettings::window`] attempts are held or in hand, and goes on as they drain.
//!
//! What is already due when leased (everything left after a downtime, or what fell due
//! while memory was full) is the backlog: it is leased oldest first, a page at a time
//! whenever fewer than a page of attempts are in hand, after the work coming due from
//! now on. So callbacks falling due meanwhile (or registered for now, armed directly)
//! wait behind at most about two pages of it, however long it is.
//!
//! A backlog of a page or more, found while no other server runs, is held as a whole
//! range and read without a write per row ([`crate::backlog`]).
//!
//! The repair pass reads this server's own overdue rows every
//! [`LoadSettings::repair_every`]: what it finds there that is neither held, claimed nor
//! in hand lost its timer (a delivery that failed, say), and is armed again; dead letters
//! are sent (again) from here, and owed alerts raised.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;

use boomerang_core::domain::{PendingWork, Task, TaskId, WorkKind};
use boomerang_core::engine::{Engine, EngineError, SweepReport};
use boomerang_core::ports::StoreError;
use boomerang_embedded::{LoadSettings, LocalTimer};

use crate::backlog::{self, Held, Standing};
use crate::store::codec::decode;
use crate::store::owned::Since;
use crate::store::sql::unavailable;
use crate::store::tasks::pending_rows;
use crate::store::{lock, PgStore};

/// How often the loader looks at the clock and at what is in hand while it has work:
/// well within the time a page takes to deliver, so a backlog's deliveries never run dry.
const TICK: Duration = Duration::from_millis(20);
/// How often it looks while it leases nothing and has nothing in hand: each look is a
/// statement on the shared database, and work coming due enters the window
/// `--load-ahead` (at least a second) before its time, so a quarter of a second late
/// is still early.
const IDLE_TICK: Duration = Duration::from_millis(250);
/// Overdue by this much and not held: lost (less could be a write whose arm is on its way).
const GRACE_MS: i64 = 1000;

pub struct LeaseLoader {
    store: Arc<PgStore>,
    timer: Arc<LocalTimer>,
    settings: LoadSettings,
    /// The backlog this server holds alone, while it reads it.
    held: Mutex<Option<Holding>>,
}

/// A range held, and the tasks read from it that this server may still have: what letting
/// it go makes this server's. Pruned at each page to what it still owns (in its timer, in
/// hand, a result whose write failed, a dead letter for the repair pass), so it stays
/// about that size, unless this server gave every row up since the hold began (its lease
/// lapsed): then it no longer knows, and keeps every id read.
struct Holding {
    range: Held,
    read: Vec<TaskId>,
    losses: u64,
}

impl Holding {
    fn new(below_ms: i64, losses: u64) -> Holding {
        Holding {
            range: Held {
                below_ms,
                after: (i64::MIN, String::new()),
            },
            read: Vec::new(),
            losses,
        }
    }
}

/// A row of pending work, with its task's document if it reads.
type Leased = (PendingWork, Option<Task>);

impl LeaseLoader {
    pub fn new(store: Arc<PgStore>, timer: Arc<LocalTimer>, settings: LoadSettings) -> Self {
        Self {
            store,
            timer,
            settings,
            held: Mutex::new(None),
        }
    }

    fn held(&self) -> Option<Held> {
        lock(&self.held).as_ref().map(|h| h.range.clone())
    }

    /// Loads for ever, and runs the repair pass beside it.
    pub async fn run(self: Arc<Self>, engine: Arc<Engine>) {
        tokio::spawn(self.clone().repair_forever(engine.clone()));
        loop {
            // A lease is a write: one that fails (a full disk) makes the server unready,
            // one that takes rows shows the writes go through again.
            let pause = match self.load(&engine).await {
                Ok(taken) => {
                    if taken > 0 {
                        self.store.write_health.succeeded();
                    }
                    match taken > 0 || self.in_hand(&engine) > 0 {
                        true => TICK,
                        false => IDLE_TICK,
                    }
                }
                Err(e) => {
                    self.store.write_health.failed(e.to_string());
                    tracing::error!(error = %e, "leasing due work failed; trying again");
                    Duration::from_millis(500)
                }
            };
            tokio::time::sleep(pause).await;
        }
    }

    /// Leases a page of work coming due if memory has room, then a page of the backlog if
    /// few attempts are in hand; how many attempts it took. With nothing in hand, one page
    /// of both, oldest first: an idle server asks the database once a tick, not twice.
    ///
    /// One page of each a tick, not all there is: servers that share the database take
    /// turns, so work falling due together is spread over them rather than taken by
    /// whichever looked first (a page a tick is still 50 pages a second).
    pub async fn load(&self, engine: &Engine) -> Result<usize, StoreError> {
        if !self.has_room(engine) {
            return Ok(0);
        }
        let now = Utc::now();
        let until = now + chrono::Duration::from_std(self.settings.ahead).unwrap_or_default();
        let (now_ms, until_ms) = (now.timestamp_millis(), until.timestamp_millis());
        // Held: whether it still is, and alone, every tick (a server that starts must
        // not wait for this one to have room for a page before it gets a share).
        if let Some(held) = self.held() {
            match backlog::standing(&self.store, held.below_ms).await? {
                Standing::Alone => {}
                Standing::Joined => self.release().await?,
                Standing::Lost => self.forget_held(),
            }
        }
        if self.in_hand(engine) == 0 && self.held().is_none() {
            return self.lease_or_hold(until_ms, now_ms).await;
        }
        let (mut taken, _) = self.lease(now_ms, until_ms, now_ms).await?;
        if self.has_room(engine) && self.in_hand(engine) < self.settings.page {
            taken += self.backlog(now_ms).await?;
        }
        Ok(taken)
    }

    /// Takes a page of the backlog: of the range this server holds, or leased.
    async fn backlog(&self, now_ms: i64) -> Result<usize, StoreError> {
        match self.held() {
            Some(held) => self.read_held(held).await,
            None => self.lease_or_hold(now_ms - 1, now_ms).await,
        }
    }

    /// Leases a page of the oldest work due by `until_ms`; if it is a backlog, tries to
    /// hold the rest of it.
    async fn lease_or_hold(&self, until_ms: i64, now_ms: i64) -> Result<usize, StoreError> {
        let (taken, backlog) = self.lease(i64::MIN, until_ms, now_ms).await?;
        if backlog {
            self.try_hold(now_ms).await?;
        }
        Ok(taken)
    }

    /// Holds what is due before `now_ms` while no other server runs.
    async fn try_hold(&self, now_ms: i64) -> Result<(), StoreError> {
        let losses = self.store.owned.losses();
        if backlog::hold(&self.store, now_ms).await? {
            tracing::info!("holding the backlog alone: read, not leased row by row");
            self.store.owned.set_holds_backlog(true);
            *lock(&self.held) = Some(Holding::new(now_ms, losses));
        }
        Ok(())
    }

    /// Reads the next page of the range this server holds; lets the range go once it
    /// is read, or once another server runs.
    async fn read_held(&self, held: Held) -> Result<usize, StoreError> {
        let since = self.store.owned.since();
        let rows = backlog::page(&self.store, &held, self.settings.page).await?;
        let whole = rows.len() >= self.settings.page;
        let read = with_docs(&rows);
        if let (Some(last), Some(holding)) = (rows.last(), lock(&self.held).as_mut()) {
            holding.range.after = (last.get(4), last.get(1));
            (self.store.owned).retain_owned(&mut holding.read, holding.losses);
            (holding.read).extend(read.iter().map(|(work, _)| work.attempt.task_id));
        }
        let taken = self.take_all(read, since);
        if !whole {
            self.release().await?;
        }
        Ok(taken)
    }

    /// Lets the range this server holds go: what it read and still owns in memory becomes
    /// its own in the table too (see [`Holding`]).
    async fn release(&self) -> Result<(), StoreError> {
        let Some((held, mut read, losses)) =
            (lock(&self.held).as_ref()).map(|h| (h.range.clone(), h.read.clone(), h.losses))
        else {
            return Ok(());
        };
        self.store.owned.retain_owned(&mut read, losses);
        let read: Vec<String> = read.iter().map(TaskId::to_string).collect();
        match backlog::release(&self.store, &held, &read).await? {
            Some(kept) => tracing::info!(
                kept,
                "let the backlog go: what was left of it is leased row by row again"
            ),
            None => tracing::warn!("the backlog held here was taken over; let go"),
        }
        self.forget_held();
        Ok(())
    }

    /// Holds no backlog any more (let go, or taken over: a take-over tells this server
    /// that its rows are freed, and what it read of the range is vouched for no longer).
    fn forget_held(&self) {
        *lock(&self.held) = None;
        self.store.owned.set_holds_backlog(false);
    }

    /// Leases a page of work due from `from_ms` to `until_ms` and takes it: how many
    /// attempts the timer took, and whether the page was a backlog (whole, and all of it
    /// due before `now_ms`).
    async fn lease(
        &self,
        from_ms: i64,
        until_ms: i64,
        now_ms: i64,
    ) -> Result<(usize, bool), StoreError> {
        let since = self.store.owned.since();
        let leased = self.lease_page(from_ms, until_ms).await?;
        let overdue = |(work, _): &Leased| work.due_at.timestamp_millis() < now_ms;
        let backlog = leased.len() >= self.settings.page && leased.last().is_some_and(overdue);
        Ok((self.take_all(leased, since), backlog))
    }

    /// Takes rows read or leased by a statement sent after `since`; how many attempts
    /// the timer took.
    fn take_all(&self, rows: Vec<Leased>, since: Since) -> usize {
        rows.into_iter()
            .map(|(work, task)| usize::from(self.take(work, task, since)))
            .sum()
    }

    /// Leases one page of unowned work due from `from_ms` to `until_ms`, oldest first,
    /// with the tasks' documents.
    async fn lease_page(&self, from_ms: i64, until_ms: i64) -> Result<Vec<Leased>, StoreError> {
        let client = self.store.client().await?;
        let stmt = client
            .prepare_cached(
                "UPDATE tasks t SET owner = $1
                 FROM (SELECT id FROM tasks
                       WHERE owner IS NULL AND due_ms IS NOT NULL
                         AND due_ms >= greatest($4, (SELECT max(h.below_ms)
                             FROM backlog_holder h JOIN servers s ON s.id = h.owner
                             WHERE h.owner <> $1))
                         AND due_ms <= $2
                       ORDER BY due_ms LIMIT $3
                       FOR UPDATE SKIP LOCKED) d
                 WHERE t.id = d.id
                   AND (SELECT set_config('boomerang.quiet', 'on', true)) = 'on'
                 RETURNING t.tenant, t.id, t.attempt, t.due_kind, t.due_ms, t.doc",
            )
            .await
            .map_err(unavailable)?;
        let rows = client
            .query(
                &stmt,
                &[
                    &self.store.server(),
                    &until_ms,
                    &(self.settings.page as i64),
                    &from_ms,
                ],
            )
            .await
            .map_err(unavailable)?;
        Ok(with_docs(&rows))
    }

    /// Takes a leased row: now this server's; a timed piece of work is held for its time
    /// (a dead letter is left to the repair pass). Returns whether the timer took it.
    fn take(&self, work: PendingWork, task: Option<Task>, since: Since) -> bool {
        match task {
            Some(task) => self.store.owned.insert(task, since),
            None => self.store.owned.insert_id(work.attempt.task_id),
        }
        match work.kind {
            WorkKind::DeadLetter => false,
            _ => self.timer.load(work.attempt, work.due_at),
        }
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

    /// One repair pass over this server's overdue rows, a page at a time.
    pub async fn repair(&self, engine: &Engine) -> Result<SweepReport, EngineError> {
        let upto = Utc::now().timestamp_millis() - GRACE_MS;
        let mut after = (i64::MIN, String::new());
        let mut total = SweepReport::default();
        loop {
            let page = self.owned_page(&after, upto).await?;
            let Some(last) = page.last() else {
                return Ok(total);
            };
            after = (
                last.due_at.timestamp_millis(),
                last.attempt.task_id.to_string(),
            );
            let complete = page.len() < self.settings.page;
            let lost: Vec<PendingWork> =
                page.into_iter().filter(|w| self.lost(engine, w)).collect();
            let (report, _) = engine.repair(lost).await?;
            total += report;
            if complete {
                return Ok(total);
            }
        }
    }

    /// This server's rows due by `upto_ms`, after `after` (due time, id), in that order.
    async fn owned_page(
        &self,
        after: &(i64, String),
        upto_ms: i64,
    ) -> Result<Vec<PendingWork>, StoreError> {
        let client = self.store.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT tenant, id, attempt, due_kind, due_ms FROM tasks
                 WHERE owner = $1 AND due_ms <= $2 AND (due_ms, id) > ($3, $4)
                 ORDER BY due_ms, id LIMIT $5",
            )
            .await
            .map_err(unavailable)?;
        let rows = client
            .query(
                &stmt,
                &[
                    &self.store.server(),
                    &upto_ms,
                    &after.0,
                    &after.1,
                    &(self.settings.page as i64),
                ],
            )
            .await
            .map_err(unavailable)?;
        Ok(pending_rows(&rows))
    }

    /// Whether owned work lost its timer: not claimed, held, in hand or queued. A claimed
    /// task's pending work is its lease's end, which only memory knows: held for then.
    fn lost(&self, engine: &Engine, work: &PendingWork) -> bool {
        if let Some(claim) = self.store.claimed_work(&work.attempt.task_id) {
            if let Some(lease) = claim {
                self.timer.load(lease.attempt, lease.due_at);
            }
            return false;
        }
        let timed = !matches!(work.kind, WorkKind::DeadLetter);
        !(timed && (self.timer.has(&work.attempt) || engine.is_queued(&work.attempt)))
    }
}

/// Rows of pending work (tenant, id, attempt, due_kind, due_ms), each with its task's
/// document (the sixth column) if it reads; an unreadable row is skipped.
fn with_docs(rows: &[tokio_postgres::Row]) -> Vec<Leased> {
    rows.iter()
        .filter_map(|row| {
            let work = pending_rows(std::slice::from_ref(row)).pop()?;
            Some((work, decode::<Task>(row.get(5)).ok()))
        })
        .collect()
}
