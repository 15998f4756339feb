//! Bulk jobs: one item each in the tenant's `BJ#` partition (the job as JSON, written
//! conditionally on its version), and, while it runs, a marker in the `BULK` partition
//! naming its tenant, which the sweeper reads to find every running job in one query.
//! A finished job's marker is marked so and expires; the job's item expires after the
//! table's retention, like a finished task.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;

use super::table::{expired, DynamoStore};
use crate::attr::{self, bulk_job as job_attr};
use crate::keys;
use crate::sdk::items::{conflict_or_unavailable, get_s, n, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{BulkJob, BulkJobId, TenantId};
use boomerang_core::ports::{BulkJobs, StoreError, JOBS_LISTED};

/// How long a finished job's marker is kept (it is read only while the job runs).
const MARKER_KEPT: i64 = 24 * 3600;
/// A marker whose job is still missing this long after the job's id was made names a job
/// whose write failed after the marker's: it is marked finished.
const ORPHAN_AFTER: chrono::Duration = chrono::Duration::minutes(1);

fn corrupt(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Corrupt(e.into())
}

fn job_from(item: &Item) -> Result<BulkJob, StoreError> {
    serde_json::from_str(get_s(item, job_attr::DOC)?).map_err(corrupt)
}

impl DynamoStore {
    fn job_item(&self, job: &BulkJob) -> Result<Item, StoreError> {
        let doc = serde_json::to_string(job).map_err(corrupt)?;
        let mut item = keys::bulk_job(&job.tenant, &job.id).to_item();
        item.insert(job_attr::DOC.into(), s(doc));
        item.insert(job_attr::VERSION.into(), n(job.version));
        if let Some(finished) = job.finished_at {
            let expires = finished.timestamp() + self.retention.as_secs() as i64;
            item.insert(attr::EXPIRES.into(), n(expires));
        }
        Ok(item)
    }

    /// The job's marker: running, or finished and expiring.
    async fn put_marker(&self, job: &BulkJob) -> Result<(), StoreError> {
        self.put_marker_of(&job.tenant, &job.id, job.is_running())
            .await
    }

    async fn put_marker_of(
        &self,
        tenant: &TenantId,
        id: &BulkJobId,
        running: bool,
    ) -> Result<(), StoreError> {
        let mut item = keys::running_job(id).to_item();
        item.insert(job_attr::TENANT.into(), s(tenant.to_string()));
        if !running {
            item.insert(job_attr::FINISHED.into(), AttributeValue::Bool(true));
            let expires = Utc::now().timestamp() + MARKER_KEPT;
            item.insert(attr::EXPIRES.into(), n(expires));
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))
    }
}

#[async_trait]
impl BulkJobs for DynamoStore {
    /// The marker first: a job is never running without one (a marker whose job was
    /// never written is found missing by its runner and ignored).
    async fn create_job(&self, job: &BulkJob) -> Result<(), StoreError> {
        self.put_marker(job).await?;
        self.put_new(self.job_item(job)?).await
    }

    async fn job(&self, tenant: &TenantId, id: &BulkJobId) -> Result<Option<BulkJob>, StoreError> {
        let item = self.get_item(&keys::bulk_job(tenant, id), true).await?;
        item.as_ref().map(job_from).transpose()
    }

    /// A job that finishes has its marker marked after it: if that write fails, the
    /// marker lists a finished job until [`Self::running_jobs`] finds it so.
    async fn save_job(&self, job: &BulkJob, expected_version: u64) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.job_item(job)?))
            .condition_expression(format!("{} = :expected", job_attr::VERSION))
            .expression_attribute_values(":expected", n(expected_version))
            .send()
            .await
            .map_err(conflict_or_unavailable)?;
        if !job.is_running() {
            self.put_marker(job).await?;
        }
        Ok(())
    }

    async fn jobs(&self, tenant: &TenantId) -> Result<Vec<BulkJob>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(format!("{} = :pk", attr::PK))
            .expression_attribute_values(":pk", s(keys::bulk_job_partition(tenant)))
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(JOBS_LISTED as i32)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        let now = Utc::now();
        (out.items().iter())
            .filter(|item| !expired(item, now))
            .map(job_from)
            .collect()
    }

    /// The markers not marked finished, each checked against its job: a marker left by a
    /// write that failed (its job finished, or never written) is marked finished here and
    /// not listed, so that no runner reads it again and again.
    async fn running_jobs(&self) -> Result<Vec<(TenantId, BulkJobId)>, StoreError> {
        let items: Vec<Item> = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(format!("{} = :pk", attr::PK))
            .filter_expression(format!("attribute_not_exists({})", job_attr::FINISHED))
            .expression_attribute_values(":pk", s(keys::running_jobs_partition()))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        let mut running = Vec::new();
        for item in &items {
            let id: BulkJobId = get_s(item, attr::SK)?.parse().map_err(corrupt)?;
            let tenant = TenantId::parse(get_s(item, job_attr::TENANT)?).map_err(corrupt)?;
            match self.job(&tenant, &id).await? {
                Some(job) if job.is_running() => running.push((tenant, id)),
                None if Utc::now() - id.created_at() < ORPHAN_AFTER => running.push((tenant, id)),
                _ => self.put_marker_of(&tenant, &id, false).await?,
            }
        }
        Ok(running)
    }
}
