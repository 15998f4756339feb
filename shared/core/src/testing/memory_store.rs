//! An in-memory task store for unit tests of the engine. Nothing here is durable, and it is
//! compiled only for tests (`cfg(test)` or the `testing` feature). Tests can make it
//! misbehave the ways real stores do (a refused write, a lagging cheap read) and watch its
//! writes, through its hooks.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::{
    AttemptRecord, Breaker, BulkJob, BulkJobId, BusinessKey, DefinitionName, Destination, FlowKey,
    OrderEntry, OrderKey, Schedule, ScheduleId, Status, Task, TaskId, TenantId,
};
use crate::ports::{
    Breakers, BulkJobs, CreateOutcome, Definition, Definitions, DueWork, FlowPauses, KeyedTasks,
    ListQuery, OrderKeyState, OrderKeys, Page, SchedulePage, ScheduleStore, StatusCounts,
    StoreError, StoredBreaker, SweepIndex, SweepMark, TaskStore,
};

#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    hooks: Hooks,
}

/// What a test can make the store do.
#[derive(Default)]
struct Hooks {
    /// Called at each write with its kind: `create`, `update`, `claim` or `finish`.
    on_write: Mutex<Option<WriteHook>>,
    /// Task creations fail while set.
    refuse_creates: AtomicBool,
    /// The next `peek` answers this (a cheap read that lags the latest write).
    next_peek: Mutex<Option<Option<Task>>>,
    /// Counts by status made so far.
    counts_made: AtomicUsize,
    /// While set, a count answers what it read only once it has a permit of this (a slow
    /// answer), and fails once this is closed.
    count_gate: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
}

type WriteHook = Box<dyn Fn(&'static str) + Send + Sync>;

#[derive(Default)]
struct Inner {
    tasks: BTreeMap<TaskId, Task>,
    idempotency: HashMap<(TenantId, String), TaskId>,
    attempts: BTreeMap<(TaskId, u32), AttemptRecord>,
    definitions: BTreeMap<(&'static str, TenantId, DefinitionName), serde_json::Value>,
    paused_flows: BTreeSet<(TenantId, FlowKey)>,
    schedules: BTreeMap<(TenantId, ScheduleId), Schedule>,
    keyed: HashMap<(TenantId, BusinessKey), TaskId>,
    breakers: BTreeMap<(TenantId, Destination), StoredBreaker>,
    jobs: BTreeMap<BulkJobId, BulkJob>,
    /// Each key's last place given, and its places held.
    order_keys: BTreeMap<(TenantId, OrderKey), (u64, BTreeMap<u64, OrderEntry>)>,
}

impl MemoryStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("memory store lock")
    }

    /// Calls `hook` at each write, with its kind (`create`, `update`, `claim` or `finish`), before
    /// the write happens.
    pub fn on_write(&self, hook: impl Fn(&'static str) + Send + Sync + 'static) {
        *self.hooks.on_write.lock().expect("hook lock") = Some(Box::new(hook));
    }

    /// Task creations fail as an unreachable store's would while `refuse` is set.
    pub fn refuse_creates(&self, refuse: bool) {
        self.hooks.refuse_creates.store(refuse, Ordering::SeqCst);
    }

    /// The next `peek` answers `answer`, as a cheap read that lags the latest write would.
    pub fn lag_next_peek(&self, answer: Option<Task>) {
        *self.hooks.next_peek.lock().expect("hook lock") = Some(answer);
    }

    /// How many tasks are stored.
    pub fn task_count(&self) -> usize {
        self.lock().tasks.len()
    }

    /// How many counts by status were asked for so far.
    pub fn counts_made(&self) -> usize {
        self.hooks.counts_made.load(Ordering::SeqCst)
    }

    /// Each count by status answers what it read only once it has a permit of `gate`, and
    /// fails if `gate` is closed (none: counts answer at once).
    pub fn gate_counts(&self, gate: Option<Arc<tokio::sync::Semaphore>>) {
        *self.hooks.count_gate.lock().expect("hook lock") = gate;
    }

    /// Replaces the task if its stored version is `expected_version`.
    fn write(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        let mut inner = self.lock();
        match inner.tasks.get_mut(&task.id) {
            Some(stored) if stored.version == expected_version => {
                *stored = task.clone();
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    fn wrote(&self, kind: &'static str) {
        if let Some(hook) = &*self.hooks.on_write.lock().expect("hook lock") {
            hook(kind);
        }
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        if self.hooks.refuse_creates.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("refused by the test".into()));
        }
        self.wrote("create");
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

    async fn get(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        Ok(self
            .lock()
            .tasks
            .get(id)
            .filter(|t| &t.tenant == tenant)
            .cloned())
    }

    async fn peek(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        let lagging = self.hooks.next_peek.lock().expect("hook lock").take();
        match lagging {
            Some(answer) => Ok(answer),
            None => self.get(tenant, id).await,
        }
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.wrote("update");
        self.write(task, expected_version)
    }

    async fn claim(&self, claimed: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.wrote("claim");
        self.write(claimed, expected_version)
    }

    async fn finish_attempt(
        &self,
        record: &AttemptRecord,
        next: &Task,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        self.wrote("finish");
        self.put_attempt(&next.tenant, record).await?;
        self.write(next, expected_version)
    }

    async fn put_attempt(
        &self,
        _tenant: &TenantId,
        record: &AttemptRecord,
    ) -> Result<(), StoreError> {
        self.lock()
            .attempts
            .insert((record.task_id, record.number), record.clone());
        Ok(())
    }

    async fn attempts(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Vec<AttemptRecord>, StoreError> {
        let inner = self.lock();
        if inner.tasks.get(id).is_none_or(|t| &t.tenant != tenant) {
            return Ok(Vec::new());
        }
        Ok(inner
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
            .filter(|t| query.key.is_none() || t.spec.key == query.key)
            .filter(|t| query.cursor.is_none_or(|c| t.id < c))
            .take(query.limit as usize + 1)
            .cloned()
            .collect();
        Ok(Page::from_overfetch(tasks, query.limit))
    }
}

#[async_trait]
impl SweepIndex for MemoryStore {
    async fn due(&self, cutoff: DateTime<Utc>, limit: usize) -> Result<DueWork, StoreError> {
        let work = self
            .lock()
            .tasks
            .values()
            .filter_map(Task::pending_work)
            .filter(|w| w.due_at <= cutoff)
            .take(limit)
            .collect();
        Ok(DueWork { work, mark: None })
    }

    /// The index is read whole at every sweep: there is no checkpoint to move.
    async fn swept(&self, _mark: &SweepMark) -> Result<(), StoreError> {
        Ok(())
    }
}

#[async_trait]
impl FlowPauses for MemoryStore {
    async fn set_flow_paused(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        paused: bool,
    ) -> Result<(), StoreError> {
        let flow = (tenant.clone(), key.clone());
        let mut inner = self.lock();
        match paused {
            true => inner.paused_flows.insert(flow),
            false => inner.paused_flows.remove(&flow),
        };
        Ok(())
    }

    async fn flow_paused(&self, tenant: &TenantId, key: &FlowKey) -> Result<bool, StoreError> {
        let flow = (tenant.clone(), key.clone());
        Ok(self.lock().paused_flows.contains(&flow))
    }

    async fn paused_flows(&self, tenant: &TenantId) -> Result<Vec<FlowKey>, StoreError> {
        let inner = self.lock();
        let paused = inner.paused_flows.iter().filter(|(t, _)| t == tenant);
        Ok(paused.map(|(_, key)| key.clone()).collect())
    }
}

/// Every kind of definition, kept as its JSON (as the real stores keep it).
#[async_trait]
impl<D: Definition> Definitions<D> for MemoryStore {
    async fn put_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
        doc: &D,
    ) -> Result<(), StoreError> {
        let doc = serde_json::to_value(doc).map_err(|e| StoreError::Corrupt(e.into()))?;
        let key = (D::KIND.as_str(), tenant.clone(), name.clone());
        self.lock().definitions.insert(key, doc);
        Ok(())
    }

    async fn definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<Option<D>, StoreError> {
        let key = (D::KIND.as_str(), tenant.clone(), name.clone());
        let doc = self.lock().definitions.get(&key).cloned();
        doc.map(from_doc).transpose()
    }

    async fn delete_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<bool, StoreError> {
        let key = (D::KIND.as_str(), tenant.clone(), name.clone());
        Ok(self.lock().definitions.remove(&key).is_some())
    }

    async fn definitions(&self, tenant: &TenantId) -> Result<Vec<(DefinitionName, D)>, StoreError> {
        let docs: Vec<_> = (self.lock().definitions.iter())
            .filter(|((kind, t, _), _)| *kind == D::KIND.as_str() && t == tenant)
            .map(|((_, _, name), doc)| (name.clone(), doc.clone()))
            .collect();
        docs.into_iter()
            .map(|(name, doc)| Ok((name, from_doc(doc)?)))
            .collect()
    }
}

#[async_trait]
impl Breakers for MemoryStore {
    async fn breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
    ) -> Result<Option<StoredBreaker>, StoreError> {
        let key = (tenant.clone(), destination.clone());
        Ok(self.lock().breakers.get(&key).cloned())
    }

    async fn save_breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        breaker: &Breaker,
        version: Option<u64>,
    ) -> Result<bool, StoreError> {
        let key = (tenant.clone(), destination.clone());
        let mut inner = self.lock();
        if inner.breakers.get(&key).map(|b| b.version) != version {
            return Ok(false);
        }
        let version = version.map_or(1, |v| v + 1);
        let breaker = breaker.clone();
        inner
            .breakers
            .insert(key, StoredBreaker { breaker, version });
        Ok(true)
    }

    async fn open_breakers(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(Destination, Breaker)>, StoreError> {
        Ok((self.lock().breakers.iter())
            .filter(|((t, _), b)| t == tenant && b.breaker.is_open())
            .map(|((_, d), b)| (d.clone(), b.breaker.clone()))
            .collect())
    }
}

#[async_trait]
impl BulkJobs for MemoryStore {
    async fn create_job(&self, job: &BulkJob) -> Result<(), StoreError> {
        self.lock().jobs.insert(job.id, job.clone());
        Ok(())
    }

    async fn job(&self, tenant: &TenantId, id: &BulkJobId) -> Result<Option<BulkJob>, StoreError> {
        Ok(self
            .lock()
            .jobs
            .get(id)
            .filter(|j| &j.tenant == tenant)
            .cloned())
    }

    async fn save_job(&self, job: &BulkJob, expected_version: u64) -> Result<(), StoreError> {
        let mut inner = self.lock();
        match inner.jobs.get(&job.id) {
            Some(stored) if stored.version == expected_version => {
                inner.jobs.insert(job.id, job.clone());
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn jobs(&self, tenant: &TenantId) -> Result<Vec<BulkJob>, StoreError> {
        Ok((self.lock().jobs.values().rev())
            .filter(|j| &j.tenant == tenant)
            .take(crate::ports::JOBS_LISTED)
            .cloned()
            .collect())
    }

    async fn running_jobs(&self) -> Result<Vec<(TenantId, BulkJobId)>, StoreError> {
        Ok((self.lock().jobs.values())
            .filter(|j| j.is_running())
            .map(|j| (j.tenant.clone(), j.id))
            .collect())
    }
}

fn from_doc<D: Definition>(doc: serde_json::Value) -> Result<D, StoreError> {
    serde_json::from_value(doc).map_err(|e| StoreError::Corrupt(e.into()))
}

#[async_trait]
impl StatusCounts for MemoryStore {
    async fn count_by_status(
        &self,
        tenant: Option<&TenantId>,
    ) -> Result<Vec<(Status, u64)>, StoreError> {
        self.hooks.counts_made.fetch_add(1, Ordering::SeqCst);
        let counts = self.read_counts(tenant);
        let gate = self.hooks.count_gate.lock().expect("hook lock").clone();
        if let Some(gate) = gate {
            let permit = gate.acquire().await;
            permit
                .map_err(|_| StoreError::Unavailable("the count was refused".into()))?
                .forget();
        }
        Ok(counts)
    }
}

impl MemoryStore {
    /// Tasks by state, of one tenant or of all, as stored now.
    fn read_counts(&self, tenant: Option<&TenantId>) -> Vec<(Status, u64)> {
        let inner = self.lock();
        Status::ALL
            .iter()
            .map(|&status| {
                let n = inner
                    .tasks
                    .values()
                    .filter(|t| t.status == status && tenant.is_none_or(|x| &t.tenant == x))
                    .count();
                (status, n as u64)
            })
            .collect()
    }
}

#[async_trait]
impl ScheduleStore for MemoryStore {
    async fn create_schedule(&self, schedule: &Schedule) -> Result<(), StoreError> {
        let key = (schedule.tenant.clone(), schedule.id);
        self.lock().schedules.insert(key, schedule.clone());
        Ok(())
    }

    async fn schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<Option<Schedule>, StoreError> {
        Ok(self.lock().schedules.get(&(tenant.clone(), *id)).cloned())
    }

    async fn update_schedule(
        &self,
        schedule: &Schedule,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        match inner
            .schedules
            .get_mut(&(schedule.tenant.clone(), schedule.id))
        {
            Some(stored) if stored.version == expected_version => {
                *stored = schedule.clone();
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn delete_schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<bool, StoreError> {
        Ok(self
            .lock()
            .schedules
            .remove(&(tenant.clone(), *id))
            .is_some())
    }

    async fn schedules(
        &self,
        tenant: &TenantId,
        cursor: Option<ScheduleId>,
        limit: u32,
    ) -> Result<SchedulePage, StoreError> {
        let inner = self.lock();
        let mut mine: Vec<Schedule> = inner
            .schedules
            .values()
            .filter(|s| &s.tenant == tenant && cursor.is_none_or(|c| s.id < c))
            .cloned()
            .collect();
        mine.sort_by_key(|s| std::cmp::Reverse(s.id));
        Ok(SchedulePage::from_overfetch(mine, limit))
    }
}

#[async_trait]
impl KeyedTasks for MemoryStore {
    async fn keyed(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
    ) -> Result<Option<Task>, StoreError> {
        let inner = self.lock();
        let id = inner.keyed.get(&(tenant.clone(), key.clone()));
        Ok(id.and_then(|id| inner.tasks.get(id)).cloned())
    }

    async fn create_keyed(&self, task: &Task, previous: Option<TaskId>) -> Result<(), StoreError> {
        let Some(key) = task.spec.key.clone() else {
            return Err(StoreError::Corrupt("a keyed task without a key".into()));
        };
        self.wrote("create");
        let mut inner = self.lock();
        let head = (task.tenant.clone(), key);
        if inner.keyed.get(&head).copied() != previous {
            return Err(StoreError::Conflict);
        }
        inner.keyed.insert(head, task.id);
        inner.tasks.insert(task.id, task.clone());
        Ok(())
    }

    async fn replace_keyed(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.wrote("update");
        self.write(task, expected_version)
    }
}

#[async_trait]
impl OrderKeys for MemoryStore {
    async fn take_place(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
        task: TaskId,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let (last, places) = inner
            .order_keys
            .entry((tenant.clone(), key.clone()))
            .or_default();
        *last += 1;
        let seq = *last;
        places.insert(seq, OrderEntry { seq, task, at: now });
        Ok(seq)
    }

    async fn head(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
    ) -> Result<Option<OrderEntry>, StoreError> {
        let inner = self.lock();
        let places = inner.order_keys.get(&(tenant.clone(), key.clone()));
        Ok(places.and_then(|(_, places)| places.values().next().cloned()))
    }

    async fn line(&self, tenant: &TenantId, key: &OrderKey) -> Result<OrderKeyState, StoreError> {
        let inner = self.lock();
        let places = inner.order_keys.get(&(tenant.clone(), key.clone()));
        Ok(OrderKeyState {
            key: key.clone(),
            head: places.and_then(|(_, p)| p.values().next().cloned()),
            backlog: places.map_or(0, |(_, p)| p.len() as u64),
        })
    }

    async fn leave(&self, tenant: &TenantId, key: &OrderKey, seq: u64) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some((_, places)) = inner.order_keys.get_mut(&(tenant.clone(), key.clone())) {
            places.remove(&seq);
        }
        Ok(())
    }

    async fn order_keys(
        &self,
        tenant: &TenantId,
        after: Option<&OrderKey>,
        limit: usize,
    ) -> Result<Vec<OrderKeyState>, StoreError> {
        let inner = self.lock();
        Ok((inner.order_keys.iter())
            .filter(|((t, key), _)| t == tenant && after.is_none_or(|a| key > a))
            .take(limit.min(crate::ports::ORDER_KEYS_LISTED))
            .map(|((_, key), (_, places))| OrderKeyState {
                key: key.clone(),
                head: places.values().next().cloned(),
                backlog: places.len() as u64,
            })
            .collect())
    }
}
