//! Where calls to slow destinations run among themselves. A delivery worker that takes
//! attempts in batches (the AWS delivery function, ten at a time) ends a batch only when
//! its slowest call ends: one receiver that takes ten seconds keeps nine fast calls'
//! batch, and the worker running it, for ten seconds. Handed to a lane of their own, slow
//! calls share their batches with other slow calls only.

use async_trait::async_trait;

use super::timer::TimerError;
use crate::domain::AttemptRef;

#[async_trait]
pub trait SlowLane: Send + Sync {
    /// Hands attempt `at`, due now, to the slow lane, which delivers it with
    /// `Engine::deliver_by` and `Route::SlowLane`. Once this returns `Ok` the slow lane
    /// has custody of it.
    async fn hand_over(&self, at: &AttemptRef) -> Result<(), TimerError>;
}
