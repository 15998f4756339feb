//! A CPU quota for the measured code: the share of a core Lambda gives a function of a
//! given memory size (a full vCPU at 1,769 MB, proportionally less below: about 14.5 % at
//! 256 MB). The bench makes a cgroup with that quota and moves itself into it only while
//! it runs the measured invocations, so that its setup (registering the tasks) runs at full
//! speed; the emulator runs in its own process, outside the quota, as DynamoDB and SQS are
//! outside the function's.
//!
//! cgroup v2 (`cpu.max`) or v1 (`cpu.cfs_quota_us`), whichever the machine mounts; it
//! needs root (or a delegated cgroup).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// The scheduler period the quota is a share of (the kernel's default).
const PERIOD_US: u64 = 100_000;

/// A CPU share of one core, as a function's memory size gets it.
pub fn share_of_memory(memory_mb: u32) -> f64 {
    f64::from(memory_mb) / 1769.0
}

pub struct CpuQuota {
    /// The cgroup with the quota.
    dir: PathBuf,
    /// Where this process was, to go back to.
    home: PathBuf,
    version: Version,
    pub share: f64,
}

#[derive(Clone, Copy)]
enum Version {
    V1,
    V2,
}

impl CpuQuota {
    /// A cgroup allowing `share` of one core (0 < share ≤ 1).
    pub fn new(share: f64) -> Result<CpuQuota> {
        if !(share > 0.0 && share <= 1.0) {
            bail!("a CPU share must be above 0 and at most 1 (got {share})");
        }
        let quota_us = (share * PERIOD_US as f64).round() as u64;
        let name = format!("boomerang-bench-{}", std::process::id());
        let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers");
        let (version, root) = if v2.exists() {
            (Version::V2, PathBuf::from("/sys/fs/cgroup"))
        } else if Path::new("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists() {
            (Version::V1, PathBuf::from("/sys/fs/cgroup/cpu"))
        } else {
            bail!("no cgroup CPU controller under /sys/fs/cgroup (v2 cpu.max or v1 cpu/)");
        };
        let home = root.join(own_cgroup(version)?.trim_start_matches('/'));
        let dir = root.join(&name);
        std::fs::create_dir(&dir)
            .with_context(|| format!("creating {} (needs root)", dir.display()))?;
        let set = match version {
            Version::V2 => std::fs::write(dir.join("cpu.max"), format!("{quota_us} {PERIOD_US}")),
            Version::V1 => std::fs::write(dir.join("cpu.cfs_period_us"), PERIOD_US.to_string())
                .and_then(|()| std::fs::write(dir.join("cpu.cfs_quota_us"), quota_us.to_string())),
        };
        if let Err(e) = set {
            let _ = std::fs::remove_dir(&dir);
            return Err(e).context("setting the CPU quota");
        }
        Ok(CpuQuota {
            dir,
            home,
            version,
            share,
        })
    }

    /// How the quota is set, for the printout.
    pub fn describe(&self) -> String {
        let quota_us = (self.share * PERIOD_US as f64).round();
        match self.version {
            Version::V2 => format!(
                "cgroup v2 cpu.max \"{quota_us} {PERIOD_US}\" ({})",
                self.dir.display()
            ),
            Version::V1 => format!(
                "cgroup v1 cpu.cfs_quota_us {quota_us} / cpu.cfs_period_us {PERIOD_US} ({})",
                self.dir.display()
            ),
        }
    }

    /// Moves this whole process (every thread) under the quota.
    pub fn enter(&self) -> Result<()> {
        move_to(&self.dir)
    }

    /// Moves it back where it was.
    pub fn leave(&self) -> Result<()> {
        move_to(&self.home)
    }

    /// How long the cgroup's threads have waited for quota so far.
    pub fn throttled(&self) -> Duration {
        let stat = std::fs::read_to_string(self.dir.join("cpu.stat")).unwrap_or_default();
        let field = |name: &str| {
            stat.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        match self.version {
            Version::V2 => Duration::from_micros(field("throttled_usec ").unwrap_or(0)),
            Version::V1 => Duration::from_nanos(field("throttled_time ").unwrap_or(0)),
        }
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        let _ = self.leave();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn move_to(dir: &Path) -> Result<()> {
    std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
        .with_context(|| format!("moving into {}", dir.display()))
}

/// This process's cgroup in the hierarchy of `version`'s CPU controller.
fn own_cgroup(version: Version) -> Result<String> {
    let lines = std::fs::read_to_string("/proc/self/cgroup")?;
    let found = lines.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let ours = match version {
            Version::V2 => controllers.is_empty(),
            Version::V1 => controllers.split(',').any(|c| c == "cpu"),
        };
        ours.then(|| path.to_string())
    });
    found.context("this process's CPU cgroup in /proc/self/cgroup")
}
