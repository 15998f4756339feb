//! The engine reads time and randomness only through these ports, so tests can set both.

use chrono::{DateTime, Utc};

pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Uniform draws in `[0, 1)`; the retry policy's jitter uses them.
pub trait Random: Send + Sync {
    fn draw(&self) -> f64;
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadRandom;

impl Random for ThreadRandom {
    fn draw(&self) -> f64 {
        rand::random()
    }
}

#[cfg(any(test, feature = "testing"))]
pub use manual::{FixedRandom, ManualClock};

#[cfg(any(test, feature = "testing"))]
mod manual {
    use std::sync::Mutex;

    use chrono::{DateTime, Utc};

    use super::{Clock, Random};

    /// A clock that moves only when told to.
    #[derive(Debug)]
    pub struct ManualClock(Mutex<DateTime<Utc>>);

    impl ManualClock {
        pub fn new(start: DateTime<Utc>) -> Self {
            Self(Mutex::new(start))
        }

        pub fn advance(&self, by: std::time::Duration) {
            let mut now = self.0.lock().expect("clock lock");
            *now += chrono::Duration::from_std(by).expect("duration in range");
        }

        pub fn set(&self, to: DateTime<Utc>) {
            *self.0.lock().expect("clock lock") = to;
        }
    }

    impl Clock for ManualClock {
        fn now(&self) -> DateTime<Utc> {
            *self.0.lock().expect("clock lock")
        }
    }

    /// Always draws the same value.
    #[derive(Clone, Copy, Debug)]
    pub struct FixedRandom(pub f64);

    impl Random for FixedRandom {
        fn draw(&self) -> f64 {
            self.0
        }
    }
}
