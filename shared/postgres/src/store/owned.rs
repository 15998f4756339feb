//! The tasks whose pending work this server owns (its id in their `owner` column), each
//! with the document it last read or wrote, if kept. Kept so that the timer holds exactly
//! the work this server owns, and so that a delivery's first read costs no round trip.
//!
//! A kept document is *vouched for* when no other server can have changed the row since
//! it was read or written without this server hearing of it: the owner notices
//! ([`super::owner_notices`]) were being listened to from before the statement that read
//! or wrote it was sent, and none about the task has come since. An attempt of a task
//! whose document is vouched for at the version claimed is claimed without reading the
//! row again; any other claim reads it ([`super::claim_checks`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use boomerang_core::domain::{Task, TaskId};

use super::claims::lock;

/// Past this many documents kept, new ones are not: the delivery reads them.
const DOCS_KEPT: usize = 200_000;
/// Past this many tasks noticed, notices older than [`NOTICE_KEPT`] are forgotten.
const NOTICES_KEPT: usize = 10_000;
/// Longer than any statement runs (its timeout) plus a wait for a connection: a notice
/// this old cannot be about a change that raced a statement still under way.
const NOTICE_KEPT: Duration = Duration::from_secs(60);

#[derive(Clone, Default)]
pub(crate) struct Owned(Arc<Mutex<Inner>>);

#[derive(Default)]
struct Inner {
    tasks: HashMap<TaskId, Option<Kept>>,
    /// Whether the notices are listened to, and how many times listening began.
    listening: bool,
    epoch: u64,
    /// Notices received so far, and the last one's number for each task noticed.
    notices: u64,
    noticed: HashMap<TaskId, (u64, Instant)>,
}

struct Kept {
    task: Task,
    vouched: bool,
}

/// Taken before a statement that reads or writes a task is sent, and given with its
/// document to [`Owned::insert`]: what the notices had said by then.
#[derive(Clone, Copy)]
pub(crate) struct Since {
    epoch: Option<u64>,
    notices: u64,
}

impl Owned {
    pub fn since(&self) -> Since {
        let inner = lock(&self.0);
        Since {
            epoch: inner.listening.then_some(inner.epoch),
            notices: inner.notices,
        }
    }

    /// This server owns `task`, as read or written by a statement sent after `since`.
    pub fn insert(&self, task: Task, since: Since) {
        let mut inner = lock(&self.0);
        let vouched = inner.listening
            && since.epoch == Some(inner.epoch)
            && (inner.noticed.get(&task.id)).is_none_or(|(n, _)| *n <= since.notices);
        let keep = inner.tasks.len() < DOCS_KEPT;
        inner
            .tasks
            .insert(task.id, keep.then_some(Kept { task, vouched }));
    }

    /// This server owns the task, whose document it did not keep.
    pub fn insert_id(&self, id: TaskId) {
        lock(&self.0).tasks.entry(id).or_insert(None);
    }

    pub fn remove(&self, id: &TaskId) {
        lock(&self.0).tasks.remove(id);
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
            && (inner.tasks.get(id))
                .and_then(Option::as_ref)
                .is_some_and(|k| k.vouched && k.task.version == version)
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

    /// Another server changed the row of `id`; `still_mine` if it left it this server's.
    pub fn noticed(&self, id: TaskId, still_mine: bool) {
        let mut inner = lock(&self.0);
        inner.notices += 1;
        let n = inner.notices;
        if inner.noticed.len() >= NOTICES_KEPT {
            inner
                .noticed
                .retain(|_, (_, at)| at.elapsed() < NOTICE_KEPT);
        }
        inner.noticed.insert(id, (n, Instant::now()));
        match still_mine {
            true => drop(inner.tasks.insert(id, None)),
            false => drop(inner.tasks.remove(&id)),
        }
    }
}
