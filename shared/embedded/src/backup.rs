//! An online copy of a data directory: the store as it was at one moment, taken while
//! `serve` runs on it, and the credentials beside it, so that the copy is itself a data
//! directory a server starts from.
//!
//! The store is copied with SQLite's online backup API in a single step, that is in one
//! read transaction. The store runs in WAL mode, where a reader never blocks the writer:
//! the server keeps committing while the copy is read, and the copy is the snapshot the
//! read began with. A copy in several steps with pauses between them would not be kinder
//! to the writer, and SQLite starts such a copy over whenever another connection writes
//! between two steps: on a server that keeps taking registrations it might never end.
//!
//! The server's lock (`lock`) is neither taken nor copied: the copy reads beside the
//! running server, as its own read connections do.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use crate::backend::DB_FILE;

/// The credentials file `serve` keeps beside the store (see `tenants::credentials`).
pub const CREDENTIALS_FILE: &str = "credentials.json";

/// How long the copy waits for the store while another process holds it busy (a
/// checkpoint, or the recovery of its write-ahead log at a server's start).
const BUSY_FOR_AT_MOST: Duration = Duration::from_secs(30);
const BUSY_PAUSE: Duration = Duration::from_millis(50);

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0} holds no store ({DB_FILE}): it is not a data directory `serve` has run on")]
    NoStore(PathBuf),
    #[error("reading the store {0}: {1}")]
    ReadStore(PathBuf, #[source] rusqlite::Error),
    #[error("the store {0} stayed busy for {BUSY_FOR_AT_MOST:?}")]
    Busy(PathBuf),
    #[error("reading {0}: {1}")]
    ReadFile(PathBuf, #[source] std::io::Error),
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("{0} is not empty: a copy goes to a new or an empty directory")]
    NotEmpty(PathBuf),
    #[error("writing the copy {0}: {1}")]
    WriteStore(PathBuf, #[source] rusqlite::Error),
    #[error("writing {0}: {1}")]
    WriteFile(PathBuf, #[source] std::io::Error),
}

impl BackupError {
    /// Whether the error is about the destination (else about the data directory).
    pub fn is_destination(&self) -> bool {
        matches!(
            self,
            Self::NotADirectory(_) | Self::NotEmpty(_) | Self::WriteStore(..) | Self::WriteFile(..)
        )
    }
}

/// What a backup copied.
#[derive(Debug)]
pub struct Copied {
    /// The store's size in the copy, in bytes.
    pub store_bytes: u64,
    /// Tasks in the copy.
    pub tasks: u64,
    /// Of them, those not finished yet (`None`: a store too old to tell).
    pub unfinished: Option<u64>,
    /// Whether a credentials file was there to copy (`serve` given both `--api-key` and
    /// `--signing-secret` keeps none).
    pub credentials: bool,
}

/// Copies the data directory `data_dir` into `to`, a directory that must not exist yet
/// or be empty (a copy never mixes with older files). `serve` may be running on
/// `data_dir`: it is not stopped, locked out or waited for.
pub fn backup(data_dir: &Path, to: &Path) -> Result<Copied, BackupError> {
    let source = data_dir.join(DB_FILE);
    if !source.is_file() {
        return Err(BackupError::NoStore(data_dir.to_path_buf()));
    }
    prepare_destination(to)?;
    let copied = copy_all(data_dir, to);
    if copied.is_err() {
        // The directory was empty: what a failed copy left in it would only make the next
        // try refused (and could be taken for a backup).
        remove_written(to);
    }
    copied
}

fn copy_all(data_dir: &Path, to: &Path) -> Result<Copied, BackupError> {
    let (tasks, unfinished, store_bytes) = copy_store(&data_dir.join(DB_FILE), &to.join(DB_FILE))?;
    let credentials = copy_credentials(data_dir, to)?;
    sync_dir(to)?;
    Ok(Copied {
        store_bytes,
        tasks,
        unfinished,
        credentials,
    })
}

/// Makes `to` if it is missing; refuses one that holds anything.
fn prepare_destination(to: &Path) -> Result<(), BackupError> {
    let write_error = |e| BackupError::WriteFile(to.to_path_buf(), e);
    match std::fs::read_dir(to) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(BackupError::NotEmpty(to.to_path_buf())),
        },
        Err(e) if e.kind() == ErrorKind::NotFound => {
            std::fs::create_dir_all(to).map_err(write_error)
        }
        Err(e) if e.kind() == ErrorKind::NotADirectory => {
            Err(BackupError::NotADirectory(to.to_path_buf()))
        }
        Err(e) => Err(write_error(e)),
    }
}

/// Copies the store at `source` to `dest`: written under another name first, and renamed
/// once complete and on disk, so that a `boomerang.db` in a copy is always a whole one.
/// Returns the copy's tasks, unfinished tasks and size.
fn copy_store(source: &Path, dest: &Path) -> Result<(u64, Option<u64>, u64), BackupError> {
    let partial = partial_of(dest);
    let (tasks, unfinished) = copy_into(source, &partial)?;
    let bytes = sync_file(&partial)?;
    std::fs::rename(&partial, dest).map_err(|e| BackupError::WriteFile(dest.to_path_buf(), e))?;
    Ok((tasks, unfinished, bytes))
}

/// Where the store's copy is written until it is whole.
fn partial_of(dest: &Path) -> PathBuf {
    dest.with_extension("db.partial")
}

/// The online copy itself, and the counts read from the copy (never from the source,
/// which has moved on).
fn copy_into(source: &Path, partial: &Path) -> Result<(u64, Option<u64>), BackupError> {
    let src = open_source(source)?;
    let write_error = |e| BackupError::WriteStore(partial.to_path_buf(), e);
    let mut dst = Connection::open(partial).map_err(write_error)?;
    {
        let backup = Backup::new(&src, &mut dst).map_err(write_error)?;
        run_in_one_step(&backup, source)?;
    }
    drop(src);
    let tasks: u64 = dst
        .query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))
        .map_err(write_error)?;
    let unfinished: Option<u64> = dst
        .query_row(
            "SELECT COUNT(*) FROM tasks WHERE finished_ms IS NULL",
            [],
            |r| r.get(0),
        )
        .ok();
    // Closing the copy's last connection folds its write-ahead log into the file, so the
    // one file is the whole copy.
    dst.close().map_err(|(_, e)| write_error(e))?;
    Ok((tasks, unfinished))
}

/// The source store, read-only: the copy never writes to the server's files (and,
/// without the create flag, never makes a store where there is none).
fn open_source(source: &Path) -> Result<Connection, BackupError> {
    let read_error = |e| BackupError::ReadStore(source.to_path_buf(), e);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(source, flags).map_err(read_error)?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(read_error)?;
    Ok(conn)
}

/// Steps the backup over every page at once; waits out a busy store, for a while.
fn run_in_one_step(backup: &Backup<'_, '_>, source: &Path) -> Result<(), BackupError> {
    let started = Instant::now();
    loop {
        let step = backup
            .step(-1)
            .map_err(|e| BackupError::ReadStore(source.to_path_buf(), e))?;
        match step {
            StepResult::Done => return Ok(()),
            // Not after a step over every page; harmless to step again if it were.
            StepResult::More => continue,
            // Busy or Locked: another connection holds what this step needs, for now.
            _ => {
                if started.elapsed() >= BUSY_FOR_AT_MOST {
                    return Err(BackupError::Busy(source.to_path_buf()));
                }
                std::thread::sleep(BUSY_PAUSE);
            }
        }
    }
}

/// Copies `credentials.json` if there is one, private to its owner as `serve` keeps it.
/// `serve` replaces the file by a rename, never in place: one read sees a whole file.
fn copy_credentials(data_dir: &Path, to: &Path) -> Result<bool, BackupError> {
    let source = data_dir.join(CREDENTIALS_FILE);
    let bytes = match std::fs::read(&source) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(BackupError::ReadFile(source, e)),
    };
    let dest = to.join(CREDENTIALS_FILE);
    write_private(&dest, &bytes).map_err(|e| BackupError::WriteFile(dest, e))?;
    Ok(true)
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Puts the file on disk; returns its size.
fn sync_file(path: &Path) -> Result<u64, BackupError> {
    let sync = File::open(path).and_then(|f| f.sync_all().and_then(|()| f.metadata()));
    sync.map(|m| m.len())
        .map_err(|e| BackupError::WriteFile(path.to_path_buf(), e))
}

/// Puts the directory's entries (the renamed store, the credentials) on disk.
fn sync_dir(dir: &Path) -> Result<(), BackupError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| BackupError::WriteFile(dir.to_path_buf(), e))
}

/// Removes what a failed backup wrote in `to`: the files it writes, and whatever SQLite
/// left beside the store's partial copy. Nothing else was there.
fn remove_written(to: &Path) {
    let partial = partial_of(&to.join(DB_FILE)).into_os_string();
    let sidecars = ["", "-journal", "-wal", "-shm"].map(|suffix| {
        let mut name = partial.clone();
        name.push(suffix);
        PathBuf::from(name)
    });
    let written = [to.join(DB_FILE), to.join(CREDENTIALS_FILE)];
    for file in written.iter().chain(&sidecars) {
        let _ = std::fs::remove_file(file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of the test's own, removed with everything in it when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("boomerang-backup-{name}-{}", ulid::Ulid::new()));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
    }

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A store in WAL mode, as `serve` keeps it, with `rows` tasks numbered from 1.
    fn store_with(dir: &Path, rows: u64) -> Connection {
        let conn = Connection::open(dir.join(DB_FILE)).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE tasks (id INTEGER PRIMARY KEY, finished_ms INTEGER)")
            .unwrap();
        for id in 1..=rows {
            conn.execute("INSERT INTO tasks (id) VALUES (?1)", [id])
                .unwrap();
        }
        conn
    }

    fn ids_in(copy: &Path) -> Vec<u64> {
        let conn = Connection::open(copy.join(DB_FILE)).unwrap();
        let mut stmt = conn.prepare("SELECT id FROM tasks ORDER BY id").unwrap();
        let ids = stmt.query_map([], |r| r.get(0)).unwrap();
        ids.collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn a_copy_taken_during_writes_is_one_moment_of_the_store() {
        let data = Scratch::new("busy");
        let conn = store_with(&data, 1000);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut id = 1000;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    id += 1;
                    conn.execute("INSERT INTO tasks (id) VALUES (?1)", [id])
                        .unwrap();
                }
                id
            })
        };
        let to = data.join("copy");
        let copied = backup(&data, &to).unwrap();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let written = writer.join().unwrap();

        // Every row committed before the copy, none torn: the ids are 1..=n without a gap.
        let ids = ids_in(&to);
        let n = ids.len() as u64;
        assert!(n >= 1000 && n <= written, "{n} of {written}");
        assert_eq!(ids, (1..=n).collect::<Vec<_>>());
        assert_eq!((copied.tasks, copied.unfinished), (n, Some(n)));
        assert!(!copied.credentials);
        let mut names: Vec<_> = std::fs::read_dir(&*to)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [DB_FILE], "the copy is one whole file");
    }

    #[test]
    fn a_store_nobody_has_open_is_copied_with_its_credentials() {
        let data = Scratch::new("idle");
        store_with(&data, 3).close().unwrap();
        std::fs::write(data.join(CREDENTIALS_FILE), r#"{"api_key":"k"}"#).unwrap();
        let to = data.join("fresh");
        let copied = backup(&data, &to).unwrap();
        assert_eq!((copied.tasks, copied.credentials), (3, true));
        assert_eq!(ids_in(&to), [1, 2, 3]);
        let credentials = std::fs::read_to_string(to.join(CREDENTIALS_FILE)).unwrap();
        assert_eq!(credentials, r#"{"api_key":"k"}"#);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(to.join(CREDENTIALS_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "the secrets stay private");
        }
    }

    #[test]
    fn a_backup_that_fails_half_way_leaves_the_destination_empty() {
        let data = Scratch::new("unreadable");
        store_with(&data, 3).close().unwrap();
        // Credentials that cannot be read: the store is copied by then.
        std::fs::create_dir(data.join(CREDENTIALS_FILE)).unwrap();
        let to = data.join("copy");
        let failed = backup(&data, &to).unwrap_err();
        assert!(matches!(failed, BackupError::ReadFile(..)), "{failed}");
        assert!(!failed.is_destination());
        assert_eq!(
            std::fs::read_dir(&to).unwrap().count(),
            0,
            "ready for the next try"
        );
    }

    #[test]
    fn a_destination_with_anything_in_it_is_refused_and_left_alone() {
        let data = Scratch::new("data");
        Connection::open(data.join(DB_FILE)).unwrap();
        let to = Scratch::new("to");
        std::fs::write(to.join("notes.txt"), "mine").unwrap();
        let refused = backup(&data, &to).unwrap_err();
        assert!(matches!(refused, BackupError::NotEmpty(_)), "{refused}");
        assert!(refused.is_destination());
        let left: Vec<_> = std::fs::read_dir(&*to).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn a_directory_without_a_store_is_refused_and_nothing_is_made() {
        let data = Scratch::new("empty");
        let to = data.join("copy");
        let refused = backup(&data, &to).unwrap_err();
        assert!(matches!(refused, BackupError::NoStore(_)), "{refused}");
        assert!(!refused.is_destination());
        assert!(!to.exists());
        assert!(
            !data.join(DB_FILE).exists(),
            "the store must not be created"
        );
    }
}
