//! Admitting a tenant's requests and registrations under its limits
//! ([`super::tenant_limits`]).

use super::tenant_limits::{Bucket, Pending};
use crate::domain::{Status, TenantId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::ports::{StatusCounts, StoreError};
use chrono::{DateTime, Utc};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a tenant's count of unfinished tasks is trusted before it is counted again in
/// the store (meanwhile, registrations are added to it; finished tasks are not taken off,
/// so it errs on the side of refusing).
const RECOUNT: chrono::Duration = chrono::Duration::seconds(5);
/// Tenants kept before the idle ones are forgotten.
const KEEP: usize = 10_000;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn limited(detail: String, retry_after: Duration) -> EngineError {
    EngineError::Limited {
        detail,
        retry_after,
    }
}

impl Engine {
    /// Counts one API request of `tenant`; refused if it is over its rate, saying when the
    /// next one will be allowed.
    pub fn admit_request(&self, tenant: &TenantId) -> Result<(), EngineError> {
        let rate = f64::from(self.settings.tenant_limits.requests_per_second.max(1));
        let burst = 2.0 * rate;
        let now = self.ports.clock.now();
        let seconds_since = |at: DateTime<Utc>| (now - at).num_milliseconds().max(0) as f64 / 1e3;
        let mut buckets = lock(&self.guards.buckets);
        if buckets.len() >= KEEP {
            // A bucket refilled to the brim is the same as none.
            buckets.retain(|_, b| b.tokens + seconds_since(b.at) * rate < burst);
        }
        let bucket = (buckets.entry(tenant.clone())).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        bucket.tokens = (bucket.tokens + seconds_since(bucket.at) * rate).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait = Duration::from_secs_f64((1.0 - bucket.tokens) / rate);
        Err(limited(
            format!("more than {rate} requests a second for this tenant"),
            wait.max(Duration::from_secs(1)),
        ))
    }

    /// Makes room for `n` more unfinished tasks of `tenant`, or refuses if that would take
    /// it over its limit. Where the store cannot count tasks (DynamoDB), there is no limit.
    pub(in crate::engine) async fn admit_pending(
        &self,
        tenant: &TenantId,
        n: u64,
    ) -> Result<(), EngineError> {
        let Some(counts) = &self.ports.store.counts else {
            return Ok(());
        };
        let max = self.settings.tenant_limits.max_pending;
        self.recount_if_stale(counts.as_ref(), tenant).await?;
        let mut pending = lock(&self.guards.pending);
        let Some(count) = pending.get_mut(tenant) else {
            return Ok(());
        };
        if count.counted + count.added + n > max {
            return Err(limited(
                format!("this tenant has as many unfinished tasks as it may ({max})"),
                RECOUNT.to_std().unwrap_or(Duration::from_secs(5)),
            ));
        }
        count.added += n;
        Ok(())
    }

    /// Counts `tenant`'s unfinished tasks in the store, unless a count younger than
    /// [`RECOUNT`] is known. One request counts at a time: while it does, the others go on
    /// with the older count if there is one, and wait for this one if there is none, and
    /// then take its outcome (a failed count fails them too, rather than each counting
    /// in turn).
    async fn recount_if_stale(
        &self,
        counts: &dyn StatusCounts,
        tenant: &TenantId,
    ) -> Result<(), StoreError> {
        let now = self.ports.clock.now();
        let known = match lock(&self.guards.pending).get(tenant) {
            Some(p) if now - p.at < RECOUNT => return Ok(()),
            known => known.is_some(),
        };
        let gate = {
            let mut counting = lock(&self.guards.counting);
            if counting.len() >= KEEP {
                counting.retain(|_, gate| Arc::strong_count(gate) > 1);
            }
            counting.entry(tenant.clone()).or_default().clone()
        };
        let seen = gate.ended.load(Ordering::SeqCst);
        let _running = match gate.running.try_lock() {
            Ok(running) => running,
            Err(_) if known => return Ok(()),
            Err(_) => gate.running.lock().await,
        };
        if gate.ended.load(Ordering::SeqCst) != seen {
            return match lock(&self.guards.pending).contains_key(tenant) {
                true => Ok(()),
                false => Err(StoreError::Unavailable(
                    "the tenant's unfinished tasks could not be counted".into(),
                )),
            };
        }
        let counted = self.count_unfinished(counts, tenant).await;
        gate.ended.fetch_add(1, Ordering::SeqCst);
        counted
    }

    /// Counts `tenant`'s unfinished tasks in the store. The registrations admitted while
    /// it counts stay added to the new count: the count may not have seen them (and if it
    /// did, they are counted twice until the next, which errs on the side of refusing).
    async fn count_unfinished(
        &self,
        counts: &dyn StatusCounts,
        tenant: &TenantId,
    ) -> Result<(), StoreError> {
        let at = self.ports.clock.now();
        let added_before = lock(&self.guards.pending)
            .get(tenant)
            .map_or(0, |p| p.added);
        let by_status = counts.count_by_status(Some(tenant)).await?;
        let unfinished = (by_status.iter())
            .filter(|(s, _)| matches!(s, Status::Held | Status::Scheduled | Status::Delivering))
            .map(|(_, n)| n)
            .sum();
        let mut pending = lock(&self.guards.pending);
        let added = (pending.get(tenant)).map_or(0, |p| p.added.saturating_sub(added_before));
        if pending.len() >= KEEP {
            pending.retain(|_, p| at - p.at < RECOUNT);
        }
        let counted = Pending {
            counted: unfinished,
            added,
            at,
        };
        pending.insert(tenant.clone(), counted);
        Ok(())
    }
}
