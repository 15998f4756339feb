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
/// Destinations remembered at most; past it, those whose mark ran out are dropped.
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
        marks.insert((tenant.clone(), destination.clone()), now + SLOW_MEMORY);
    }

    pub(in crate::engine) fn is_slow(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        now: DateTime<Utc>,
    ) -> bool {
        let marks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (marks.get(&(tenant.clone(), destination.clone()))).is_some_and(|until| *until > now)
    }
}
