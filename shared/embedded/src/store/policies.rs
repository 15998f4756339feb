//! Named retry policies, one row each.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use boomerang_core::domain::{Policy, PolicyName, TenantId};
use boomerang_core::ports::{PolicyStore, StoreError};

use super::codec::{decode, encode};
use super::sqlite::SqliteStore;
use super::writer::unavailable;

#[async_trait]
impl PolicyStore for SqliteStore {
    async fn put_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
        policy: &Policy,
    ) -> Result<(), StoreError> {
        let (tenant, name, doc) = (tenant.to_string(), name.to_string(), encode(policy)?);
        self.write(move |w| {
            w.conn
                .execute(
                    "INSERT OR REPLACE INTO policies (tenant, name, doc) VALUES (?1, ?2, ?3)",
                    params![tenant, name, doc],
                )
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<Option<Policy>, StoreError> {
        let (tenant, name) = (tenant.to_string(), name.to_string());
        self.read(move |c| {
            let doc: Option<String> = c
                .query_row(
                    "SELECT doc FROM policies WHERE tenant = ?1 AND name = ?2",
                    [tenant, name],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            doc.map(|d| decode(&d)).transpose()
        })
        .await
    }

    async fn delete_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<bool, StoreError> {
        let (tenant, name) = (tenant.to_string(), name.to_string());
        self.write(move |w| {
            w.conn
                .execute(
                    "DELETE FROM policies WHERE tenant = ?1 AND name = ?2",
                    [tenant, name],
                )
                .map(|n| n > 0)
                .map_err(unavailable)
        })
        .await
    }

    async fn policies(&self, tenant: &TenantId) -> Result<Vec<(PolicyName, Policy)>, StoreError> {
        let tenant = tenant.to_string();
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached("SELECT name, doc FROM policies WHERE tenant = ?1 ORDER BY name")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([tenant], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (name, doc) = row.map_err(unavailable)?;
                let name = PolicyName::parse(name).map_err(|e| StoreError::Corrupt(e.into()))?;
                Ok((name, decode(&doc)?))
            })
            .collect()
        })
        .await
    }
}
