//! A short-lived cache of lookups that every request or delivery would otherwise repeat
//! (a key's tenant, a tenant's secret or retry policy): warm Lambdas skip the read.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a looked-up value is remembered.
pub const CACHE_TTL: Duration = Duration::from_secs(60);
/// Entries per cache; a full cache starts over (it is only an optimisation).
const CACHE_ENTRIES: usize = 10_000;

pub(crate) struct Cache<V> {
    map: Mutex<HashMap<String, (Instant, V)>>,
    ttl: Duration,
}

impl<V: Clone> Cache<V> {
    pub(crate) fn new() -> Self {
        Self::with_ttl(CACHE_TTL)
    }

    /// One that remembers a value for `ttl` instead of [`CACHE_TTL`].
    pub(crate) fn with_ttl(ttl: Duration) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            ttl,
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<V> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, v)| v.clone())
    }

    pub(crate) fn put(&self, key: String, value: V) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= CACHE_ENTRIES {
            map.clear();
        }
        map.insert(key, (Instant::now(), value));
    }

    pub(crate) fn forget(&self, key: &str) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(key);
    }
}
