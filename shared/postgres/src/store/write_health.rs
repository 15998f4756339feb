//! Whether this server's writes are going through: a probe write can succeed while the
//! writes that matter fail (a full disk still takes an update that fits on its page), so
//! readiness also looks at the writer's last transactions.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::lock;

/// How long a failed write keeps the server unready, unless a write succeeds first. Long
/// enough for a load balancer to see it; short enough that traffic comes back to find out
/// whether the database has recovered (an unready server gets few writes to tell it).
pub(crate) const UNREADY_AFTER_FAILURE: Duration = Duration::from_secs(5);

#[derive(Clone, Default)]
pub(crate) struct WriteHealth {
    /// The last failure not followed by a success: when, and what the database said.
    failed: Arc<Mutex<Option<(Instant, String)>>>,
}

impl WriteHealth {
    pub fn failed(&self, reason: String) {
        *lock(&self.failed) = Some((Instant::now(), reason));
    }

    pub fn succeeded(&self) {
        *lock(&self.failed) = None;
    }

    /// The reason, if a write failed within [`UNREADY_AFTER_FAILURE`] with no success since.
    pub fn failing(&self) -> Option<String> {
        let failed = lock(&self.failed);
        let (at, reason) = failed.as_ref()?;
        (at.elapsed() < UNREADY_AFTER_FAILURE).then(|| reason.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_counts_until_a_success() {
        let health = WriteHealth::default();
        assert_eq!(health.failing(), None);
        health.failed("could not extend file".into());
        assert_eq!(health.failing().as_deref(), Some("could not extend file"));
        health.succeeded();
        assert_eq!(health.failing(), None);
    }
}
