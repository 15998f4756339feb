//! The contract of every timer.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::fixtures::unique_tenant;
use crate::domain::{AttemptRef, TaskId};

/// Watches a timer's fires, however the adapter delivers them.
#[async_trait::async_trait]
pub trait TimerProbe: Send {
    /// The next fire, or `None` if nothing fired within `within`.
    async fn next_fire(&mut self, within: Duration) -> Option<AttemptRef>;
}

/// Waits for the fire of `attempt`, skipping others (duplicates are allowed).
async fn await_fire(probe: &mut dyn TimerProbe, attempt: &AttemptRef) -> std::time::Instant {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "timer never fired for {attempt:?}");
        if probe.next_fire(left).await.as_ref() == Some(attempt) {
            return std::time::Instant::now();
        }
    }
}

/// Waits for the first fire of each of `attempts`, in any order, skipping others.
async fn await_fires(
    probe: &mut dyn TimerProbe,
    attempts: &[&AttemptRef],
) -> std::collections::HashMap<AttemptRef, std::time::Instant> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut fired = std::collections::HashMap::new();
    while fired.len() < attempts.len() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            !left.is_zero(),
            "timer never fired for some of {attempts:?}"
        );
        if let Some(got) = probe.next_fire(left).await {
            if attempts.contains(&&got) {
                fired.entry(got).or_insert_with(std::time::Instant::now);
            }
        }
    }
    fired
}

/// The contract of every [`crate::ports::Timer`]: a fire for each armed attempt, never early (to the
/// second), overdue attempts at once, arming the same attempt twice is harmless, and an
/// attempt put off fires then.
pub async fn timer_contract(timer: Arc<dyn crate::ports::Timer>, probe: &mut dyn TimerProbe) {
    let tenant = unique_tenant("timer");
    let attempt = |n| AttemptRef::delivery(tenant.clone(), TaskId::new(), n);
    let (a, b, c, d) = (attempt(1), attempt(4), attempt(2), attempt(3));
    let armed_at = std::time::Instant::now();
    timer
        .arm(a.clone(), Utc::now() + chrono::Duration::seconds(2))
        .await
        .unwrap();
    timer
        .arm(b.clone(), Utc::now() - chrono::Duration::seconds(30))
        .await
        .unwrap();
    let due_c = Utc::now() + chrono::Duration::seconds(1);
    timer.arm(c.clone(), due_c).await.unwrap();
    timer.arm(c.clone(), due_c).await.unwrap();
    timer
        .put_off(d.clone(), Utc::now() + chrono::Duration::seconds(1))
        .await
        .unwrap();

    let fired_b = await_fire(probe, &b).await;
    assert!(
        fired_b - armed_at < Duration::from_secs(10),
        "an overdue attempt fires at once"
    );
    let fired = await_fires(probe, &[&c, &d, &a]).await;
    let since = |x: &AttemptRef| fired[x] - armed_at;
    assert!(since(&c) >= Duration::from_millis(900), "never early");
    assert!(
        since(&d) >= Duration::from_millis(900),
        "a put-off attempt fires no earlier than it was put off to"
    );
    assert!(since(&a) >= Duration::from_millis(1900), "never early");
}
