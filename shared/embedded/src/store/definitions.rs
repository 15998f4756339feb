//! Named definitions, one row each, in a table per kind (`policies`, `templates`,
//! `breaker_settings`).

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use boomerang_core::domain::{DefinitionName, TenantId};
use boomerang_core::ports::{Definition, DefinitionKind, Definitions, StoreError};

use super::codec::{decode, encode};
use super::sqlite::SqliteStore;
use super::writer::unavailable;

/// The table that holds a kind (a name from this list only, never from input).
fn table<D: Definition>() -> &'static str {
    match D::KIND {
        DefinitionKind::Policy => "policies",
        DefinitionKind::Template => "templates",
        DefinitionKind::BreakerSettings => "breaker_settings",
    }
}

#[async_trait]
impl<D: Definition> Definitions<D> for SqliteStore {
    async fn put_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
        doc: &D,
    ) -> Result<(), StoreError> {
        let (tenant, name, doc) = (tenant.to_string(), name.to_string(), encode(doc)?);
        let sql = format!(
            "INSERT OR REPLACE INTO {} (tenant, name, doc) VALUES (?1, ?2, ?3)",
            table::<D>()
        );
        self.write(move |w| {
            (w.conn.execute(&sql, params![tenant, name, doc]))
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<Option<D>, StoreError> {
        let (tenant, name) = (tenant.to_string(), name.to_string());
        let sql = format!(
            "SELECT doc FROM {} WHERE tenant = ?1 AND name = ?2",
            table::<D>()
        );
        self.read(move |c| {
            let doc: Option<String> = c
                .query_row(&sql, [tenant, name], |r| r.get(0))
                .optional()
                .map_err(unavailable)?;
            doc.map(|d| decode(&d)).transpose()
        })
        .await
    }

    async fn delete_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<bool, StoreError> {
        let (tenant, name) = (tenant.to_string(), name.to_string());
        let sql = format!(
            "DELETE FROM {} WHERE tenant = ?1 AND name = ?2",
            table::<D>()
        );
        self.write(move |w| {
            (w.conn.execute(&sql, [tenant, name]))
                .map(|n| n > 0)
                .map_err(unavailable)
        })
        .await
    }

    async fn definitions(&self, tenant: &TenantId) -> Result<Vec<(DefinitionName, D)>, StoreError> {
        let tenant = tenant.to_string();
        let sql = format!(
            "SELECT name, doc FROM {} WHERE tenant = ?1 ORDER BY name",
            table::<D>()
        );
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&sql).map_err(unavailable)?;
            let rows = stmt
                .query_map([tenant], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (name, doc) = row.map_err(unavailable)?;
                let name =
                    DefinitionName::parse(name).map_err(|e| StoreError::Corrupt(e.into()))?;
                Ok((name, decode(&doc)?))
            })
            .collect()
        })
        .await
    }
}
