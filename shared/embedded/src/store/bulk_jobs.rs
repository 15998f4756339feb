//! Bulk jobs, one row each, written conditionally on their version; `running` is kept
//! beside the document so that the running ones are found by an index read, and
//! `finished_ms` so that retention removes a finished job with the tasks of its time.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use boomerang_core::domain::{BulkJob, BulkJobId, TenantId};
use boomerang_core::ports::{BulkJobs, StoreError, JOBS_LISTED};

use super::codec::{decode, encode};
use super::sqlite::SqliteStore;
use super::writer::unavailable;

fn finished_ms(job: &BulkJob) -> Option<i64> {
    job.finished_at.map(|t| t.timestamp_millis())
}

#[async_trait]
impl BulkJobs for SqliteStore {
    async fn create_job(&self, job: &BulkJob) -> Result<(), StoreError> {
        let (tenant, id) = (job.tenant.to_string(), job.id.to_string());
        let (version, running, doc) = (job.version as i64, job.is_running(), encode(job)?);
        let finished = finished_ms(job);
        self.write(move |w| {
            w.conn
                .execute(
                    "INSERT INTO bulk_jobs (tenant, id, version, running, finished_ms, doc)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![tenant, id, version, running, finished, doc],
                )
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn job(&self, tenant: &TenantId, id: &BulkJobId) -> Result<Option<BulkJob>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.read(move |c| {
            let doc: Option<String> = c
                .query_row(
                    "SELECT doc FROM bulk_jobs WHERE tenant = ?1 AND id = ?2",
                    [tenant, id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            doc.map(|d| decode(&d)).transpose()
        })
        .await
    }

    async fn save_job(&self, job: &BulkJob, expected_version: u64) -> Result<(), StoreError> {
        let (tenant, id) = (job.tenant.to_string(), job.id.to_string());
        let (version, running, doc) = (job.version as i64, job.is_running(), encode(job)?);
        let (finished, expected) = (finished_ms(job), expected_version as i64);
        self.write(move |w| {
            let changed = w
                .conn
                .execute(
                    "UPDATE bulk_jobs SET version = ?3, running = ?4, finished_ms = ?5, doc = ?6
                     WHERE tenant = ?1 AND id = ?2 AND version = ?7",
                    params![tenant, id, version, running, finished, doc, expected],
                )
                .map_err(unavailable)?;
            match changed {
                1 => Ok(()),
                _ => Err(StoreError::Conflict),
            }
        })
        .await
    }

    async fn jobs(&self, tenant: &TenantId) -> Result<Vec<BulkJob>, StoreError> {
        let tenant = tenant.to_string();
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT doc FROM bulk_jobs WHERE tenant = ?1 ORDER BY id DESC LIMIT ?2",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map(params![tenant, JOBS_LISTED as i64], |r| {
                    r.get::<_, String>(0)
                })
                .map_err(unavailable)?;
            rows.map(|doc| decode(&doc.map_err(unavailable)?)).collect()
        })
        .await
    }

    async fn running_jobs(&self) -> Result<Vec<(TenantId, BulkJobId)>, StoreError> {
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached("SELECT doc FROM bulk_jobs WHERE running = 1")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(unavailable)?;
            rows.map(|doc| {
                let job: BulkJob = decode(&doc.map_err(unavailable)?)?;
                Ok((job.tenant, job.id))
            })
            .collect()
        })
        .await
    }
}
