//! Bulk jobs, one row each, written conditionally on their version; `running` is kept
//! beside the document so that the running ones are found by an index read, and
//! `finished_ms` so that retention removes a finished job with the tasks of its time.

use async_trait::async_trait;

use boomerang_core::domain::{BulkJob, BulkJobId, TenantId};
use boomerang_core::ports::{BulkJobs, StoreError, JOBS_LISTED};

use super::codec::{decode, encode};
use super::sql::{ms, unavailable};
use super::PgStore;

fn finished_ms(job: &BulkJob) -> Option<i64> {
    job.finished_at.map(ms)
}

#[async_trait]
impl BulkJobs for PgStore {
    async fn create_job(&self, job: &BulkJob) -> Result<(), StoreError> {
        let doc = encode(job)?;
        self.execute(
            "INSERT INTO bulk_jobs (tenant, id, version, running, finished_ms, doc)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &job.tenant.as_str(),
                &job.id.to_string(),
                &(job.version as i64),
                &job.is_running(),
                &finished_ms(job),
                &doc,
            ],
        )
        .await?;
        Ok(())
    }

    async fn job(&self, tenant: &TenantId, id: &BulkJobId) -> Result<Option<BulkJob>, StoreError> {
        let row = self
            .query_opt(
                "SELECT doc FROM bulk_jobs WHERE tenant = $1 AND id = $2",
                &[&tenant.as_str(), &id.to_string()],
            )
            .await?;
        row.map(|r| decode(r.get(0))).transpose()
    }

    async fn save_job(&self, job: &BulkJob, expected_version: u64) -> Result<(), StoreError> {
        let doc = encode(job)?;
        let changed = self
            .execute(
                "UPDATE bulk_jobs SET version = $3, running = $4, finished_ms = $5, doc = $6
                 WHERE tenant = $1 AND id = $2 AND version = $7",
                &[
                    &job.tenant.as_str(),
                    &job.id.to_string(),
                    &(job.version as i64),
                    &job.is_running(),
                    &finished_ms(job),
                    &doc,
                    &(expected_version as i64),
                ],
            )
            .await?;
        match changed {
            1 => Ok(()),
            _ => Err(StoreError::Conflict),
        }
    }

    /// Newest first is id order (ULIDs sort by time, and the column compares bytes).
    async fn jobs(&self, tenant: &TenantId) -> Result<Vec<BulkJob>, StoreError> {
        let rows = self
            .query(
                "SELECT doc FROM bulk_jobs WHERE tenant = $1 ORDER BY id DESC LIMIT $2",
                &[&tenant.as_str(), &(JOBS_LISTED as i64)],
            )
            .await?;
        rows.iter().map(|r| decode(r.get(0))).collect()
    }

    async fn running_jobs(&self) -> Result<Vec<(TenantId, BulkJobId)>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT tenant, id FROM bulk_jobs WHERE running")
            .await
            .map_err(unavailable)?;
        let rows = client.query(&stmt, &[]).await.map_err(unavailable)?;
        rows.iter()
            .map(|r| {
                let corrupt = |e: String| StoreError::Corrupt(e.into());
                let tenant = TenantId::parse(r.get::<_, String>(0))
                    .map_err(|e| corrupt(format!("a bulk job's tenant: {e}")))?;
                let id = (r.get::<_, &str>(1).parse())
                    .map_err(|e| corrupt(format!("a bulk job's id: {e}")))?;
                Ok((tenant, id))
            })
            .collect()
    }
}
