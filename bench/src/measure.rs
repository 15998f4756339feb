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
