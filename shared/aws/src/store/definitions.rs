//! Named definitions: one item each in the tenant's partition of that kind (`P#` policies,
//! `TM#` templates), the definition as JSON. Reads are cached for a minute, found or not:
//! a registration looks up the tenant's `default` policy and template, and most tenants
//! have neither.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::ReturnValue;

use super::table::DynamoStore;
use crate::attr;
use crate::keys;
use crate::sdk::items::{corrupt, get_s, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{DefinitionName, TenantId};
use boomerang_core::ports::{Definition, Definitions, StoreError};

#[async_trait]
impl<D: Definition> Definitions<D> for DynamoStore {
    async fn put_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
        doc: &D,
    ) -> Result<(), StoreError> {
        let doc = serde_json::to_string(doc).map_err(|e| StoreError::Corrupt(e.into()))?;
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(keys::definition(D::KIND, tenant, name).to_item()))
            .item(attr::POLICY, s(doc))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        self.definitions.forget(&cache_key::<D>(tenant, name));
        Ok(())
    }

    async fn definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<Option<D>, StoreError> {
        let key = cache_key::<D>(tenant, name);
        let doc = match self.definitions.get(&key) {
            Some(cached) => cached,
            None => {
                let item = (self.get_item(&keys::definition(D::KIND, tenant, name), true)).await?;
                let doc = item
                    .as_ref()
                    .map(|i| doc_of(i).map(str::to_owned))
                    .transpose()?;
                self.definitions.put(key, doc.clone());
                doc
            }
        };
        doc.map(|d| decode(&d)).transpose()
    }

    async fn delete_definition(
        &self,
        tenant: &TenantId,
        name: &DefinitionName,
    ) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(keys::definition(D::KIND, tenant, name).to_item()))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        self.definitions.forget(&cache_key::<D>(tenant, name));
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn definitions(&self, tenant: &TenantId) -> Result<Vec<(DefinitionName, D)>, StoreError> {
        self.partition(keys::definition_partition(D::KIND, tenant), None)
            .await?
            .iter()
            .map(|item| {
                let name =
                    DefinitionName::parse(get_s(item, attr::SK)?).map_err(|_| corrupt(attr::SK))?;
                Ok((name, decode(doc_of(item)?)?))
            })
            .collect()
    }
}

/// A definition's place in the cache (not a key of the table).
fn cache_key<D: Definition>(tenant: &TenantId, name: &DefinitionName) -> String {
    format!("{}#{tenant}#{name}", D::KIND.as_str())
}

/// The definition's JSON (kept under the attribute policies have always used).
fn doc_of(item: &Item) -> Result<&str, StoreError> {
    get_s(item, attr::POLICY)
}

fn decode<D: Definition>(doc: &str) -> Result<D, StoreError> {
    serde_json::from_str(doc).map_err(|e| StoreError::Corrupt(e.into()))
}
