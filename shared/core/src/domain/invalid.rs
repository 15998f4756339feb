//! The domain's refusal of a value: which field, and what is wrong with it.

use std::fmt;
use std::time::Duration;

/// Where a field sits in a request: names and list positions, from the outside in
/// (`retry.schedule[2]`). Written once, by [`fmt::Display`]; an empty path is the whole
/// value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<Segment>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Name(String),
    Index(usize),
}

impl FieldPath {
    /// The whole value.
    pub fn root() -> Self {
        Self::default()
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// This path with a field's name after it.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.0.push(Segment::Name(name.into()));
        self
    }

    /// This path with a list position after it.
    pub fn index(mut self, i: usize) -> Self {
        self.0.push(Segment::Index(i));
        self
    }

    /// This path inside `parent`: `schedule[2]` inside `retry` is `retry.schedule[2]`.
    pub fn under(self, parent: impl Into<FieldPath>) -> Self {
        let mut path = parent.into();
        path.0.extend(self.0);
        path
    }
}

/// Read from the way it is written (`retry.schedule[2]`, `[3]`), for paths the code names.
/// A bracket that holds no number stays part of the name (`a[x]` is one name).
impl From<&str> for FieldPath {
    fn from(written: &str) -> Self {
        let mut path = FieldPath::root();
        for part in written.split('.').filter(|p| !p.is_empty()) {
            let (name, indexes) = split_indexes(part);
            if !name.is_empty() {
                path = path.name(name);
            }
            for i in indexes {
                path = path.index(i);
            }
        }
        path
    }
}

/// `schedule[2][3]` as `schedule` and `[2, 3]`; a part whose brackets do not all hold
/// numbers is a name as it stands.
fn split_indexes(part: &str) -> (&str, Vec<usize>) {
    let Some(open) = part.find('[') else {
        return (part, Vec::new());
    };
    let mut indexes = Vec::new();
    let mut rest = &part[open..];
    while let Some(inner) = rest.strip_prefix('[') {
        let Some((index, after)) = inner.split_once(']') else {
            return (part, Vec::new());
        };
        match index.parse() {
            Ok(i) => indexes.push(i),
            Err(_) => return (part, Vec::new()),
        }
        rest = after;
    }
    match rest.is_empty() {
        true => (&part[..open], indexes),
        false => (part, Vec::new()),
    }
}

impl From<String> for FieldPath {
    fn from(written: String) -> Self {
        written.as_str().into()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Name(name) if i == 0 => f.write_str(name)?,
                Segment::Name(name) => write!(f, ".{name}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// Compares with a path as written (`"retry.schedule[2]"`), for tests and checks.
impl PartialEq<&str> for FieldPath {
    fn eq(&self, written: &&str) -> bool {
        let rendered: String = self.to_string();
        rendered.as_str() == *written
    }
}

/// A value the domain refuses, naming its field (`schedule[2]`, `max_attempts`), relative
/// to the value being built; [`Invalid::under`] places it inside a larger one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {detail}")]
pub struct Invalid {
    pub field: FieldPath,
    pub detail: String,
}

impl Invalid {
    pub fn new(field: impl Into<FieldPath>, detail: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            detail: detail.into(),
        }
    }

    /// The same refusal of a field inside `parent`: `retry` + `schedule[2]` gives
    /// `retry.schedule[2]`.
    pub fn under(self, parent: impl Into<FieldPath>) -> Self {
        Self {
            field: self.field.under(parent),
            ..self
        }
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
        assert_eq!(
            Invalid::new("[3]", "x").under("tasks").field,
            FieldPath::root().name("tasks").index(3)
        );
        let nested = FieldPath::from("a[1][2].b");
        assert_eq!(nested.to_string(), "a[1][2].b");
        assert_eq!(nested.segments().len(), 4);
        for kept in ["a[x", "a[x]", "a[1]x"] {
            let path = FieldPath::from(kept);
            assert_eq!(
                (path.to_string(), path.segments().len()),
                (kept.to_string(), 1)
            );
        }
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
