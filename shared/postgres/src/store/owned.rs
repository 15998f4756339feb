//! The tasks whose pending work this server owns (its id in their `owner` column), each
//! with the document it last read or wrote, if kept. Kept so that the timer holds exactly
//! the work this server owns, and so that a delivery's first read costs no round trip.
//!
//! A kept document is *vouched for* when no other server can have changed the row since
//! it was read or written without this server hearing of it: the owner notices
//! ([`super::owner_notices`]) were being listened to from before the statement that read
//! or wrote it was sent, and no change of the task has been seen since: no notice, and
//! no other insert or removal by this server (whose own writes notify nobody). An attempt of a task
//! whose document is vouched for at the version claimed is claimed without reading the
//! row again; any other claim reads it ([`super::claim_checks`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use boomerang_core::domain::{Task, TaskId};

use super::lock;

/// Past this many documents kept, new ones are not: the delivery reads them.
const DOCS_KEPT: usize = 200_000;
/// Past this many tasks stamped, the stamps are forgotten at once, and what was read or
/// written before is no longer vouched for.
const STAMPS_KEPT: usize = 100_000;

#[derive(Clone, Default)]
pub(crate) struct Owned(Arc<Mutex<Inner>>);

#[derive(Default)]
struct Inner {
    tasks: HashMap<TaskId, Option<Kept>>,
    /// Whether the notices are listened to, and how many times listening began.
    listening: bool,
    epoch: u64,
    /// Until when the last ping vouches (the connection answered, the lease was alive).
    proven_until: Option<Instant>,
    /// Changes seen so far (a notice, or this server's own insert or removal), and the
    /// last one's number for each task; numbers up to `forgotten` are no longer kept.
    changes: u64,
    stamps: HashMap<TaskId, u64>,
    forgotten: u64,
    holds_backlog: bool,
    /// How many times this server gave every row up ([`Owned::lost_all`]).
    losses: u64,
}

struct Kept {
    task: Task,
    vouched: bool,
}

/// Taken before a statement that reads or writes a task is sent, and given with its
/// document to [`Owned::insert`]: what had been seen by then.
#[derive(Clone, Copy)]
pub(crate) struct Since {
    epoch: Option<u64>,
    changes: u64,
}

impl Inner {
    /// Notes a change of `id`: whatever was read or written of it before is not vouched
    /// for by a later insert.
    fn stamp(&mut self, id: TaskId) {
        self.changes += 1;
        if self.stamps.len() >= STAMPS_KEPT {
            self.stamps.clear();
            self.forgotten = self.changes - 1;
        }
        self.stamps.insert(id, self.changes);
    }

    /// Whether nothing was seen of `id` since `since`, while listening throughout.
    fn unchanged_since(&self, id: &TaskId, since: Since) -> bool {
        self.listening
            && since.epoch == Some(self.epoch)
            && since.changes >= self.forgotten
            && (self.stamps.get(id)).is_none_or(|n| *n <= since.changes)
    }
}

impl Owned {
    pub fn since(&self) -> Since {
        let inner = lock(&self.0);
        Since {
            epoch: inner.listening.then_some(inner.epoch),
            changes: inner.changes,
        }
    }

    /// This server owns `task`, as read or written by a statement sent after `since`. A
    /// kept document of a later version stays (this one's answer came late).
    pub fn insert(&self, task: Task, since: Since) {
        let mut inner = lock(&self.0);
        let vouched = inner.unchanged_since(&task.id, since);
        let id = task.id;
        let newer_kept = (inner.tasks.get(&id))
            .and_then(Option::as_ref)
            .is_some_and(|k| k.task.version > task.version);
        if !newer_kept {
            let keep = inner.tasks.len() < DOCS_KEPT;
            inner
                .tasks
                .insert(id, keep.then_some(Kept { task, vouched }));
        }
        inner.stamp(id);
    }

    /// This server owns the task, whose document it did not keep.
    pub fn insert_id(&self, id: TaskId) {
        lock(&self.0).tasks.entry(id).or_insert(None);
    }

    /// This server no longer owns the task.
    pub fn remove(&self, id: &TaskId) {
        let mut inner = lock(&self.0);
        inner.tasks.remove(id);
        inner.stamp(*id);
    }

    /// What this server kept of the task may be out of date (a write of it may or may
    /// not have happened): it is read again.
    pub fn doubt(&self, id: &TaskId) {
        let mut inner = lock(&self.0);
        if let Some(kept) = inner.tasks.get_mut(id) {
            *kept = None;
        }
        inner.stamp(*id);
    }

    pub fn contains(&self, id: &TaskId) -> bool {
        lock(&self.0).tasks.contains_key(id)
    }

    /// The kept document of `id`. It stays kept until this server writes the task again
    /// (or gives its work up): an attempt that waits in its destination's queue reads it
    /// twice, once on arrival and once when its turn comes.
    pub fn doc(&self, id: &TaskId) -> Option<Task> {
        let inner = lock(&self.0);
        inner.tasks.get(id)?.as_ref().map(|k| k.task.clone())
    }

    /// Whether the row of `id` is vouched to be at `version` and this server's.
    pub fn vouches(&self, id: &TaskId, version: u64) -> bool {
        let inner = lock(&self.0);
        inner.listening
            && inner.proven_until.is_some_and(|t| Instant::now() < t)
            && (inner.tasks.get(id))
                .and_then(Option::as_ref)
                .is_some_and(|k| k.vouched && k.task.version == version)
    }

    /// A ping answered, and this server's lease was alive: vouching may go on until `until`.
    pub fn proven_until(&self, until: Instant) {
        lock(&self.0).proven_until = Some(until);
    }

    /// Whether this server holds a backlog alone (see `crate::backlog`): its own writes
    /// to the rows of that range tell nobody, as its writes to its own rows do.
    pub fn holds_backlog(&self) -> bool {
        lock(&self.0).holds_backlog
    }

    pub fn set_holds_backlog(&self, holds: bool) {
        lock(&self.0).holds_backlog = holds;
    }

    /// Whether the notices are listened to.
    pub fn hears_notices(&self) -> bool {
        lock(&self.0).listening
    }

    /// The notices are listened to from now on: what was kept before is not vouched for
    /// (changes may have gone unheard), what is read or written from now on is.
    pub fn listening(&self) {
        let mut inner = lock(&self.0);
        inner.epoch += 1;
        inner.listening = true;
    }

    /// The notices are not listened to (the connection was lost): nothing is vouched for.
    pub fn deaf(&self) {
        let mut inner = lock(&self.0);
        inner.listening = false;
        inner.epoch += 1;
        for kept in inner.tasks.values_mut().flatten() {
            kept.vouched = false;
        }
    }

    /// Another server took this server's rows over (its lease lapsed): it owns none of
    /// them, and nothing read before is vouched for.
    pub fn lost_all(&self) {
        let mut inner = lock(&self.0);
        inner.tasks.clear();
        inner.epoch += 1;
        inner.losses += 1;
    }

    /// How many times this server gave every row up so far.
    pub fn losses(&self) -> u64 {
        lock(&self.0).losses
    }

    /// Keeps in `ids` the tasks this server still owns, unless it gave every row up
    /// since it had given them up `losses` times: then what it keeps no longer says what
    /// it has in hand, and every id stays.
    pub fn retain_owned(&self, ids: &mut Vec<TaskId>, losses: u64) {
        let inner = lock(&self.0);
        if inner.losses == losses {
            ids.retain(|id| inner.tasks.contains_key(id));
        }
    }

    /// Another server changed the row of `id`; `still_mine` if it left it this server's.
    pub fn noticed(&self, id: TaskId, still_mine: bool) {
        let mut inner = lock(&self.0);
        inner.stamp(id);
        match still_mine {
            true => drop(inner.tasks.insert(id, None)),
            false => drop(inner.tasks.remove(&id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use boomerang_core::domain::TenantId;
    use boomerang_core::testing::sample_task;

    use super::Owned;

    fn listening() -> Owned {
        let owned = Owned::default();
        owned.listening();
        owned.proven_until(std::time::Instant::now() + std::time::Duration::from_secs(60));
        owned
    }

    #[test]
    fn a_read_answered_after_this_servers_own_removal_is_not_vouched_for() {
        let owned = listening();
        let task = sample_task(&TenantId::parse("t").unwrap(), None, chrono::Utc::now());
        // A lease is sent; a cancel by this server commits and is answered before it.
        let lease = owned.since();
        owned.remove(&task.id);
        owned.insert(task.clone(), lease);
        assert!(!owned.vouches(&task.id, task.version));
        // Read again afterwards: vouched for.
        owned.insert(task.clone(), owned.since());
        assert!(owned.vouches(&task.id, task.version));
    }

    #[test]
    fn a_late_answer_does_not_replace_a_later_version() {
        let owned = listening();
        let mut task = sample_task(&TenantId::parse("t").unwrap(), None, chrono::Utc::now());
        let old = owned.since();
        let first = task.clone();
        task.version += 1;
        owned.insert(task.clone(), owned.since());
        owned.insert(first.clone(), old);
        assert_eq!(owned.doc(&task.id).unwrap().version, task.version);
        assert!(owned.vouches(&task.id, task.version));
        assert!(!owned.vouches(&task.id, first.version));
    }

    #[test]
    fn ids_are_kept_while_owned_and_all_of_them_once_every_row_was_given_up() {
        let owned = listening();
        let tenant = TenantId::parse("t").unwrap();
        let kept = sample_task(&tenant, None, chrono::Utc::now());
        let done = sample_task(&tenant, None, chrono::Utc::now());
        let losses = owned.losses();
        owned.insert(kept.clone(), owned.since());
        let mut ids = vec![kept.id, done.id];
        owned.retain_owned(&mut ids, losses);
        assert_eq!(ids, vec![kept.id]);
        // The lease lapsed: what was kept says nothing of what is in hand any more.
        owned.lost_all();
        let mut ids = vec![kept.id, done.id];
        owned.retain_owned(&mut ids, losses);
        assert_eq!(ids, vec![kept.id, done.id]);
    }

    #[test]
    fn a_write_of_unknown_outcome_or_refused_leaves_nothing_vouched_for() {
        let owned = listening();
        let task = sample_task(&TenantId::parse("t").unwrap(), None, chrono::Utc::now());
        owned.insert(task.clone(), owned.since());
        owned.doubt(&task.id);
        assert!(owned.contains(&task.id));
        assert!(!owned.vouches(&task.id, task.version));
    }

    #[test]
    fn nothing_is_vouched_for_while_deaf_nor_after_from_before() {
        let owned = listening();
        let task = sample_task(&TenantId::parse("t").unwrap(), None, chrono::Utc::now());
        let before = owned.since();
        owned.insert(task.clone(), owned.since());
        owned.deaf();
        assert!(!owned.vouches(&task.id, task.version));
        owned.listening();
        owned.insert(task.clone(), before);
        assert!(!owned.vouches(&task.id, task.version));
    }
}
