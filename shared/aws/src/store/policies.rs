//! Named retry policies: one item each in the tenant's policy partition, the policy as
//! JSON. Reads are cached for a minute, found or not: a registration looks up the tenant's
//! `default` policy, and most tenants have none.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::ReturnValue;

use super::table::DynamoStore;
use crate::attr;
use crate::keys;
use crate::sdk::items::{corrupt, get_s, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{Policy, PolicyName, TenantId};
use boomerang_core::ports::{PolicyStore, StoreError};

#[async_trait]
impl PolicyStore for DynamoStore {
    async fn put_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
        policy: &Policy,
    ) -> Result<(), StoreError> {
        let doc = serde_json::to_string(policy).map_err(|e| StoreError::Corrupt(e.into()))?;
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(keys::policy(tenant, name).to_item()))
            .item(attr::POLICY, s(doc))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        self.policies.forget(&policy_key(tenant, name));
        Ok(())
    }

    async fn policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<Option<Policy>, StoreError> {
        let key = policy_key(tenant, name);
        if let Some(cached) = self.policies.get(&key) {
            return Ok(cached);
        }
        let item = self.get_item(&keys::policy(tenant, name), true).await?;
        let policy = item.as_ref().map(policy_from).transpose()?;
        self.policies.put(key, policy.clone());
        Ok(policy)
    }

    async fn delete_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(keys::policy(tenant, name).to_item()))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        self.policies.forget(&policy_key(tenant, name));
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn policies(&self, tenant: &TenantId) -> Result<Vec<(PolicyName, Policy)>, StoreError> {
        self.partition(keys::policy_partition(tenant), None)
            .await?
            .iter()
            .map(|item| {
                let name =
                    PolicyName::parse(get_s(item, attr::SK)?).map_err(|_| corrupt(attr::SK))?;
                Ok((name, policy_from(item)?))
            })
            .collect()
    }
}

/// A policy's place in the cache (not a key of the table).
fn policy_key(tenant: &TenantId, name: &PolicyName) -> String {
    format!("{tenant}#{name}")
}

fn policy_from(item: &Item) -> Result<Policy, StoreError> {
    serde_json::from_str(get_s(item, attr::POLICY)?).map_err(|e| StoreError::Corrupt(e.into()))
}
