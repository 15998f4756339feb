//! The attempts this server claimed and has not finished.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use boomerang_core::domain::{Task, TaskId};
use boomerang_core::ports::StoreError;

use super::lock;

/// A claimed attempt: the task as claimed, and the version the table still holds.
#[derive(Clone)]
pub(crate) struct Claim {
    pub task: Task,
    pub stored_version: u64,
}

/// Attempts claimed and not yet finished. A claim needs no write: only this server loads
/// the row while it owns it; a crash forgets the claim, and the attempt runs again.
///
/// A claim is checked against the table outside the writer's transactions, so a write
/// of the same task by this server (a cancel, a replace) may be on its way while the
/// check reads: the check is refused if one is under way when it starts or begins while
/// it reads, and a write ends only the claim it was made against. Otherwise a cancel
/// committed under the check's read could be overwritten by the attempt's result.
#[derive(Clone, Default)]
pub(crate) struct Claims(Arc<Mutex<Inner>>);

#[derive(Default)]
struct Inner {
    claims: HashMap<TaskId, Claim>,
    /// Writes sent to the writer and not yet answered, by task.
    writing: HashMap<TaskId, u32>,
    /// Claim checks reading the table, by task, and whether a write began meanwhile.
    checking: HashMap<TaskId, (u32, bool)>,
}

/// How a write of a task ended, for [`Claims::end_write`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteEnd {
    /// Committed: the row is at the write's version.
    Written,
    /// The row was not at the version expected: it moved on.
    Refused,
    /// Not known to have happened (the database was unreachable); the engine retries.
    Unknown,
}

impl Claims {
    /// A write of `id` begins: the version it must be conditional on, if the engine's
    /// `expected` version is still current (while the task is claimed, the version the
    /// table held at the claim, and `expected` must be the claim's; otherwise `expected`
    /// itself, which the conditional statement then checks). Every `Ok` is followed by
    /// one [`Claims::end_write`].
    pub fn begin_write(&self, id: &TaskId, expected: u64) -> Result<u64, StoreError> {
        let mut inner = lock(&self.0);
        let stored = match inner.claims.get(id) {
            Some(claim) if claim.task.version == expected => claim.stored_version,
            Some(_) => return Err(StoreError::Conflict),
            None => expected,
        };
        *inner.writing.entry(*id).or_default() += 1;
        if let Some((_, written_meanwhile)) = inner.checking.get_mut(id) {
            *written_meanwhile = true;
        }
        Ok(stored)
    }

    /// A write of `id` made against version `expected` has ended: a claim at that
    /// version is over once the row moved on from it (written or found moved); a claim
    /// made since, at a later version, stays.
    pub fn end_write(&self, id: &TaskId, expected: u64, end: WriteEnd) {
        let mut inner = lock(&self.0);
        if let Some(n) = inner.writing.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                inner.writing.remove(id);
            }
        }
        let claim_over = end != WriteEnd::Unknown
            && inner
                .claims
                .get(id)
                .is_some_and(|c| c.task.version == expected);
        if claim_over {
            inner.claims.remove(id);
        }
    }

    /// A claim check of `id` is about to read the table: refused while a write of it is
    /// under way (its outcome is not known yet). Every `Ok` is followed by one
    /// [`Claims::end_check`].
    pub fn begin_check(&self, id: &TaskId) -> Result<(), StoreError> {
        let mut inner = lock(&self.0);
        if inner.writing.contains_key(id) {
            return Err(StoreError::Conflict);
        }
        inner.checking.entry(*id).or_default().0 += 1;
        Ok(())
    }

    /// A claim check begun and given up (it goes on as another).
    pub fn drop_check(&self, id: &TaskId) {
        Self::check_ended(&mut lock(&self.0), id);
    }

    /// Counts a check of `id` as ended; whether a write of it began meanwhile.
    fn check_ended(inner: &mut Inner, id: &TaskId) -> bool {
        let Some((n, written)) = inner.checking.get_mut(id) else {
            return false;
        };
        *n -= 1;
        let written = *written;
        if *n == 0 {
            inner.checking.remove(id);
        }
        written
    }

    /// A claim check has read the table: claims `claimed`, read at `expected`, if the
    /// row was `current` (at that version and this server's), no write of the task began
    /// while it read, and no other claim of the task stands at another version.
    pub fn end_check(&self, claimed: Task, expected: u64, current: bool) -> Result<(), StoreError> {
        let mut inner = lock(&self.0);
        let id = claimed.id;
        let written_meanwhile = Self::check_ended(&mut inner, &id);
        if !current || written_meanwhile {
            return Err(StoreError::Conflict);
        }
        Self::insert(&mut inner, claimed, expected)
    }

    /// Claims `claimed` again when it is claimed here at `expected` (a lease taken over
    /// on the server that held it), with no read: the table still holds the version of
    /// the first claim. Refused if claimed here at another version; `None` if not
    /// claimed here: the table is read.
    pub fn reclaim(&self, claimed: &Task, expected: u64) -> Option<Result<(), StoreError>> {
        let mut inner = lock(&self.0);
        let claim = inner.claims.get(&claimed.id)?;
        if claim.task.version != expected {
            return Some(Err(StoreError::Conflict));
        }
        if inner.writing.contains_key(&claimed.id) {
            return Some(Err(StoreError::Conflict));
        }
        Some(Self::insert(&mut inner, claimed.clone(), expected))
    }

    fn insert(inner: &mut Inner, claimed: Task, expected: u64) -> Result<(), StoreError> {
        let stored = match inner.claims.get(&claimed.id) {
            Some(claim) if claim.task.version == expected => claim.stored_version,
            Some(_) => return Err(StoreError::Conflict),
            None => expected,
        };
        inner.claims.insert(
            claimed.id,
            Claim {
                task: claimed,
                stored_version: stored,
            },
        );
        Ok(())
    }

    pub fn get(&self, id: &TaskId) -> Option<Claim> {
        lock(&self.0).claims.get(id).cloned()
    }

    /// The claimed tasks that `keep` selects.
    pub fn tasks(&self, keep: impl Fn(&Task) -> bool) -> Vec<Task> {
        lock(&self.0)
            .claims
            .values()
            .map(|c| &c.task)
            .filter(|t| keep(t))
            .cloned()
            .collect()
    }

    /// The task as this server sees it: its claim's, if claimed.
    pub fn overlay(&self, task: Task) -> Task {
        match lock(&self.0).claims.get(&task.id) {
            Some(claim) if claim.stored_version == task.version => claim.task.clone(),
            _ => task,
        }
    }
}

#[cfg(test)]
mod tests {
    use boomerang_core::domain::{Task, TenantId};
    use boomerang_core::ports::StoreError;
    use boomerang_core::testing::sample_task;

    use super::{Claims, WriteEnd};

    /// A task read at version 3, and the same task as a claim would make it.
    fn read_and_claimed() -> (Task, Task) {
        let mut read = sample_task(&TenantId::parse("t").unwrap(), None, chrono::Utc::now());
        read.version = 3;
        let mut claimed = read.clone();
        claimed.version = 4;
        (read, claimed)
    }

    #[test]
    fn a_write_begun_while_the_check_reads_refuses_the_claim() {
        let claims = Claims::default();
        let (read, claimed) = read_and_claimed();
        claims.begin_check(&read.id).unwrap();
        // A cancel of the version read, sent while the check reads the table.
        assert_eq!(claims.begin_write(&read.id, 3).unwrap(), 3);
        let refused = claims.end_check(claimed, 3, true);
        assert!(matches!(refused, Err(StoreError::Conflict)));
        claims.end_write(&read.id, 3, WriteEnd::Written);
        assert!(claims.get(&read.id).is_none());
    }

    #[test]
    fn no_check_starts_while_a_write_of_the_task_is_under_way() {
        let claims = Claims::default();
        let (read, claimed) = read_and_claimed();
        claims.begin_write(&read.id, 3).unwrap();
        assert!(matches!(
            claims.begin_check(&read.id),
            Err(StoreError::Conflict)
        ));
        claims.end_write(&read.id, 3, WriteEnd::Refused);
        claims.begin_check(&read.id).unwrap();
        claims.end_check(claimed, 3, true).unwrap();
        assert_eq!(claims.get(&read.id).unwrap().stored_version, 3);
    }

    #[test]
    fn while_claimed_only_the_claims_version_is_written() {
        let claims = Claims::default();
        let (read, claimed) = read_and_claimed();
        claims.begin_check(&read.id).unwrap();
        claims.end_check(claimed, 3, true).unwrap();
        // A cancel of the version read before the claim: refused, the claim stays.
        claims.begin_write(&read.id, 3).unwrap_err();
        claims.end_write(&read.id, 3, WriteEnd::Refused);
        assert!(claims.get(&read.id).is_some());
        // The claim's own result (made against version 4) is conditional on the table's 3.
        assert_eq!(claims.begin_write(&read.id, 4).unwrap(), 3);
        claims.end_write(&read.id, 4, WriteEnd::Written);
        assert!(claims.get(&read.id).is_none());
    }

    #[test]
    fn a_claim_whose_row_moved_on_ends_with_its_refused_write() {
        let claims = Claims::default();
        let (read, claimed) = read_and_claimed();
        claims.begin_check(&read.id).unwrap();
        claims.end_check(claimed, 3, true).unwrap();
        claims.begin_write(&read.id, 4).unwrap();
        claims.end_write(&read.id, 4, WriteEnd::Unknown);
        assert!(
            claims.get(&read.id).is_some(),
            "kept: the engine tries again"
        );
        claims.begin_write(&read.id, 4).unwrap();
        claims.end_write(&read.id, 4, WriteEnd::Refused);
        assert!(claims.get(&read.id).is_none());
    }
}
