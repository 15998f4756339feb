//! The values a request writes as text: durations (`90s`), times (RFC 3339) and the
//! domain's choices (`final` or `every`). Each is read when the request is, so a bad one is
//! refused at its own path (`retry.schedule[2]`) with the same words wherever it appears,
//! and each keeps the text it was sent as: the idempotency digest covers what was sent.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use boomerang_core::domain::{BackoffKind, CatchUp, Notify, OnUnknown};

/// A duration as written (`30s`, `1h 30m`, `2days`). Bounds are the domain's to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationText {
    text: String,
    value: Duration,
}

impl DurationText {
    pub fn value(&self) -> Duration {
        self.value
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl FromStr for DurationText {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let value = humantime::parse_duration(text.trim()).map_err(|_| {
            format!("`{text}` is not a duration; use a positive value like `30s`, `5m` or `1h`")
        })?;
        Ok(Self {
            text: text.to_string(),
            value,
        })
    }
}

/// A client's own duration, written as humantime writes it (`1m 30s`).
impl From<Duration> for DurationText {
    fn from(value: Duration) -> Self {
        Self {
            text: humantime::format_duration(value).to_string(),
            value,
        }
    }
}

impl fmt::Display for DurationText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A point in time as written: RFC 3339, any offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeText {
    text: String,
    value: DateTime<Utc>,
}

impl TimeText {
    pub fn value(&self) -> DateTime<Utc> {
        self.value
    }
}

impl FromStr for TimeText {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let value = DateTime::parse_from_rfc3339(text.trim())
            .map_err(|_| "must be an RFC 3339 time such as 2030-01-01T12:00:00Z".to_string())?;
        Ok(Self {
            text: text.to_string(),
            value: value.with_timezone(&Utc),
        })
    }
}

impl From<DateTime<Utc>> for TimeText {
    fn from(value: DateTime<Utc>) -> Self {
        Self {
            text: value.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            value,
        }
    }
}

/// Written as text, read back through [`FromStr`]: a value that does not parse is refused
/// with its own words, at its own path.
macro_rules! as_text {
    ($($ty:ty),*) => {$(
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.text)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
                let text = String::deserialize(de)?;
                text.parse().map_err(D::Error::custom)
            }
        }
    )*};
}

as_text!(DurationText, TimeText);

/// One of the domain's choices, as a request names it.
pub trait Choice: Sized + Copy + 'static {
    /// Every value, in the order the refusal lists them.
    const ALL: &'static [Self];
    fn name(self) -> &'static str;

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == text)
    }

    /// "must be `final` or `every`", "must be `fixed`, `linear` or `exponential`".
    fn must_be() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|c| format!("`{}`", c.name()))
            .collect();
        match names.split_last() {
            Some((last, [])) => format!("must be {last}"),
            Some((last, rest)) => format!("must be {} or {last}", rest.join(", ")),
            None => "must be nothing".to_string(),
        }
    }
}

impl Choice for Notify {
    const ALL: &'static [Self] = &[Notify::Final, Notify::Every, Notify::Never];
    fn name(self) -> &'static str {
        match self {
            Notify::Final => "final",
            Notify::Every => "every",
            Notify::Never => "never",
        }
    }
}

impl Choice for OnUnknown {
    const ALL: &'static [Self] = &[OnUnknown::Cancel, OnUnknown::Release];
    fn name(self) -> &'static str {
        match self {
            OnUnknown::Cancel => "cancel",
            OnUnknown::Release => "release",
        }
    }
}

impl Choice for CatchUp {
    const ALL: &'static [Self] = &[CatchUp::One, CatchUp::None];
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Choice for BackoffKind {
    const ALL: &'static [Self] = &[
        BackoffKind::Fixed,
        BackoffKind::Linear,
        BackoffKind::Exponential,
    ];
    fn name(self) -> &'static str {
        match self {
            BackoffKind::Fixed => "fixed",
            BackoffKind::Linear => "linear",
            BackoffKind::Exponential => "exponential",
        }
    }
}

/// `on_key`: what a registration does to the task already registered under its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnKey {
    /// Replace it, while none of its attempts has begun.
    Replace,
}

impl Choice for OnKey {
    const ALL: &'static [Self] = &[OnKey::Replace];
    fn name(self) -> &'static str {
        "replace"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_keeps_its_text_and_refuses_in_todays_words() {
        let d: DurationText = " 90s".parse().unwrap();
        assert_eq!((d.as_str(), d.value()), (" 90s", Duration::from_secs(90)));
        assert_eq!(
            "soon".parse::<DurationText>().unwrap_err(),
            "`soon` is not a duration; use a positive value like `30s`, `5m` or `1h`"
        );
        assert_eq!(
            "tomorrow".parse::<TimeText>().unwrap_err(),
            "must be an RFC 3339 time such as 2030-01-01T12:00:00Z"
        );
        assert_eq!(
            serde_json::to_string(&"1h 30m".parse::<DurationText>().unwrap()).unwrap(),
            r#""1h 30m""#
        );
    }

    #[test]
    fn a_choice_names_every_value_it_takes() {
        assert_eq!(Notify::must_be(), "must be `final`, `every` or `never`");
        assert_eq!(
            BackoffKind::must_be(),
            "must be `fixed`, `linear` or `exponential`"
        );
        assert_eq!(OnKey::must_be(), "must be `replace`");
        assert_eq!(CatchUp::must_be(), "must be `one` or `none`");
        assert_eq!(Notify::parse("every"), Some(Notify::Every));
        assert_eq!(Notify::parse("EVERY"), None);
    }
}
