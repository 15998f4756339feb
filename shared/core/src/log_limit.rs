//! At most one log line a second from one place in the code. During a database outage
//! every request and every delivery fails the same way: a line for each would bury the
//! first cause under thousands of copies and fill the disk the log is on. The line that
//! is written says how many were left out since the one before.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One place's limit: put it in a `static` beside the log line it limits.
pub struct LogLimit {
    every: Duration,
    /// When the last line was written, and how many were left out since.
    last: Mutex<Option<(Instant, u64)>>,
}

impl LogLimit {
    /// A line a second.
    pub const fn per_second() -> Self {
        Self {
            every: Duration::from_secs(1),
            last: Mutex::new(None),
        }
    }

    /// Whether to write the line now: `Some(n)` with the `n` lines left out since the last
    /// one written, or `None` to leave this one out.
    pub fn admit(&self) -> Option<u64> {
        self.admit_at(Instant::now())
    }

    /// [`Self::admit`] at `now`.
    pub fn admit_at(&self, now: Instant) -> Option<u64> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_mut() {
            Some((at, left_out)) if now.saturating_duration_since(*at) < self.every => {
                *left_out += 1;
                None
            }
            _ => {
                let left_out = last.map_or(0, |(_, n)| n);
                *last = Some((now, 0));
                Some(left_out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_second_and_the_next_counts_those_left_out() {
        let limit = LogLimit::per_second();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert_eq!(limit.admit_at(at(0)), Some(0), "the first is written");
        assert_eq!(limit.admit_at(at(10)), None);
        assert_eq!(limit.admit_at(at(999)), None);
        assert_eq!(
            limit.admit_at(at(1000)),
            Some(2),
            "a second later, with the two left out"
        );
        assert_eq!(limit.admit_at(at(1500)), None);
        assert_eq!(limit.admit_at(at(5000)), Some(1));
        assert_eq!(limit.admit_at(at(9000)), Some(0), "none left out since");
    }
}
