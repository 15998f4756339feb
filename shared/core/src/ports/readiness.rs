//! Whether a backend can take work now: what a server's `/readyz` answers, for a load
//! balancer that should send traffic elsewhere meanwhile.

use async_trait::async_trait;

#[async_trait]
pub trait Readiness: Send + Sync {
    /// The checks that fail now, each as `name: why`; empty when ready. Cheap to ask
    /// often: an adapter answers from a result at most a second old.
    async fn failing(&self) -> Vec<String>;
}

/// A readiness answer kept for a while, so that a flood of probes does not become a flood
/// of checks: one check runs at a time, and those asking meanwhile get its answer.
pub struct RecentAnswer {
    keep: std::time::Duration,
    last: tokio::sync::Mutex<Option<(std::time::Instant, Vec<String>)>>,
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
        check: impl std::future::Future<Output = Vec<String>>,
    ) -> Vec<String> {
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = &*last {
            if at.elapsed() < self.keep {
                return answer.clone();
            }
        }
        let answer = check.await;
        *last = Some((std::time::Instant::now(), answer.clone()));
        answer
    }
}
