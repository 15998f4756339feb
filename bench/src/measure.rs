//! What the benchmark reads off a process, and how it summarises numbers.

use anyhow::{Context, Result};

/// CPU time and memory of a process, from `/proc`.
pub struct Usage {
    pub cpu_seconds: f64,
    pub rss_kb: u64,
    pub peak_rss_kb: u64,
}

/// Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

impl Usage {
    pub fn of(pid: u32) -> Result<Usage> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).context("reading /proc")?;
        // The command name may hold spaces; the fields after its closing parenthesis do not.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        let cpu_seconds = (ticks(11) + ticks(12)) / TICKS_PER_SECOND;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let kb = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        Ok(Usage {
            cpu_seconds,
            rss_kb: kb("VmRSS:"),
            peak_rss_kb: kb("VmHWM:"),
        })
    }
}

/// `min / p50 / p90 / p99 / max` of the values.
pub fn percentiles(values: &[i64]) -> String {
    if values.is_empty() {
        return "no samples".into();
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    format!(
        "min {} / p50 {} / p90 {} / p99 {} / max {}  ({} samples)",
        v[0],
        at(0.5),
        at(0.9),
        at(0.99),
        v[v.len() - 1],
        v.len()
    )
}

/// Connections open from process `owner` to `port` on loopback: the client ends, being
/// set up (`SYN-SENT`) or established, from `/proc/net/tcp` and `tcp6`, owned by one of
/// the process's file descriptors.
pub fn connections_to(port: u16, owner: u32) -> usize {
    let owned = socket_inodes(owner);
    // States: 01 ESTABLISHED, 02 SYN_SENT.
    let remote = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    matches!(fields.get(3), Some(&"01" | &"02"))
                        && fields.get(2).is_some_and(|r| r.ends_with(&remote))
                        && fields.get(9).is_some_and(|inode| owned.contains(*inode))
                })
                .map(|_| ())
                .collect::<Vec<_>>()
        })
        .count()
}

/// The inodes of the sockets process `pid` has open.
fn socket_inodes(pid: u32) -> std::collections::HashSet<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Default::default();
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect()
}

/// Samples [`connections_to`] every 20 ms until dropped; `most` is the highest count seen.
pub struct ConnectionWatch {
    most: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl ConnectionWatch {
    /// Counts the connections to `port` that `owners` hold, all together.
    pub fn start(port: u16, owners: Vec<u32>) -> Self {
        let most = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = most.clone();
        let task = tokio::spawn(async move {
            loop {
                let n = owners
                    .iter()
                    .map(|&owner| connections_to(port, owner))
                    .sum();
                seen.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        });
        Self { most, task }
    }

    pub fn most(&self) -> usize {
        self.most.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for ConnectionWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The fields of `/proc/<pid>/stat` after the command name (state first), or `None` if
/// there is no such process.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(String::from).collect())
}

/// CPU seconds of a process and of every process under it: each one's own (utime, stime),
/// and that of its children which ended and were waited for (cutime, cstime). `None` if
/// `pid` is gone.
pub fn tree_cpu_seconds(pid: u32) -> Option<f64> {
    let fields = stat_fields(pid)?;
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime, stime, cutime, cstime: fields 14 to 17 of the line, 11 to 14 after the name.
    let own = (ticks(11) + ticks(12) + ticks(13) + ticks(14)) / TICKS_PER_SECOND;
    let below: f64 = children_of(pid)
        .into_iter()
        .filter_map(tree_cpu_seconds)
        .sum();
    Some(own + below)
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&child| {
            stat_fields(child).and_then(|f| f.get(1)?.parse::<u32>().ok()) == Some(pid)
        })
        .collect()
}

/// The process listening on TCP `port` of this machine (any local address), from
/// `/proc/net/tcp` and `tcp6` and the processes' file descriptors; `None` if none is, or
/// its process cannot be read.
pub fn listener_on(port: u16) -> Option<u32> {
    let local = format!(":{port:04X}");
    // State 0A: LISTEN.
    let inodes: std::collections::HashSet<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let listening = fields.get(3) == Some(&"0A")
                        && fields.get(1).is_some_and(|l| l.ends_with(&local));
                    listening.then(|| fields.get(9).map(|i| i.to_string()))?
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if inodes.is_empty() {
        return None;
    }
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| !socket_inodes(pid).is_disjoint(&inodes))
}
