//! A slow lane in memory: what it was handed, for the engine's tests.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::domain::AttemptRef;
use crate::ports::{SlowLane, TimerError};

#[derive(Default)]
pub struct MemorySlowLane {
    handed: Mutex<Vec<AttemptRef>>,
    /// While set, every hand-over is refused (the queue is unreachable).
    pub refusing: AtomicBool,
    /// Hand-overs refused.
    pub refused: AtomicU32,
}

impl MemorySlowLane {
    /// The attempts handed over, in order.
    pub fn handed(&self) -> Vec<AttemptRef> {
        self.handed.lock().expect("slow lane lock").clone()
    }
}

#[async_trait]
impl SlowLane for MemorySlowLane {
    async fn hand_over(&self, at: &AttemptRef) -> Result<(), TimerError> {
        if self.refusing.load(Ordering::SeqCst) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(TimerError("the slow lane is unreachable".into()));
        }
        self.handed.lock().expect("slow lane lock").push(at.clone());
        Ok(())
    }
}
