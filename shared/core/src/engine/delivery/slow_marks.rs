//! The destinations whose calls took long of late, and until when each counts as slow
//! (the slow lane's memory, [`super::slow_lane`]).

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::domain::{Destination, TenantId};

/// How long one slow call keeps its destination in the slow lane: long enough that a
/// receiver slow for minutes is not tried the shared way at every turn, short enough that
/// one that recovers is soon back in the shared lane.
pub(in crate::engine) const SLOW_MEMORY: chrono::Duration = chrono::Duration::minutes(5);
/// Destinations remembered at most: past it, those whose mark ran out are dropped, then
/// the one whose mark runs out first.
const KEEP: usize = 4096;

/// The destinations marked slow, and until when.
#[derive(Default)]
pub(in crate::engine) struct SlowDestinations(
    Mutex<HashMap<(TenantId, Destination), DateTime<Utc>>>,
);

impl SlowDestinations {
    pub(in crate::engine) fn mark(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        now: DateTime<Utc>,
    ) {
        let mut marks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if marks.len() >= KEEP {
            marks.retain(|_, until| *until > now);
        }
        if marks.len() >= KEEP {
            let soonest = marks.iter().min_by_key(|(_, until)| **until);
            if let Some(key) = soonest.map(|(key, _)| key.clone()) {
                marks.remove(&key);
            }
        }
        marks.insert((tenant.clone(), destination.clone()), now + SLOW_MEMORY);
    }

    pub(in crate::engine) fn is_slow(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        now: DateTime<Utc>,
    ) -> bool {
        let marks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Most deliveries ask with none marked: no key is made for them.
        !marks.is_empty()
            && (marks.get(&(tenant.clone(), destination.clone()))).is_some_and(|until| *until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marks_stay_within_their_bound() {
        let slow = SlowDestinations::default();
        let tenant = TenantId::parse("acme").unwrap();
        let now = chrono::Utc::now();
        for i in 0..KEEP + 10 {
            let destination = Destination::of(&format!("https://h{i}.test/"));
            let at = now + chrono::Duration::milliseconds(i as i64);
            slow.mark(&tenant, &destination, at);
        }
        assert_eq!(slow.0.lock().unwrap().len(), KEEP);
        let newest = Destination::of(&format!("https://h{}.test/", KEEP + 9));
        assert!(slow.is_slow(&tenant, &newest, now));
        let oldest = Destination::of("https://h0.test/");
        assert!(
            !slow.is_slow(&tenant, &oldest, now),
            "the soonest to run out went"
        );
    }
}
