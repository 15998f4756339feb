//! In-memory adapters for unit tests of the engine. Nothing here is durable.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::{AttemptRecord, DeadLetter, Status, Task, TaskId, TenantId};
use crate::ports::{
    CreateOutcome, DeadLetterError, DeadLetters, DueReason, DueTask, ListQuery, Page, StoreError,
    TaskStore, Timer, TimerError,
};

#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    tasks: BTreeMap<TaskId, Task>,
    idempotency: HashMap<(TenantId, String), TaskId>,
    attempts: BTreeMap<(TaskId, u32), AttemptRecord>,
}

impl MemoryStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("memory store lock")
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        let mut inner = self.lock();
        if let Some(key) = &task.idempotency_key {
            let k = (task.tenant.clone(), key.clone());
            if let Some(existing) = inner.idempotency.get(&k) {
                return Ok(CreateOutcome::Existing(Box::new(
                    inner.tasks[existing].clone(),
                )));
            }
            inner.idempotency.insert(k, task.id);
        }
        inner.tasks.insert(task.id, task.clone());
        Ok(CreateOutcome::Created)
    }

    async fn get(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        Ok(self.lock().tasks.get(id).cloned())
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        let mut inner = self.lock();
        match inner.tasks.get_mut(&task.id) {
            Some(stored) if stored.version == expected_version => {
                *stored = task.clone();
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn put_attempt(&self, record: &AttemptRecord) -> Result<(), StoreError> {
        self.lock()
            .attempts
            .insert((record.task_id, record.number), record.clone());
        Ok(())
    }

    async fn attempts(&self, id: &TaskId) -> Result<Vec<AttemptRecord>, StoreError> {
        Ok(self
            .lock()
            .attempts
            .range((*id, 0)..=(*id, u32::MAX))
            .map(|(_, r)| r.clone())
            .collect())
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError> {
        let inner = self.lock();
        let tasks: Vec<Task> = inner
            .tasks
            .values()
            .rev()
            .filter(|t| &t.tenant == tenant)
            .filter(|t| query.status.is_none_or(|s| t.status == s))
            .filter(|t| query.cursor.is_none_or(|c| t.id < c))
            .take(query.limit as usize + 1)
            .cloned()
            .collect();
        Ok(Page::from_overfetch(tasks, query.limit))
    }

    async fn due(
        &self,
        fire_before: DateTime<Utc>,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<DueTask>, StoreError> {
        Ok(self
            .lock()
            .tasks
            .values()
            .filter_map(|t| due_reason(t, fire_before, now))
            .take(limit)
            .collect())
    }
}

fn due_reason(t: &Task, fire_before: DateTime<Utc>, now: DateTime<Utc>) -> Option<DueTask> {
    let (reason, at) = match t.status {
        Status::Scheduled => (DueReason::Scheduled, t.next_fire_at?),
        Status::Delivering => (DueReason::LeaseExpired, t.lease_until?),
        Status::Failed if t.dead_letter_pending => (DueReason::DeadLetterPending, t.updated_at),
        _ => return None,
    };
    let cutoff = if reason == DueReason::Scheduled {
        fire_before
    } else {
        now
    };
    (at <= cutoff).then(|| DueTask {
        id: t.id,
        attempt: t.attempt,
        fire_at: t.next_fire_at.unwrap_or(at),
        reason,
    })
}

/// Keeps dead letters in a list; can be told to fail the next sends.
#[derive(Default)]
pub struct MemoryDeadLetters {
    letters: Mutex<Vec<DeadLetter>>,
    failures_left: AtomicU32,
}

impl MemoryDeadLetters {
    pub fn fail_next(&self, n: u32) {
        self.failures_left.store(n, Ordering::SeqCst);
    }

    pub fn letters(&self) -> Vec<DeadLetter> {
        self.letters.lock().expect("dead letters lock").clone()
    }
}

#[async_trait]
impl DeadLetters for MemoryDeadLetters {
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError> {
        let left = self.failures_left.load(Ordering::SeqCst);
        if left > 0 {
            self.failures_left.store(left - 1, Ordering::SeqCst);
            return Err(DeadLetterError("injected failure".into()));
        }
        self.letters
            .lock()
            .expect("dead letters lock")
            .push(letter.clone());
        Ok(())
    }
}

/// Records what was armed instead of firing; tests fire by calling `Engine::deliver`.
#[derive(Default)]
pub struct RecordingTimer {
    armed: Mutex<Vec<(TaskId, u32, DateTime<Utc>)>>,
    failures_left: AtomicU32,
}

impl RecordingTimer {
    pub fn armed(&self) -> Vec<(TaskId, u32, DateTime<Utc>)> {
        self.armed.lock().expect("timer lock").clone()
    }

    pub fn fail_next(&self, n: u32) {
        self.failures_left.store(n, Ordering::SeqCst);
    }

    pub fn clear(&self) {
        self.armed.lock().expect("timer lock").clear();
    }
}

#[async_trait]
impl Timer for RecordingTimer {
    async fn arm(&self, id: &TaskId, attempt: u32, at: DateTime<Utc>) -> Result<(), TimerError> {
        let left = self.failures_left.load(Ordering::SeqCst);
        if left > 0 {
            self.failures_left.store(left - 1, Ordering::SeqCst);
            return Err(TimerError("injected failure".into()));
        }
        self.armed
            .lock()
            .expect("timer lock")
            .push((*id, attempt, at));
        Ok(())
    }
}
