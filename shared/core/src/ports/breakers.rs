//! Where a tenant's circuit breakers are kept, one per destination, shared by every
//! instance that shares the store: each instance counts failures in a row by itself, and
//! the breaker it opens, its probes and its closing are written here, conditionally, so
//! that the fleet opens it once, probes one call at a time, and raises each alert once.

use async_trait::async_trait;

use super::store::StoreError;
use crate::domain::{Breaker, Destination, TenantId};

/// A breaker as stored, with the version its next write is conditional on.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredBreaker {
    pub breaker: Breaker,
    pub version: u64,
}

#[async_trait]
pub trait Breakers: Send + Sync {
    /// The tenant's breaker at `destination`, if one was ever written.
    async fn breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
    ) -> Result<Option<StoredBreaker>, StoreError>;

    /// Writes `breaker` if the stored one is still at `version` (`None`: none written
    /// yet); `false` if another write came first.
    async fn save_breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        breaker: &Breaker,
        version: Option<u64>,
    ) -> Result<bool, StoreError>;

    /// The tenant's open breakers, by destination.
    async fn open_breakers(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(Destination, Breaker)>, StoreError>;
}
