//! Where a tenant's bulk jobs are kept: each written conditionally on its version, so that
//! two runners never both move one on; and the running ones, across tenants, for whoever
//! runs them (the local server's loop, the AWS sweeper).

use async_trait::async_trait;

use super::store::StoreError;
use crate::domain::{BulkJob, BulkJobId, TenantId};

/// How many of a tenant's jobs a list returns, newest first.
pub const JOBS_LISTED: usize = 50;

#[async_trait]
pub trait BulkJobs: Send + Sync {
    /// Stores a new job (its id is new: it cannot exist).
    async fn create_job(&self, job: &BulkJob) -> Result<(), StoreError>;

    /// The tenant's job with this id.
    async fn job(&self, tenant: &TenantId, id: &BulkJobId) -> Result<Option<BulkJob>, StoreError>;

    /// Replaces the job if its stored version is `expected_version`; otherwise
    /// [`StoreError::Conflict`].
    async fn save_job(&self, job: &BulkJob, expected_version: u64) -> Result<(), StoreError>;

    /// The tenant's newest jobs, at most [`JOBS_LISTED`], newest first.
    async fn jobs(&self, tenant: &TenantId) -> Result<Vec<BulkJob>, StoreError>;

    /// Every tenant's running jobs.
    async fn running_jobs(&self) -> Result<Vec<(TenantId, BulkJobId)>, StoreError>;
}
