//! The embedded store's single writer: one thread owns the write connection and commits
//! every write that is waiting at that moment in one transaction, with one fsync (group
//! commit). Each caller is answered only after the commit that holds its write, so an
//! acknowledgement still means "on disk".

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use rusqlite::{Connection, OptionalExtension};
use tokio::sync::oneshot;

use boomerang_core::domain::{Task, TaskId};
use boomerang_core::metrics::{MetricEvent, Metrics};
use boomerang_core::ports::StoreError;

/// Most writes one transaction holds; more wait for the next.
const MAX_BATCH: usize = 1024;

/// Attempts claimed and not yet finished. One process owns the data directory, so a claim
/// needs no durable write: it lives here, and a crash simply forgets it (the attempt then
/// runs again, at-least-once). `stored_version` is the version the file still holds.
pub(crate) type Claims = Arc<Mutex<HashMap<TaskId, Claim>>>;

pub(crate) struct Claim {
    pub task: Task,
    pub stored_version: u64,
}

/// What the writer thread hands a write: the connection (inside the open transaction) and
/// the claims.
pub(crate) struct Writer {
    pub conn: Connection,
    pub claims: Claims,
    /// Told each commit's size and time.
    pub metrics: Arc<dyn Metrics>,
}

impl Writer {
    /// The file's version a write of `id` must be conditional on, if the engine's
    /// `expected` version is still current: while the task is claimed, the version the
    /// file held at the claim (and `expected` must be the claim's); otherwise `expected`
    /// itself, which the conditional statement then checks.
    pub fn stored_version(&self, id: &TaskId, expected: u64) -> Result<u64, StoreError> {
        match lock(&self.claims).get(id) {
            Some(claim) if claim.task.version == expected => Ok(claim.stored_version),
            Some(_) => Err(StoreError::Conflict),
            None => Ok(expected),
        }
    }

    /// The version the file holds for `id`, if the task exists.
    pub fn file_version(&self, id: &TaskId) -> Result<Option<u64>, StoreError> {
        let stored: Option<i64> = self
            .conn
            .prepare_cached("SELECT version FROM tasks WHERE id = ?1")
            .and_then(|mut stmt| stmt.query_row([id.to_string()], |r| r.get(0)).optional())
            .map_err(unavailable)?;
        Ok(stored.map(|v| v as u64))
    }
}

pub(crate) fn lock(claims: &Claims) -> std::sync::MutexGuard<'_, HashMap<TaskId, Claim>> {
    // A panic while holding this lock cannot leave the map half-changed (single inserts
    // and removes), so a poisoned lock is still good.
    claims.lock().unwrap_or_else(|e| e.into_inner())
}

/// Called with the outcome of the commit that holds the write.
type Completion = Box<dyn FnOnce(Result<(), String>) + Send>;
/// Runs one write inside the open transaction (`Err` if it could not be opened).
type Job = Box<dyn FnOnce(&Writer, &Result<(), String>) -> Option<Completion> + Send>;

/// The handle the store keeps: sends writes to the thread.
#[derive(Clone)]
pub(crate) struct WriterHandle {
    jobs: mpsc::Sender<Job>,
    commits: Arc<AtomicU64>,
}

impl WriterHandle {
    pub fn spawn(writer: Writer) -> Result<WriterHandle, StoreError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let commits = Arc::new(AtomicU64::new(0));
        let counter = commits.clone();
        std::thread::Builder::new()
            .name("boomerang-sqlite-writer".into())
            .spawn(move || run(writer, rx, &counter))
            .map_err(|e| StoreError::Unavailable(e.into()))?;
        Ok(WriterHandle { jobs, commits })
    }

    /// Transactions committed so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Runs `f` in the writer's next transaction. A `durable` write is answered after its
    /// commit; any other (a claim, which writes nothing) at once. A write that fails is
    /// rolled back alone and answered at once.
    pub async fn write<T, F>(&self, durable: bool, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Writer) -> Result<T, StoreError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |w, begun| {
            if let Err(e) = begun {
                let _ = tx.send(Err(StoreError::Unavailable(e.clone().into())));
                return None;
            }
            match in_savepoint(w, f) {
                Ok(v) if durable => Some(Box::new(move |committed: Result<(), String>| {
                    let _ = tx.send(
                        committed
                            .map(|()| v)
                            .map_err(|e| StoreError::Unavailable(e.into())),
                    );
                })),
                other => {
                    let _ = tx.send(other);
                    None
                }
            }
        });
        let stopped = || StoreError::Unavailable("the store's writer has stopped".into());
        self.jobs.send(job).map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }
}

fn in_savepoint<T>(
    w: &Writer,
    f: impl FnOnce(&Writer) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    run_sql(&w.conn, "SAVEPOINT job")?;
    let result = f(w);
    if result.is_err() {
        run_sql(&w.conn, "ROLLBACK TO job")?;
    }
    run_sql(&w.conn, "RELEASE job")?;
    result
}

/// Runs one statement of no parameters, prepared once per connection: every write runs
/// these, and parsing them each time was a tenth of a delivery's CPU.
fn run_sql(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute([]))
        .map(|_| ())
        .map_err(unavailable)
}

fn run(writer: Writer, jobs: mpsc::Receiver<Job>, commits: &AtomicU64) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let started = std::time::Instant::now();
        let begun = run_sql(&writer.conn, "BEGIN IMMEDIATE").map_err(|e| e.to_string());
        let completions: Vec<Completion> = batch
            .into_iter()
            .filter_map(|job| job(&writer, &begun))
            .collect();
        if begun.is_err() {
            continue;
        }
        let committed = run_sql(&writer.conn, "COMMIT").map_err(|e| {
            let _ = run_sql(&writer.conn, "ROLLBACK");
            e.to_string()
        });
        if committed.is_ok() {
            commits.fetch_add(1, Ordering::Relaxed);
            writer.metrics.record(MetricEvent::StoreCommit {
                writes: completions.len(),
                micros: started.elapsed().as_micros() as u64,
            });
        }
        for done in completions {
            done(committed.clone());
        }
    }
}

pub(crate) fn unavailable(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(e.into())
}
