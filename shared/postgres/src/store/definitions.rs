//! Named definitions, one row each in `definitions`, each kind apart by its `kind` column
//! (so a policy and a template may share a name).

use async_trait::async_trait;

use boomerang_core::domain::{DefinitionName, TenantId};
use boomerang_core::ports::{Definition, DefinitionKind, Definitions, StoreError};

use super::codec::{decode, encode};
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
        self.execute(
            "INSERT INTO definitions (tenant, kind, name, doc) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (tenant, kind, name) DO UPDATE SET doc = excluded.doc",
            &[&tenant.as_str(), &kind::<D>(), &name.as_str(), &doc],
        )
        .await?;
        // After the write: a read that raced it may have noted the old document.
        self.definition_cache
            .forget(tenant.as_str(), kind::<D>(), name.as_str());
        Ok(())
    }

    async fn definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<Option<D>, StoreError> {
        let key = (tenant.as_str(), kind::<D>(), name.as_str());
        let doc = match self.definition_cache.get(key.0, key.1, key.2) {
            Some(doc) => doc,
            None => {
                let read = self.definition_cache.read();
                let doc: Option<String> = self
                    .query_opt(
                        "SELECT doc FROM definitions WHERE tenant = $1 AND kind = $2 AND name = $3",
                        &[&key.0, &key.1, &key.2],
                    )
                    .await?
                    .map(|r| r.get(0));
                self.definition_cache.put(key, doc.clone(), read);
                doc
            }
        };
        doc.as_deref().map(decode).transpose()
    }

    async fn delete_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<bool, StoreError> {
        let deleted = self
            .execute(
                "DELETE FROM definitions WHERE tenant = $1 AND kind = $2 AND name = $3",
                &[&tenant.as_str(), &kind::<D>(), &name.as_str()],
            )
            .await?;
        self.definition_cache
            .forget(tenant.as_str(), kind::<D>(), name.as_str());
        Ok(deleted > 0)
    }

    async fn definitions(&self, tenant: &TenantId) -> Result<Vec<(DefinitionName, D)>, StoreError> {
        let rows = self
            .query(
                "SELECT name, doc FROM definitions WHERE tenant = $1 AND kind = $2
                 ORDER BY name",
                &[&tenant.as_str(), &kind::<D>()],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let name = DefinitionName::parse(r.get::<_, String>(0))
                    .map_err(|e| StoreError::Corrupt(e.into()))?;
                Ok((name, decode(r.get(1))?))
            })
            .collect()
    }
}
