//! Per-tenant limits that keep one tenant from exhausting a server: how many API requests
//! it makes a second, and how many unfinished tasks it may have. Over either, the caller
//! is told to come back later (`429` with `Retry-After`); nothing is half done.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use crate::domain::TenantId;

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

#[derive(Default)]
pub(crate) struct TenantGuards {
    pub(super) buckets: Mutex<HashMap<TenantId, Bucket>>,
    pub(super) pending: Mutex<HashMap<TenantId, Pending>>,
    /// One count in the store at a time per tenant: a count reads every task the tenant
    /// has, and the requests that find the last one stale together must not each run one.
    pub(super) counting: Mutex<HashMap<TenantId, Arc<CountGate>>>,
}

/// A tenant's count in the store, one at a time.
#[derive(Default)]
pub(super) struct CountGate {
    /// Held while a count runs.
    pub(super) running: tokio::sync::Mutex<()>,
    /// Counts ended, well or not: a request that waited for the gate knows whether one
    /// ended meanwhile.
    pub(super) ended: AtomicU64,
}

pub(super) struct Bucket {
    pub(super) tokens: f64,
    pub(super) at: DateTime<Utc>,
}

pub(super) struct Pending {
    /// Unfinished tasks the store counted at `at`.
    pub(super) counted: u64,
    /// Tasks registered here since.
    pub(super) added: u64,
    pub(super) at: DateTime<Utc>,
}
