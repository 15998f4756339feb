//! Recently read definitions (policies, templates, breaker settings), kept for a second:
//! every registration reads its tenant's default policy, and without this each would be
//! a round trip to the database for a row that almost never changes.
//!
//! A change made on this server is seen here at once (its entry is dropped); one made on
//! another server is seen within [`FRESH_FOR`], as the tenants' settings are.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a definition read (or found missing) is used without reading it again.
pub(crate) const FRESH_FOR: Duration = Duration::from_secs(1);
/// Past this many entries, the cache starts again empty: a bound, not a policy.
const MOST_ENTRIES: usize = 10_000;

/// Which definition: the tenant, the kind's column value, the name.
type Key = (String, &'static str, String);
/// The stored document (`None`: there is none), and when it was read.
type Entry = (Option<String>, Instant);

#[derive(Clone, Default)]
pub(crate) struct DefinitionCache(Arc<Mutex<HashMap<Key, Entry>>>);

impl DefinitionCache {
    /// The stored document (or its absence), if read within [`FRESH_FOR`].
    pub fn get(&self, tenant: &str, kind: &'static str, name: &str) -> Option<Option<String>> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (doc, read_at) = entries.get(&(tenant.to_string(), kind, name.to_string()))?;
        (read_at.elapsed() < FRESH_FOR).then(|| doc.clone())
    }

    /// Notes what a read found, as of `read_at` (when the read was sent: a change that
    /// landed meanwhile is not hidden for longer than [`FRESH_FOR`]).
    pub fn put(
        &self,
        (tenant, kind, name): (&str, &'static str, &str),
        doc: Option<String>,
        read_at: Instant,
    ) {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MOST_ENTRIES {
            entries.clear();
        }
        entries.insert((tenant.to_string(), kind, name.to_string()), (doc, read_at));
    }

    /// Forgets a definition this server is changing.
    pub fn forget(&self, tenant: &str, kind: &'static str, name: &str) {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(&(tenant.to_string(), kind, name.to_string()));
    }
}
