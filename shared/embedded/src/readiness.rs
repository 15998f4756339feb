//! The embedded backend's readiness: the store takes a write, the data directory has room
//! for more, and the in-process timer's loop runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::store::SqliteStore;
use crate::timer::{LocalTimer, BEAT};
use boomerang_core::ports::{Failing, Readiness, RecentAnswer};

/// Below this much free space in the data directory, the server says it is not ready: a
/// registration's write, and the log that holds it, need room to land.
pub const MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;
/// A probe write slower than this counts as failed.
const PROBE_WRITE: Duration = Duration::from_secs(2);
/// How long an answer is reused: a flood of `/readyz` must not become a flood of writes.
const REUSE: Duration = Duration::from_secs(1);

pub struct EmbeddedReadiness {
    store: Arc<SqliteStore>,
    data_dir: PathBuf,
    timer: Arc<LocalTimer>,
    last: RecentAnswer,
}

impl EmbeddedReadiness {
    pub fn new(store: Arc<SqliteStore>, data_dir: &Path, timer: Arc<LocalTimer>) -> Self {
        Self {
            store,
            data_dir: data_dir.to_path_buf(),
            timer,
            last: RecentAnswer::new(REUSE),
        }
    }

    async fn check(&self) -> Vec<Failing> {
        let mut failing = Vec::new();
        match free_bytes(&self.data_dir) {
            Ok(free) if free < MIN_FREE_BYTES => failing.push(
                Failing::new(
                    "disk",
                    format!(
                        "{} MiB free in the data directory, under the {} MiB needed",
                        free / (1024 * 1024),
                        MIN_FREE_BYTES / (1024 * 1024)
                    ),
                )
                .because(format_args!("data directory {}", self.data_dir.display())),
            ),
            Ok(_) => {}
            Err(e) => failing.push(Failing::new("disk", "cannot tell the free space").because(e)),
        }
        match tokio::time::timeout(PROBE_WRITE, self.store.probe_write()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failing.push(Failing::new("store", "a write failed").because(e)),
            Err(_) => failing.push(Failing::new(
                "store",
                format!("a write took over {PROBE_WRITE:?}"),
            )),
        }
        let silent = self.timer.silent_for();
        if silent > 5 * BEAT {
            failing.push(Failing::new(
                "timer",
                format!("its loop has not run for {silent:?}"),
            ));
        }
        failing
    }
}

#[async_trait]
impl Readiness for EmbeddedReadiness {
    async fn failing(&self) -> Vec<Failing> {
        self.last.or_check(self.check()).await
    }
}

/// The bytes an unprivileged writer may still use on `dir`'s file system.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stat` a properly sized out-parameter.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stat.f_bavail as u64 * stat.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn free_space_is_read_from_the_file_system() {
        let free = super::free_bytes(&std::env::temp_dir()).unwrap();
        assert!(free > 0);
        assert!(super::free_bytes(std::path::Path::new("/no/such/dir")).is_err());
    }
}
