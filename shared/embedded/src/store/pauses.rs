//! Paused flows, one row each.

use async_trait::async_trait;

use boomerang_core::domain::{FlowKey, TenantId};
use boomerang_core::ports::{FlowPauses, StoreError};

use super::sqlite::SqliteStore;
use super::writer::unavailable;

#[async_trait]
impl FlowPauses for SqliteStore {
    async fn set_flow_paused(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        paused: bool,
    ) -> Result<(), StoreError> {
        let (tenant, key) = (tenant.to_string(), key.to_string());
        let sql = match paused {
            true => "INSERT OR IGNORE INTO paused_flows (tenant, key) VALUES (?1, ?2)",
            false => "DELETE FROM paused_flows WHERE tenant = ?1 AND key = ?2",
        };
        self.write(move |w| {
            w.conn
                .execute(sql, [tenant, key])
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn flow_paused(&self, tenant: &TenantId, key: &FlowKey) -> Result<bool, StoreError> {
        let (tenant, key) = (tenant.to_string(), key.to_string());
        self.read(move |c| {
            c.prepare_cached("SELECT 1 FROM paused_flows WHERE tenant = ?1 AND key = ?2")
                .and_then(|mut stmt| stmt.exists([tenant, key]))
                .map_err(unavailable)
        })
        .await
    }

    async fn paused_flows(&self, tenant: &TenantId) -> Result<Vec<FlowKey>, StoreError> {
        let tenant = tenant.to_string();
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached("SELECT key FROM paused_flows WHERE tenant = ?1 ORDER BY key")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([tenant], |r| r.get::<_, String>(0))
                .map_err(unavailable)?;
            rows.map(|row| {
                let key = row.map_err(unavailable)?;
                FlowKey::parse(key).map_err(|e| StoreError::Corrupt(e.into()))
            })
            .collect()
        })
        .await
    }
}
