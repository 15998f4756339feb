//! Dead letters kept in a list, for engine unit tests; can be told to fail the next sends.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::domain::DeadLetter;
use crate::ports::{DeadLetterError, DeadLetters};

#[derive(Default)]
pub struct MemoryDeadLetters {
    letters: Mutex<Vec<DeadLetter>>,
    failures_left: AtomicU32,
}

impl MemoryDeadLetters {
    pub fn fail_next(&self, n: u32) {
        self.failures_left.store(n, Ordering::SeqCst);
    }

    pub fn letters(&self) -> Vec<DeadLetter> {
        self.letters.lock().expect("dead letters lock").clone()
    }
}

#[async_trait]
impl DeadLetters for MemoryDeadLetters {
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError> {
        let left = self.failures_left.load(Ordering::SeqCst);
        if left > 0 {
            self.failures_left.store(left - 1, Ordering::SeqCst);
            return Err(DeadLetterError("injected failure".into()));
        }
        self.letters
            .lock()
            .expect("dead letters lock")
            .push(letter.clone());
        Ok(())
    }
}
