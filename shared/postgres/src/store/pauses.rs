//! Paused flows, one row each.
//!
//! `flow_paused` reads the table every time (one primary-key lookup): a pause set on any
//! server is seen by the next delivery of every server, with no copy to keep fresh.

use async_trait::async_trait;

use boomerang_core::domain::{FlowKey, TenantId};
use boomerang_core::ports::{FlowPauses, StoreError};

use super::sql::unavailable;
use super::PgStore;

#[async_trait]
impl FlowPauses for PgStore {
    async fn set_flow_paused(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        paused: bool,
    ) -> Result<(), StoreError> {
        let sql = match paused {
            true => {
                "INSERT INTO paused_flows (tenant, key) VALUES ($1, $2)
                 ON CONFLICT (tenant, key) DO NOTHING"
            }
            false => "DELETE FROM paused_flows WHERE tenant = $1 AND key = $2",
        };
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(unavailable)?;
        client
            .execute(&stmt, &[&tenant.as_str(), &key.as_str()])
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn flow_paused(&self, tenant: &TenantId, key: &FlowKey) -> Result<bool, StoreError> {
        let row = self
            .query_opt(
                "SELECT 1 FROM paused_flows WHERE tenant = $1 AND key = $2",
                &[&tenant.as_str(), &key.as_str()],
            )
            .await?;
        Ok(row.is_some())
    }

    async fn paused_flows(&self, tenant: &TenantId) -> Result<Vec<FlowKey>, StoreError> {
        let rows = self
            .query(
                "SELECT key FROM paused_flows WHERE tenant = $1 ORDER BY key",
                &[&tenant.as_str()],
            )
            .await?;
        rows.iter()
            .map(|r| {
                FlowKey::parse(r.get::<_, String>(0)).map_err(|e| StoreError::Corrupt(e.into()))
            })
            .collect()
    }
}
