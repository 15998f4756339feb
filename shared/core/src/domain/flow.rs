//! Flow control by key: tasks that share a flow key share its limits, whatever their
//! destinations: at most `parallelism` of them in flight, and at most `rate` started per
//! `period`. Over-limit tasks wait; none is refused.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::duration_ms;
use super::invalid::{within, Invalid};
use super::limits::{
    DEFAULT_FLOW_PERIOD, MAX_FLOW_KEY, MAX_FLOW_PERIOD, MAX_FLOW_RATE, MAX_PARALLELISM,
    MIN_FLOW_PERIOD,
};

/// A flow's name, chosen by the caller (per tenant): 1–255 bytes, no control characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FlowKey(String);

impl FlowKey {
    pub fn parse(raw: impl Into<String>) -> Result<Self, Invalid> {
        let raw = raw.into();
        if raw.is_empty() || raw.len() > MAX_FLOW_KEY {
            return Err(Invalid::new(
                "key",
                format!("must be 1 to {MAX_FLOW_KEY} bytes"),
            ));
        }
        if raw.chars().any(char::is_control) {
            return Err(Invalid::new("key", "must not hold control characters"));
        }
        Ok(Self(raw))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for FlowKey {
    type Error = Invalid;
    fn try_from(raw: String) -> Result<Self, Invalid> {
        Self::parse(raw)
    }
}

impl From<FlowKey> for String {
    fn from(key: FlowKey) -> String {
        key.0
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A task's flow: its key and the key's limits, as the task was registered with them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSpec {
    key: FlowKey,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rate: Option<u32>,
    #[serde(with = "duration_ms")]
    period: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parallelism: Option<u32>,
}

impl FlowSpec {
    /// A flow, if its rules hold: `rate` 1–[`MAX_FLOW_RATE`] per `period`
    /// ([`MIN_FLOW_PERIOD`]–[`MAX_FLOW_PERIOD`], default [`DEFAULT_FLOW_PERIOD`]),
    /// `parallelism` 1–[`MAX_PARALLELISM`], and at least one of the two. The refusal names
    /// the field under `flow`.
    pub fn new(
        key: &str,
        rate: Option<i64>,
        period: Option<Duration>,
        parallelism: Option<i64>,
    ) -> Result<Self, Invalid> {
        let under = |e: Invalid| e.under("flow");
        let key = FlowKey::parse(key).map_err(under)?;
        let count = |field: &'static str, value: Option<i64>, max: u32| match value {
            None => Ok(None),
            Some(n) if (1..=i64::from(max)).contains(&n) => Ok(Some(n as u32)),
            Some(_) => Err(Invalid::new(field, format!("must be 1 to {max}")).under("flow")),
        };
        let rate = count("rate", rate, MAX_FLOW_RATE)?;
        let parallelism = count("parallelism", parallelism, MAX_PARALLELISM)?;
        let period = within(
            "period",
            period.unwrap_or(DEFAULT_FLOW_PERIOD),
            MIN_FLOW_PERIOD,
            MAX_FLOW_PERIOD,
        )
        .map_err(under)?;
        if rate.is_none() && parallelism.is_none() {
            return Err(Invalid::new("flow", "give `rate`, `parallelism` or both"));
        }
        Ok(Self {
            key,
            rate,
            period,
            parallelism,
        })
    }

    pub fn key(&self) -> &FlowKey {
        &self.key
    }

    /// Most tasks started per [`Self::period`], if limited.
    pub fn rate(&self) -> Option<u32> {
        self.rate
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    /// Most tasks in flight at once, if limited.
    pub fn parallelism(&self) -> Option<u32> {
        self.parallelism
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(
        key: &str,
        rate: Option<i64>,
        period: Option<Duration>,
        parallelism: Option<i64>,
    ) -> String {
        FlowSpec::new(key, rate, period, parallelism)
            .unwrap_err()
            .field
            .to_string()
    }

    #[test]
    fn each_broken_rule_names_its_field() {
        let second = Some(Duration::from_secs(1));
        assert_eq!(refused("k", Some(0), second, None), "flow.rate");
        assert_eq!(refused("k", Some(-5), second, None), "flow.rate");
        assert_eq!(refused("k", None, second, Some(0)), "flow.parallelism");
        assert_eq!(refused("k", None, second, Some(1001)), "flow.parallelism");
        assert_eq!(refused(&"k".repeat(300), Some(1), second, None), "flow.key");
        assert_eq!(refused("", Some(1), second, None), "flow.key");
        assert_eq!(refused("a\nb", Some(1), second, None), "flow.key");
        assert_eq!(
            refused("k", Some(1), Some(Duration::ZERO), None),
            "flow.period"
        );
        assert_eq!(refused("k", None, second, None), "flow");
    }

    #[test]
    fn a_flow_keeps_its_limits_and_defaults_its_period() {
        let flow = FlowSpec::new("payments:acme", Some(50), None, Some(3)).unwrap();
        assert_eq!(flow.key().as_str(), "payments:acme");
        assert_eq!(
            (flow.rate(), flow.period(), flow.parallelism()),
            (Some(50), DEFAULT_FLOW_PERIOD, Some(3))
        );
        let json = serde_json::to_string(&flow).unwrap();
        assert_eq!(serde_json::from_str::<FlowSpec>(&json).unwrap(), flow);
        let max = FlowSpec::new(&"k".repeat(MAX_FLOW_KEY), None, None, Some(1000));
        assert!(max.is_ok());
    }
}
