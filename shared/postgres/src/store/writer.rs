//! The writer: registrations and the results of attempts, committed together. Whatever
//! is waiting when a transaction starts goes into it, as one multi-row statement per kind
//! of write, with one commit (one flush of the log) for all; each caller is answered only
//! after that commit, so an acknowledgement still means "durable". A few attempts'
//! outcomes alone wait a moment for more (see [`linger`]): under load, fewer and fuller
//! transactions leave the database more of the machine.
//!
//! Two transactions run at once (one flushing while the next one fills), each on its own
//! connection; rows are written in id order, so two of them never wait on each other in a
//! cycle.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot, Mutex};

use boomerang_core::domain::{Task, TaskId};
use boomerang_core::error_chain::error_chain;
use boomerang_core::metrics::{MetricEvent, Metrics};
use boomerang_core::ports::{CreateOutcome, StoreError};

use super::claims::{Claims, WriteEnd};
use super::codec::decode;
use super::owned::{Owned, Since};
use super::rows::TaskRow;
use super::write_health::WriteHealth;

/// Most writes one transaction holds; more wait for the next.
const MAX_BATCH: usize = 2000;
/// Transactions in flight at once.
const WRITERS: usize = 2;
/// How long a small batch of outcomes waits for more, and how many it waits for.
const LINGER: Duration = Duration::from_millis(1);
const LINGER_UNTIL: usize = 32;

/// One write waiting for a transaction.
pub(crate) enum Write {
    /// A new task; with an idempotency key, an existing task of the tenant and key wins.
    Create {
        task: Box<Task>,
        row: TaskRow,
        reply: oneshot::Sender<Result<CreateOutcome, StoreError>>,
    },
    /// The task replaced if its stored version is `expected`, with an attempt record
    /// written beside it (only if the task is).
    Update {
        task: Box<Task>,
        row: TaskRow,
        expected: u64,
        attempt: Option<(i32, String)>,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
}

impl Write {
    /// An attempt's outcome: its task and the attempt's record.
    fn is_outcome(&self) -> bool {
        matches!(
            self,
            Write::Update {
                attempt: Some(_),
                ..
            }
        )
    }

    fn id(&self) -> TaskId {
        match self {
            Write::Create { task, .. } | Write::Update { task, .. } => task.id,
        }
    }
}

#[derive(Clone)]
pub(crate) struct WriterHandle {
    tx: mpsc::UnboundedSender<Write>,
}

/// What every transaction needs.
struct Shared {
    pool: Pool,
    claims: Claims,
    owned: Owned,
    health: WriteHealth,
    server: String,
    horizon: Duration,
    metrics: Arc<dyn Metrics>,
    rx: Mutex<mpsc::UnboundedReceiver<Write>>,
}

impl WriterHandle {
    pub fn spawn(
        pool: Pool,
        claims: Claims,
        owned: Owned,
        health: WriteHealth,
        server: String,
        horizon: Duration,
        metrics: Arc<dyn Metrics>,
    ) -> WriterHandle {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            pool,
            claims,
            owned,
            health,
            server,
            horizon,
            metrics,
            rx: Mutex::new(rx),
        });
        for _ in 0..WRITERS {
            tokio::spawn(run(shared.clone()));
        }
        WriterHandle { tx }
    }

    pub async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        let row = TaskRow::of(task)?;
        let (reply, answer) = oneshot::channel();
        self.send(Write::Create {
            task: Box::new(task.clone()),
            row,
            reply,
        })?;
        answer.await.map_err(|_| stopped())?
    }

    pub async fn update(
        &self,
        task: &Task,
        expected: u64,
        attempt: Option<(i32, String)>,
    ) -> Result<(), StoreError> {
        let row = TaskRow::of(task)?;
        let (reply, answer) = oneshot::channel();
        self.send(Write::Update {
            task: Box::new(task.clone()),
            row,
            expected,
            attempt,
            reply,
        })?;
        answer.await.map_err(|_| stopped())?
    }

    fn send(&self, write: Write) -> Result<(), StoreError> {
        self.tx.send(write).map_err(|_| stopped())
    }
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the store's writer has stopped".into())
}

async fn run(shared: Arc<Shared>) {
    let mut carried: Vec<Write> = Vec::new();
    loop {
        let mut batch = std::mem::take(&mut carried);
        // With writes carried over, no waiting for the queue: the other writer may be
        // waiting on it for writes that only come after these are answered.
        let rx = match batch.is_empty() {
            true => Some(shared.rx.lock().await),
            false => shared.rx.try_lock().ok(),
        };
        if let Some(mut rx) = rx {
            if batch.is_empty() && rx.recv_many(&mut batch, MAX_BATCH).await == 0 {
                return;
            }
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(write) => batch.push(write),
                    Err(_) => break,
                }
            }
            linger(&mut rx, &mut batch).await;
        }
        // One write per task in a transaction: a second one waits for the next.
        let mut ids = HashSet::new();
        let (now, later): (Vec<Write>, Vec<Write>) =
            batch.into_iter().partition(|w| ids.insert(w.id()));
        carried = later;
        commit(&shared, now).await;
    }
}

/// A batch of attempts' outcomes only, and few of them, waits up to [`LINGER`] for more
/// (up to [`LINGER_UNTIL`]): nobody waits on these writes (the calls' slots are free
/// already), and much of a transaction's cost on the database is its own, not its rows'.
/// A registration or any other change never waits: its caller does.
async fn linger(rx: &mut mpsc::UnboundedReceiver<Write>, batch: &mut Vec<Write>) {
    let deadline = tokio::time::Instant::now() + LINGER;
    while batch.len() < LINGER_UNTIL && batch.iter().all(Write::is_outcome) {
        let more = LINGER_UNTIL - batch.len();
        match tokio::time::timeout_at(deadline, rx.recv_many(batch, more)).await {
            Ok(n) if n > 0 => continue,
            _ => return,
        }
    }
}

/// The rows of one transaction, split by kind, each in id order.
struct Batch {
    creates: Vec<Create>,
    updates: Vec<Update>,
    /// The owner notices heard before the transaction was sent.
    since: Since,
}

/// A new task, the owner its row gets, and whom to answer.
type Create = (
    Box<Task>,
    TaskRow,
    Option<String>,
    oneshot::Sender<Result<CreateOutcome, StoreError>>,
);

struct Update {
    task: Box<Task>,
    row: TaskRow,
    owner: Option<String>,
    /// The version the engine read, and the one the table must hold (older while claimed).
    expected: u64,
    stored: u64,
    attempt: Option<(i32, String)>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

impl Batch {
    /// Sorts `writes`, deciding each row's owner; an update whose claim moved on is
    /// answered at once.
    fn of(shared: &Shared, writes: Vec<Write>) -> Batch {
        let near_ms = Utc::now().timestamp_millis() + shared.horizon.as_millis() as i64;
        let mut batch = Batch {
            creates: Vec::new(),
            updates: Vec::new(),
            since: shared.owned.since(),
        };
        for write in writes {
            match write {
                Write::Create { task, row, reply } => {
                    let owner = row.owner(&shared.server, near_ms);
                    batch.creates.push((task, row, owner, reply));
                }
                Write::Update {
                    task,
                    row,
                    expected,
                    attempt,
                    reply,
                } => match shared.claims.begin_write(&task.id, expected) {
                    Ok(stored) => batch.updates.push(Update {
                        owner: row.owner(&shared.server, near_ms),
                        task,
                        row,
                        expected,
                        stored,
                        attempt,
                        reply,
                    }),
                    Err(e) => drop(reply.send(Err(e))),
                },
            }
        }
        batch.creates.sort_by(|a, b| a.1.id.cmp(&b.1.id));
        batch.updates.sort_by(|a, b| a.row.id.cmp(&b.row.id));
        batch
    }

    fn len(&self) -> usize {
        self.creates.len() + self.updates.len()
    }

    fn fail_all(self, shared: &Shared, e: impl Fn() -> StoreError) {
        for (_, _, _, reply) in self.creates {
            let _ = reply.send(Err(e()));
        }
        for u in self.updates {
            // It may have been committed: what this server kept of the task is read again.
            shared.owned.doubt(&u.task.id);
            shared
                .claims
                .end_write(&u.task.id, u.expected, WriteEnd::Unknown);
            let _ = u.reply.send(Err(e()));
        }
    }
}

/// What a committed transaction did.
struct Outcome {
    /// The ids of the creates inserted (the others' idempotency key or id was taken).
    inserted: HashSet<String>,
    /// The ids of the updates that matched their version.
    updated: HashSet<String>,
}

const INSERT_TASKS: &str =
    "INSERT INTO tasks (id, tenant, status, version, attempt, idempotency_key,
                 due_kind, due_ms, business_key, finished_ms, owner, doc)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[],
                 $5::int[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::bigint[],
                 $11::text[], $12::text[])
             ON CONFLICT DO NOTHING
             RETURNING id";

const UPDATE_TASKS: &str = "WITH updated AS (
                 UPDATE tasks t SET status = v.status, version = v.version,
                     attempt = v.attempt, due_kind = v.due_kind, due_ms = v.due_ms,
                     finished_ms = v.finished_ms, owner = v.owner,
                     business_key = v.business_key, doc = v.doc
                 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::int[],
                     $6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[],
                     $11::text[])
                   AS v(id, expected, status, version, attempt, due_kind, due_ms,
                        finished_ms, owner, business_key, doc)
                 WHERE t.id = v.id AND t.version = v.expected
                 RETURNING t.id
             ), recorded AS (
                 INSERT INTO attempts (task_id, number, doc)
                 SELECT a.task_id, a.number, a.doc
                 FROM unnest($12::text[], $13::int[], $14::text[]) AS a(task_id, number, doc)
                 JOIN updated ON updated.id = a.task_id
                 ON CONFLICT (task_id, number) DO UPDATE SET doc = excluded.doc
             )
             SELECT id FROM updated";

async fn commit(shared: &Shared, writes: Vec<Write>) {
    let started = Instant::now();
    let batch = Batch::of(shared, writes);
    if batch.len() == 0 {
        return;
    }
    let client = match shared.pool.get().await {
        Ok(client) => client,
        Err(e) => {
            let message = e.to_string();
            shared.health.failed(message.clone());
            return batch.fail_all(shared, || pool_unavailable_msg(&message));
        }
    };
    let result = async {
        // The statements are prepared first (once per connection), so that each of the
        // next is sent at its first poll, in order.
        if !batch.creates.is_empty() {
            client.prepare_cached(INSERT_TASKS).await?;
        }
        if !batch.updates.is_empty() {
            client.prepare_cached(UPDATE_TASKS).await?;
        }
        // The whole transaction sent at once (pipelined on the one connection): one round
        // trip, not one per statement. The writes touch different rows (one write per task
        // in a transaction). Should one fail, the transaction is aborted and its COMMIT
        // rolls it back; that write's error fails the batch.
        let (_, inserted, updated, _) = tokio::try_join!(
            client.batch_execute(begin(&batch, shared.owned.holds_backlog())),
            insert_tasks(&client, &batch),
            update_tasks(&client, &batch),
            client.batch_execute("COMMIT"),
        )?;
        Ok::<_, tokio_postgres::Error>(Outcome { inserted, updated })
    }
    .await;
    match result {
        Ok(outcome) => {
            shared.health.succeeded();
            shared.metrics.record(MetricEvent::StoreCommit {
                writes: batch.len(),
                micros: started.elapsed().as_micros() as u64,
            });
            let Batch {
                creates,
                updates,
                since,
            } = batch;
            answer_updates(shared, updates, &outcome.updated, since);
            // Read after the commit, and apart from it: a failed read fails only the
            // creates that lost to an existing task, not the writes committed.
            let taken = taken_keys(&client, &creates, &outcome.inserted).await;
            answer_creates(shared, creates, &outcome.inserted, taken, since);
        }
        Err(e) => {
            let message = error_chain(&e);
            tracing::warn!(error = %message, writes = batch.len(), "a store transaction failed");
            shared.health.failed(message.clone());
            // Whatever part was sent, none of it stays open: the connection is closed, not
            // handed back. (Its pipelined COMMIT has usually ended the transaction already;
            // a ROLLBACK after it would only make the database warn.)
            drop(deadpool_postgres::Object::take(client));
            batch.fail_all(shared, || StoreError::Unavailable(message.clone().into()));
        }
    }
}

fn pool_unavailable_msg(message: &str) -> StoreError {
    StoreError::Unavailable(message.to_string().into())
}

/// A transaction of attempts' outcomes only commits without waiting for the log's flush
/// to disk: nobody was promised them, and a database crash that loses the last of them
/// (at most `wal_writer_delay`, 200 ms by default) only repeats those calls, as
/// at-least-once allows. The log is written in order, so whatever any later
/// transaction's flush makes durable (a registration, a cancel) includes them. Any
/// transaction with a registration or another change in it waits for the flush.
///
/// A server holding a backlog alone says so (`boomerang.holder`): the rows of its range
/// are unowned, and its own writes to them would otherwise each call the trigger that
/// tells the holder of changes to them (migration `V5__backlog_holder`).
fn begin(batch: &Batch, holds_backlog: bool) -> &'static str {
    let outcomes_only =
        batch.creates.is_empty() && batch.updates.iter().all(|u| u.attempt.is_some());
    match (outcomes_only, holds_backlog) {
        (true, false) => "BEGIN; SET LOCAL synchronous_commit = off",
        (true, true) => {
            "BEGIN; SET LOCAL synchronous_commit = off; SET LOCAL boomerang.holder = on"
        }
        (false, false) => "BEGIN",
        (false, true) => "BEGIN; SET LOCAL boomerang.holder = on",
    }
}

/// Inserts the new tasks; the ids inserted (a create whose idempotency key or id was
/// taken is not).
async fn insert_tasks(
    client: &deadpool_postgres::ClientWrapper,
    batch: &Batch,
) -> Result<HashSet<String>, tokio_postgres::Error> {
    if batch.creates.is_empty() {
        return Ok(HashSet::new());
    }
    let rows: Vec<&TaskRow> = batch.creates.iter().map(|c| &c.1).collect();
    let owners: Vec<Option<String>> = batch.creates.iter().map(|c| c.2.clone()).collect();
    let col = |f: fn(&TaskRow) -> String| rows.iter().map(|r| f(r)).collect::<Vec<_>>();
    let ids = col(|r| r.id.clone());
    let tenants = col(|r| r.tenant.clone());
    let statuses = col(|r| r.status.to_string());
    let docs = col(|r| r.doc.clone());
    let versions: Vec<i64> = rows.iter().map(|r| r.version).collect();
    let attempts: Vec<i32> = rows.iter().map(|r| r.attempt).collect();
    let keys: Vec<Option<String>> = rows.iter().map(|r| r.idempotency_key.clone()).collect();
    let kinds: Vec<Option<String>> = rows
        .iter()
        .map(|r| r.due_kind.map(str::to_string))
        .collect();
    let dues: Vec<Option<i64>> = rows.iter().map(|r| r.due_ms).collect();
    let business: Vec<Option<String>> = rows.iter().map(|r| r.business_key.clone()).collect();
    let finished: Vec<Option<i64>> = rows.iter().map(|r| r.finished_ms).collect();
    let stmt = client.prepare_cached(INSERT_TASKS).await?;
    let inserted = client
        .query(
            &stmt,
            &[
                &ids, &tenants, &statuses, &versions, &attempts, &keys, &kinds, &dues, &business,
                &finished, &owners, &docs,
            ],
        )
        .await?;
    Ok(inserted.iter().map(|r| r.get(0)).collect())
}

/// The existing tasks (tenant, key, document) whose idempotency keys the creates not
/// inserted were refused on.
async fn taken_keys(
    client: &deadpool_postgres::ClientWrapper,
    creates: &[Create],
    inserted: &HashSet<String>,
) -> Result<Vec<(String, String, String)>, tokio_postgres::Error> {
    let (tenants, keys): (Vec<&str>, Vec<&str>) = creates
        .iter()
        .map(|c| &c.1)
        .filter(|r| !inserted.contains(&r.id))
        .filter_map(|r| Some((r.tenant.as_str(), r.idempotency_key.as_deref()?)))
        .unzip();
    if tenants.is_empty() {
        return Ok(Vec::new());
    }
    let found = client
        .query(
            "SELECT t.tenant, t.idempotency_key, t.doc FROM tasks t
             JOIN unnest($1::text[], $2::text[]) AS k(tenant, key)
               ON t.tenant = k.tenant AND t.idempotency_key = k.key",
            &[&tenants, &keys],
        )
        .await?;
    Ok(found
        .iter()
        .map(|f| (f.get(0), f.get(1), f.get(2)))
        .collect())
}

/// Replaces the tasks whose stored version is still the one expected, and writes the
/// attempt records beside the ones replaced (a record of a write that lost its race is
/// not written: the attempt it records did not count); the ids replaced.
async fn update_tasks(
    client: &deadpool_postgres::ClientWrapper,
    batch: &Batch,
) -> Result<HashSet<String>, tokio_postgres::Error> {
    if batch.updates.is_empty() {
        return Ok(HashSet::new());
    }
    let u = &batch.updates;
    let ids: Vec<&str> = u.iter().map(|u| u.row.id.as_str()).collect();
    let expected: Vec<i64> = u.iter().map(|u| u.stored as i64).collect();
    let statuses: Vec<&str> = u.iter().map(|u| u.row.status).collect();
    let versions: Vec<i64> = u.iter().map(|u| u.row.version).collect();
    let attempts: Vec<i32> = u.iter().map(|u| u.row.attempt).collect();
    let kinds: Vec<Option<&str>> = u.iter().map(|u| u.row.due_kind).collect();
    let dues: Vec<Option<i64>> = u.iter().map(|u| u.row.due_ms).collect();
    let finished: Vec<Option<i64>> = u.iter().map(|u| u.row.finished_ms).collect();
    let owners: Vec<Option<&str>> = u.iter().map(|u| u.owner.as_deref()).collect();
    let business: Vec<Option<&str>> = u.iter().map(|u| u.row.business_key.as_deref()).collect();
    let docs: Vec<&str> = u.iter().map(|u| u.row.doc.as_str()).collect();
    let records: Vec<(&str, i32, &str)> = u
        .iter()
        .filter_map(|u| {
            let (number, doc) = u.attempt.as_ref()?;
            Some((u.row.id.as_str(), *number, doc.as_str()))
        })
        .collect();
    let record_ids: Vec<&str> = records.iter().map(|r| r.0).collect();
    let record_numbers: Vec<i32> = records.iter().map(|r| r.1).collect();
    let record_docs: Vec<&str> = records.iter().map(|r| r.2).collect();
    let stmt = client.prepare_cached(UPDATE_TASKS).await?;
    let rows = client
        .query(
            &stmt,
            &[
                &ids,
                &expected,
                &statuses,
                &versions,
                &attempts,
                &kinds,
                &dues,
                &finished,
                &owners,
                &business,
                &docs,
                &record_ids,
                &record_numbers,
                &record_docs,
            ],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Answers each create of a committed transaction (the ones refused with the task that
/// holds their key, as `taken` found it), and notes what this server now owns.
fn answer_creates(
    shared: &Shared,
    creates: Vec<Create>,
    inserted: &HashSet<String>,
    taken: Result<Vec<(String, String, String)>, tokio_postgres::Error>,
    since: Since,
) {
    for (task, row, owner, reply) in creates {
        if inserted.contains(&row.id) {
            if owner.is_some() {
                shared.owned.insert(*task, since);
            }
            let _ = reply.send(Ok(CreateOutcome::Created));
            continue;
        }
        let existing = match (&taken, &row.idempotency_key) {
            (Err(e), Some(_)) => Err(StoreError::Unavailable(e.to_string().into())),
            (Ok(found), Some(key)) => Ok(found
                .iter()
                .find(|(tenant, k, _)| *tenant == row.tenant && k == key)
                .map(|(_, _, doc)| doc)),
            // An id taken without a key: a conflict.
            (_, None) => Ok(None),
        };
        let answer = match existing {
            Ok(Some(doc)) => decode(doc).map(|t| CreateOutcome::Existing(Box::new(t))),
            // A key whose task is gone again: a conflict.
            Ok(None) => Err(StoreError::Conflict),
            Err(e) => Err(e),
        };
        let _ = reply.send(answer);
    }
}

/// Answers each update of a committed transaction, and notes what this server now owns.
fn answer_updates(shared: &Shared, updates: Vec<Update>, updated: &HashSet<String>, since: Since) {
    for u in updates {
        let id = u.task.id;
        // What this server keeps of the task is brought up to date before the write
        // counts as ended: a claim let through by its end sees the write's effect.
        if !updated.contains(&u.row.id) {
            shared.owned.doubt(&id);
            shared.claims.end_write(&id, u.expected, WriteEnd::Refused);
            let _ = u.reply.send(Err(StoreError::Conflict));
            continue;
        }
        match u.owner {
            Some(_) => shared.owned.insert(*u.task, since),
            None => shared.owned.remove(&id),
        }
        shared.claims.end_write(&id, u.expected, WriteEnd::Written);
        let _ = u.reply.send(Ok(()));
    }
}

#[cfg(test)]
mod tests {
    use boomerang_core::domain::TenantId;
    use boomerang_core::testing::sample_task;
    use tokio::sync::{mpsc, oneshot};
    use tokio::time::Instant;

    use super::{linger, TaskRow, Write, LINGER, LINGER_UNTIL};

    fn write(outcome: bool) -> Write {
        let task = sample_task(&TenantId::parse("t").unwrap(), None, chrono::Utc::now());
        let row = TaskRow::of(&task).unwrap();
        match outcome {
            true => Write::Update {
                task: Box::new(task),
                row,
                expected: 1,
                attempt: Some((1, "{}".into())),
                reply: oneshot::channel().0,
            },
            false => Write::Create {
                task: Box::new(task),
                row,
                reply: oneshot::channel().0,
            },
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_few_outcomes_wait_for_more_until_the_linger_ends() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut batch = vec![write(true)];
        let started = Instant::now();
        // Sent once the linger waits (the runtime has one thread: the task runs then).
        let sender = tokio::spawn(async move {
            tx.send(write(true)).ok().unwrap();
            tx
        });
        linger(&mut rx, &mut batch).await;
        assert_eq!(batch.len(), 2, "the outcome sent meanwhile joins the batch");
        assert_eq!(started.elapsed(), LINGER);
        drop(sender.await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_batch_of_outcomes_goes_at_once() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut batch: Vec<Write> = (0..LINGER_UNTIL).map(|_| write(true)).collect();
        let started = Instant::now();
        linger(&mut rx, &mut batch).await;
        assert_eq!(started.elapsed(), std::time::Duration::ZERO);
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn a_registration_never_waits() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut batch = vec![write(true), write(false)];
        let started = Instant::now();
        linger(&mut rx, &mut batch).await;
        assert_eq!(started.elapsed(), std::time::Duration::ZERO);
        assert_eq!(batch.len(), 2);
        drop(tx);
    }
}
