//! Named definitions, one row each in `definitions`, each kind apart by its `kind` column
//! (so a policy and a template may share a name).

use async_trait::async_trait;

use boomerang_core::domain::{DefinitionName, TenantId};
use boomerang_core::ports::{Definition, DefinitionKind, Definitions, StoreError};

use super::codec::{decode, encode};
use super::sql::unavailable;
use super::PgStore;

/// The `kind` column's value for a kind: words of the schema's own, not the kind's
/// display name, so that rewording a message never orphans stored rows.
fn kind<D: Definition>() -> &'static str {
    match D::KIND {
        DefinitionKind::Policy => "policy",
        DefinitionKind::Template => "template",
        DefinitionKind::BreakerSettings => "breaker_settings",
    }
}

#[async_trait]
impl<D: Definition> Definitions<D> for PgStore {
    async fn put_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
        doc: &D,
    ) -> Result<(), StoreError> {
        let doc = encode(doc)?;
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO definitions (tenant, kind, name, doc) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (tenant, kind, name) DO UPDATE SET doc = excluded.doc",
            )
            .await
            .map_err(unavailable)?;
        client
            .execute(
                &stmt,
                &[&tenant.as_str(), &kind::<D>(), &name.as_str(), &doc],
            )
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<Option<D>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT doc FROM definitions WHERE tenant = $1 AND kind = $2 AND name = $3",
            )
            .await
            .map_err(unavailable)?;
        let row = client
            .query_opt(&stmt, &[&tenant.as_str(), &kind::<D>(), &name.as_str()])
            .await
            .map_err(unavailable)?;
        row.map(|r| decode(r.get(0))).transpose()
    }

    async fn delete_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("DELETE FROM definitions WHERE tenant = $1 AND kind = $2 AND name = $3")
            .await
            .map_err(unavailable)?;
        let deleted = client
            .execute(&stmt, &[&tenant.as_str(), &kind::<D>(), &name.as_str()])
            .await
            .map_err(unavailable)?;
        Ok(deleted > 0)
    }

    async fn definitions(&self, tenant: &TenantId) -> Result<Vec<(DefinitionName, D)>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT name, doc FROM definitions WHERE tenant = $1 AND kind = $2
                 ORDER BY name",
            )
            .await
            .map_err(unavailable)?;
        let rows = client
            .query(&stmt, &[&tenant.as_str(), &kind::<D>()])
            .await
            .map_err(unavailable)?;
        rows.iter()
            .map(|r| {
                let name = DefinitionName::parse(r.get::<_, String>(0))
                    .map_err(|e| StoreError::Corrupt(e.into()))?;
                Ok((name, decode(r.get(1))?))
            })
            .collect()
    }
}
