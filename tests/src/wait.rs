//! Waiting for a condition with a deadline, instead of sleeping and hoping.

use std::time::{Duration, Instant};

/// Polls `check` until it returns `Some`, or panics with `what` after `within`.
pub async fn wait_for<T, F, Fut>(what: &str, within: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    match try_wait_for(within, check).await {
        Some(v) => v,
        None => panic!("timed out waiting for {what}"),
    }
}

/// Polls `check` until it returns `Some`, or gives `None` after `within` (for a test that
/// has something to show before it fails).
pub async fn try_wait_for<T, F, Fut>(within: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
