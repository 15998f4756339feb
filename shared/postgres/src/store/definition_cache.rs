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
pub(crate) struct DefinitionCache(Arc<Mutex<Entries>>);

#[derive(Default)]
struct Entries {
    entries: HashMap<Key, Entry>,
    /// How many forgets so far: a read that began before one does not note what it
    /// found, which may be the document just changed.
    forgets: u64,
}

/// A read about to be made, for [`DefinitionCache::put`].
pub(crate) struct Read {
    at: Instant,
    forgets: u64,
}

impl DefinitionCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        super::lock(&self.0)
    }

    /// The stored document (or its absence), if read within [`FRESH_FOR`].
    pub fn get(&self, tenant: &str, kind: &'static str, name: &str) -> Option<Option<String>> {
        let cache = self.lock();
        let (doc, read_at) = cache
            .entries
            .get(&(tenant.to_string(), kind, name.to_string()))?;
        (read_at.elapsed() < FRESH_FOR).then(|| doc.clone())
    }

    /// A read of the table begins now.
    pub fn read(&self) -> Read {
        Read {
            at: Instant::now(),
            forgets: self.lock().forgets,
        }
    }

    /// Notes what `read` found, as of when it was sent (a change that landed meanwhile
    /// is not hidden for longer than [`FRESH_FOR`]), unless a change on this server was
    /// forgotten since it began.
    pub fn put(
        &self,
        (tenant, kind, name): (&str, &'static str, &str),
        doc: Option<String>,
        read: Read,
    ) {
        let mut cache = self.lock();
        if cache.forgets != read.forgets {
            return;
        }
        if cache.entries.len() >= MOST_ENTRIES {
            cache.entries.clear();
        }
        cache
            .entries
            .insert((tenant.to_string(), kind, name.to_string()), (doc, read.at));
    }

    /// Forgets a definition this server is changing.
    pub fn forget(&self, tenant: &str, kind: &'static str, name: &str) {
        let mut cache = self.lock();
        cache.forgets += 1;
        cache
            .entries
            .remove(&(tenant.to_string(), kind, name.to_string()));
    }
}
