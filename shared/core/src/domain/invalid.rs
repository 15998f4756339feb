//! The domain's refusal of a value: which field, and what is wrong with it.

use std::time::Duration;

/// A value the domain refuses, naming its field (`schedule[2]`, `max_attempts`), relative
/// to the value being built; [`Invalid::under`] places it inside a larger one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {detail}")]
pub struct Invalid {
    pub field: String,
    pub detail: String,
}

impl Invalid {
    pub fn new(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            detail: detail.into(),
        }
    }

    /// The same refusal of a field inside `parent`: `retry` + `schedule[2]` gives
    /// `retry.schedule[2]`.
    pub fn under(self, parent: &str) -> Self {
        let field = if self.field.is_empty() {
            parent.to_string()
        } else if self.field.starts_with('[') {
            format!("{parent}{}", self.field)
        } else {
            format!("{parent}.{}", self.field)
        };
        Self { field, ..self }
    }
}

/// `d` if it is within `[min, max]`; else a refusal of `field` that states the bounds.
pub fn within(field: &str, d: Duration, min: Duration, max: Duration) -> Result<Duration, Invalid> {
    if d < min || d > max {
        return Err(Invalid::new(
            field,
            format!("must be between {} and {}", human(min), human(max)),
        ));
    }
    Ok(d)
}

/// A duration as people write it; whole days as days (humantime would say
/// "11months 30days 3h 50m 24s" for 365 days).
pub fn human(d: Duration) -> String {
    const DAY: u64 = 24 * 3600;
    match d.as_secs() {
        s if s >= DAY && s % DAY == 0 && d.subsec_nanos() == 0 => format!("{} days", s / DAY),
        _ => humantime::format_duration(d).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_placed_inside_its_parent() {
        let e = Invalid::new("schedule[2]", "too long");
        assert_eq!(e.clone().under("retry").field, "retry.schedule[2]");
        assert_eq!(
            Invalid::new("[3]", "x").under("permanent_statuses").field,
            "permanent_statuses[3]"
        );
        assert_eq!(Invalid::new("", "x").under("retry").field, "retry");
    }

    #[test]
    fn bounds_are_stated_in_days_where_whole() {
        let err = within(
            "t",
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(365 * 86400),
        );
        assert_eq!(err.unwrap_err().detail, "must be between 1s and 365 days");
    }
}
