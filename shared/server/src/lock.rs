//! The data directory belongs to one process at a time.

use std::path::PathBuf;

/// Why the data directory could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("the data directory {dir} is in use by another boomerang (pid {pid}); stop it first")]
    InUse { dir: PathBuf, pid: String },
    #[error("cannot lock the data directory {0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
}

/// The file whose lock says which process owns a data directory.
pub const LOCK_FILE: &str = "lock";

/// Takes the data directory for this process alone, or says which process has it. The
/// operating system releases the lock when the process ends, however it ends.
pub(crate) fn lock_data_dir(dir: &std::path::Path) -> Result<std::fs::File, LockError> {
    use std::io::{Read, Seek, Write};
    let path = dir.join(LOCK_FILE);
    let lock_error = |e| LockError::Io(path.clone(), e);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(lock_error)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            return Err(LockError::InUse {
                dir: dir.to_path_buf(),
                pid: pid.trim().to_string(),
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(lock_error(e)),
    }
    file.set_len(0).map_err(lock_error)?;
    file.rewind().map_err(lock_error)?;
    writeln!(file, "{}", std::process::id()).map_err(lock_error)?;
    Ok(file)
}
