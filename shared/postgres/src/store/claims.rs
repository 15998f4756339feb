//! What this server holds in memory about the rows it owns: the attempts it claimed and
//! has not finished ([`Claims`]), and the tasks whose pending work it owns ([`Owned`]),
//! with the last document it read or wrote of each, for the delivery's first read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use boomerang_core::domain::{Task, TaskId};
use boomerang_core::ports::StoreError;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every change under these locks is a single insert or remove: a panic elsewhere
    // cannot leave them half-made, so a poisoned lock is still good.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A claimed attempt: the task as claimed, and the version the table still holds.
#[derive(Clone)]
pub(crate) struct Claim {
    pub task: Task,
    pub stored_version: u64,
}

/// Attempts claimed and not yet finished. A claim needs no write: only this server loads
/// the row while it owns it; a crash forgets the claim, and the attempt runs again.
#[derive(Clone, Default)]
pub(crate) struct Claims(Arc<Mutex<HashMap<TaskId, Claim>>>);

impl Claims {
    /// The version a write of `id` must be conditional on, if the engine's `expected`
    /// version is still current: while the task is claimed, the version the table held at
    /// the claim (and `expected` must be the claim's); otherwise `expected` itself, which
    /// the conditional statement then checks.
    pub fn stored_version(&self, id: &TaskId, expected: u64) -> Result<u64, StoreError> {
        match lock(&self.0).get(id) {
            Some(claim) if claim.task.version == expected => Ok(claim.stored_version),
            Some(_) => Err(StoreError::Conflict),
            None => Ok(expected),
        }
    }

    /// Claims `claimed`, read at `expected`: refused if another claim of the task stands
    /// at another version.
    pub fn claim(&self, claimed: Task, expected: u64) -> Result<(), StoreError> {
        let mut claims = lock(&self.0);
        let stored = match claims.get(&claimed.id) {
            Some(claim) if claim.task.version == expected => claim.stored_version,
            Some(_) => return Err(StoreError::Conflict),
            None => expected,
        };
        claims.insert(
            claimed.id,
            Claim {
                task: claimed,
                stored_version: stored,
            },
        );
        Ok(())
    }

    pub fn end(&self, id: &TaskId) {
        lock(&self.0).remove(id);
    }

    pub fn get(&self, id: &TaskId) -> Option<Claim> {
        lock(&self.0).get(id).cloned()
    }

    /// The claimed tasks that `keep` selects.
    pub fn tasks(&self, keep: impl Fn(&Task) -> bool) -> Vec<Task> {
        lock(&self.0)
            .values()
            .map(|c| &c.task)
            .filter(|t| keep(t))
            .cloned()
            .collect()
    }

    /// The task as this server sees it: its claim's, if claimed.
    pub fn overlay(&self, task: Task) -> Task {
        match lock(&self.0).get(&task.id) {
            Some(claim) if claim.stored_version == task.version => claim.task.clone(),
            _ => task,
        }
    }
}

/// The tasks whose pending work this server owns (its id in their `owner` column), each
/// with the document last read or written, if not yet taken. Kept so that the timer holds
/// exactly the work this server owns, and so that a delivery's first read (which may lag)
/// costs no round trip.
#[derive(Clone, Default)]
pub(crate) struct Owned(Arc<Mutex<HashMap<TaskId, Option<Task>>>>);

/// Past this many documents kept, new ones are not: the delivery reads them.
const DOCS_KEPT: usize = 200_000;

impl Owned {
    pub fn insert(&self, task: Task) {
        let mut owned = lock(&self.0);
        let keep = owned.len() < DOCS_KEPT;
        owned.insert(task.id, keep.then_some(task));
    }

    pub fn insert_id(&self, id: TaskId) {
        lock(&self.0).entry(id).or_insert(None);
    }

    pub fn remove(&self, id: &TaskId) {
        lock(&self.0).remove(id);
    }

    pub fn contains(&self, id: &TaskId) -> bool {
        lock(&self.0).contains_key(id)
    }

    /// The kept document of `id`. It stays kept until this server writes the task again
    /// (or gives its work up): an attempt that waits in its destination's queue reads it
    /// twice, once on arrival and once when its turn comes. It may lag a write by another
    /// server; the claim, checked against the table, finds that out.
    pub fn doc(&self, id: &TaskId) -> Option<Task> {
        lock(&self.0).get(id).and_then(Clone::clone)
    }
}
