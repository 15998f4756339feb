//! The one helper for retrying an infrastructure call inside a request. The AWS SDK
//! already retries throttling and 5xx answers itself; this is for what must be retried on
//! top of that before it is left to the sweep (today: the dead-letter send).

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

/// Runs `op` up to `attempts` times, doubling the pause from `first_pause` between tries.
pub async fn with_retries<T, E, F, Fut>(
    what: &str,
    attempts: u32,
    first_pause: Duration,
    mut op: F,
) -> Result<T, E>
where
    E: Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut pause = first_pause;
    let mut tried = 1;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if tried >= attempts => return Err(e),
            Err(e) => {
                tracing::warn!(what, tried, error = %e, "infrastructure call failed; retrying");
                tokio::time::sleep(pause).await;
                pause = pause.saturating_mul(2);
                tried += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn retries_until_success_then_stops() {
        let calls = AtomicU32::new(0);
        let r: Result<u32, String> = with_retries("t", 5, Duration::from_millis(1), || async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n < 3 {
                Err(format!("fail {n}"))
            } else {
                Ok(n)
            }
        })
        .await;
        assert_eq!(r, Ok(3));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn gives_up_after_the_last_attempt() {
        let calls = AtomicU32::new(0);
        let r: Result<(), String> = with_retries("t", 2, Duration::from_millis(1), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err("down".to_string())
        })
        .await;
        assert_eq!(r, Err("down".to_string()));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
