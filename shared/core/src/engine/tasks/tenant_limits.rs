//! Per-tenant limits that keep one tenant from exhausting a server: how many API requests
//! it makes a second, and how many unfinished tasks it may have. Over either, the caller
//! is told to come back later (`429` with `Retry-After`); nothing is half done.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::domain::{Status, TenantId};
use crate::engine::{Engine, EngineError};

/// The limits, per tenant, in one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TenantLimits {
    /// Most API requests a tenant makes a second; it may save up two seconds' worth.
    pub requests_per_second: u32,
    /// Most unfinished (held, scheduled or delivering) tasks a tenant may have, where the
    /// store can count them.
    pub max_pending: u64,
}

pub const DEFAULT_TENANT_RATE: u32 = 5_000;
pub const TENANT_RATE_RANGE: (u32, u32) = (1, 1_000_000);
pub const DEFAULT_MAX_PENDING: u64 = 1_000_000;
pub const MAX_PENDING_RANGE: (u64, u64) = (1, 1_000_000_000);

impl Default for TenantLimits {
    fn default() -> Self {
        Self {
            requests_per_second: DEFAULT_TENANT_RATE,
            max_pending: DEFAULT_MAX_PENDING,
        }
    }
}

/// How long a tenant's count of unfinished tasks is trusted before it is counted again in
/// the store (meanwhile, registrations are added to it; finished tasks are not taken off,
/// so it errs on the side of refusing).
const RECOUNT: chrono::Duration = chrono::Duration::seconds(5);
/// Tenants kept before the idle ones are forgotten.
const KEEP: usize = 10_000;

#[derive(Default)]
pub(crate) struct TenantGuards {
    buckets: Mutex<HashMap<TenantId, Bucket>>,
    pending: Mutex<HashMap<TenantId, Pending>>,
}

struct Bucket {
    tokens: f64,
    at: DateTime<Utc>,
}

struct Pending {
    /// Unfinished tasks the store counted at `at`.
    counted: u64,
    /// Tasks registered here since.
    added: u64,
    at: DateTime<Utc>,
}

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
        let now = self.ports.clock.now();
        let fresh = |p: &Pending| now - p.at < RECOUNT;
        let known = lock(&self.guards.pending).get(tenant).is_some_and(fresh);
        if !known {
            let by_status = counts.count_by_status(Some(tenant)).await?;
            let unfinished = (by_status.iter())
                .filter(|(s, _)| matches!(s, Status::Held | Status::Scheduled | Status::Delivering))
                .map(|(_, n)| n)
                .sum();
            let mut pending = lock(&self.guards.pending);
            if pending.len() >= KEEP {
                pending.retain(|_, p| fresh(p));
            }
            let counted = Pending {
                counted: unfinished,
                added: 0,
                at: now,
            };
            pending.insert(tenant.clone(), counted);
        }
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
}
