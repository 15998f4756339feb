//! Schedules, one row each, written conditionally on their version.

use async_trait::async_trait;

use boomerang_core::domain::{Schedule, ScheduleId, TenantId};
use boomerang_core::ports::{SchedulePage, ScheduleStore, StoreError};

use super::codec::{decode, encode};
use super::PgStore;

#[async_trait]
impl ScheduleStore for PgStore {
    /// A schedule's id is new; were it taken, the unique key answers `Conflict`.
    async fn create_schedule(&self, schedule: &Schedule) -> Result<(), StoreError> {
        let doc = encode(schedule)?;
        self.execute(
            "INSERT INTO schedules (tenant, id, version, doc) VALUES ($1, $2, $3, $4)",
            &[
                &schedule.tenant.as_str(),
                &schedule.id.to_string(),
                &(schedule.version as i64),
                &doc,
            ],
        )
        .await?;
        Ok(())
    }

    async fn schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<Option<Schedule>, StoreError> {
        let row = self
            .query_opt(
                "SELECT doc FROM schedules WHERE tenant = $1 AND id = $2",
                &[&tenant.as_str(), &id.to_string()],
            )
            .await?;
        row.map(|r| decode(r.get(0))).transpose()
    }

    /// One statement, conditional on the version: a deleted schedule matches no row, and
    /// is a conflict too.
    async fn update_schedule(
        &self,
        schedule: &Schedule,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        let doc = encode(schedule)?;
        let changed = self
            .execute(
                "UPDATE schedules SET version = $3, doc = $4
                 WHERE tenant = $1 AND id = $2 AND version = $5",
                &[
                    &schedule.tenant.as_str(),
                    &schedule.id.to_string(),
                    &(schedule.version as i64),
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

    async fn delete_schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<bool, StoreError> {
        let deleted = self
            .execute(
                "DELETE FROM schedules WHERE tenant = $1 AND id = $2",
                &[&tenant.as_str(), &id.to_string()],
            )
            .await?;
        Ok(deleted > 0)
    }

    /// Newest first is id order (ULIDs sort by time, and the column compares bytes).
    async fn schedules(
        &self,
        tenant: &TenantId,
        cursor: Option<ScheduleId>,
        limit: u32,
    ) -> Result<SchedulePage, StoreError> {
        // A first page has no bound: no sentinel id, whose order against ULIDs would
        // depend on a collation.
        let after = cursor.map(|c| c.to_string());
        let rows = i64::from(limit) + 1;
        let rows = self
            .query(
                "SELECT doc FROM schedules
                 WHERE tenant = $1 AND ($2::text IS NULL OR id < $2)
                 ORDER BY id DESC LIMIT $3",
                &[&tenant.as_str(), &after, &rows],
            )
            .await?;
        let schedules = rows
            .iter()
            .map(|r| decode(r.get(0)))
            .collect::<Result<Vec<Schedule>, _>>()?;
        Ok(SchedulePage::from_overfetch(schedules, limit))
    }
}
