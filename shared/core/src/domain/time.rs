//! Time arithmetic that cannot panic: every sum of a time and a duration that came from a
//! request, a flag or a stored record goes through here.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// `t + d`, or `None` when the result is outside the range of representable times.
pub fn checked_add(t: DateTime<Utc>, d: Duration) -> Option<DateTime<Utc>> {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| t.checked_add_signed(d))
}

/// `t - d`, or `None` when the result is outside the range of representable times.
pub fn checked_sub(t: DateTime<Utc>, d: Duration) -> Option<DateTime<Utc>> {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| t.checked_sub_signed(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_out_of_range_are_none_not_panics() {
        let now = Utc::now();
        assert_eq!(
            checked_add(now, Duration::from_secs(60)),
            Some(now + chrono::Duration::seconds(60))
        );
        assert_eq!(checked_add(now, Duration::MAX), None);
        assert_eq!(
            checked_add(now, Duration::from_secs(300_000 * 366 * 86_400)),
            None
        );
        assert_eq!(
            checked_add(DateTime::<Utc>::MAX_UTC, Duration::from_secs(1)),
            None
        );
        assert_eq!(
            checked_sub(DateTime::<Utc>::MIN_UTC, Duration::from_secs(1)),
            None
        );
    }
}
