//! Whether a backend can take work now: what a server's `/readyz` answers, for a load
//! balancer that should send traffic elsewhere meanwhile.

use std::fmt;

use async_trait::async_trait;

#[async_trait]
pub trait Readiness: Send + Sync {
    /// The checks that fail now; empty when ready. Cheap to ask often: an adapter answers
    /// from a result at most a second old.
    async fn failing(&self) -> Vec<Failing>;
}

/// A readiness check that fails. `/readyz` needs no key, so it shows anyone which check
/// failed and what it found, never the error underneath: that may name the database's
/// host, a path or a table's constraint, and goes to the server's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failing {
    /// The check: `database`, `disk`, `store`, `table`, `timer`.
    pub check: &'static str,
    /// What it found, for anyone to read.
    pub found: String,
    /// The error underneath, for the log only.
    pub cause: Option<String>,
}

impl Failing {
    pub fn new(check: &'static str, found: impl Into<String>) -> Self {
        Self {
            check,
            found: found.into(),
            cause: None,
        }
    }

    pub fn because(self, cause: impl fmt::Display) -> Self {
        Self {
            cause: Some(cause.to_string()),
            ..self
        }
    }

    /// `check: found`, without the cause: what `/readyz` shows.
    pub fn public(&self) -> String {
        format!("{}: {}", self.check, self.found)
    }
}

/// The whole of it, cause included: what the log shows.
impl fmt::Display for Failing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check, self.found)?;
        match &self.cause {
            Some(cause) => write!(f, ": {cause}"),
            None => Ok(()),
        }
    }
}

/// A readiness answer kept for a while, so that a flood of probes does not become a flood
/// of checks: one check runs at a time, and those asking meanwhile get its answer. A check
/// that fails is logged in full, so at most once per answer kept.
pub struct RecentAnswer {
    keep: std::time::Duration,
    last: tokio::sync::Mutex<Option<(std::time::Instant, Vec<Failing>)>>,
}

impl RecentAnswer {
    pub fn new(keep: std::time::Duration) -> Self {
        Self {
            keep,
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The last answer if it is recent, else `check`'s, kept.
    pub async fn or_check(
        &self,
        check: impl std::future::Future<Output = Vec<Failing>>,
    ) -> Vec<Failing> {
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = &*last {
            if at.elapsed() < self.keep {
                return answer.clone();
            }
        }
        let answer = check.await;
        for failing in &answer {
            tracing::warn!(check = failing.check, "not ready: {failing}");
        }
        *last = Some((std::time::Instant::now(), answer.clone()));
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::Failing;

    #[test]
    fn the_public_text_leaves_the_cause_to_the_log() {
        let failing = Failing::new("database", "a write failed")
            .because("connection to 10.0.3.7:5432 refused");
        assert_eq!(failing.public(), "database: a write failed");
        assert_eq!(
            failing.to_string(),
            "database: a write failed: connection to 10.0.3.7:5432 refused"
        );
    }
}
