//! Paused flows, kept in the table as items `P#<key>` in the tenant's partition
//! `FL#<tenant>` (no expiry). Every limited delivery asks whether its flow is paused; a
//! process remembers the answer for a second, so a pause takes hold within one.

use async_trait::async_trait;

use super::{tenant_pk, DynamoFlowCounters};
use crate::attr;
use crate::sdk::items::{get_item, s};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{FlowKey, TenantId};
use boomerang_core::ports::{FlowPauses, StoreError};

#[async_trait]
impl FlowPauses for DynamoFlowCounters {
    async fn set_flow_paused(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        paused: bool,
    ) -> Result<(), StoreError> {
        let (pk, sk) = (tenant_pk(tenant), format!("P#{key}"));
        let sent = match paused {
            true => (self.client.put_item().table_name(&self.table))
                .item(attr::PK, s(pk))
                .item(attr::SK, s(sk))
                .send()
                .await
                .map(|_| ())
                .map_err(sdk_failure),
            false => (self.client.delete_item().table_name(&self.table))
                .key(attr::PK, s(pk))
                .key(attr::SK, s(sk))
                .send()
                .await
                .map(|_| ())
                .map_err(sdk_failure),
        };
        sent.map_err(StoreError::Unavailable)?;
        self.paused.put(format!("{tenant}#{key}"), paused);
        Ok(())
    }

    async fn flow_paused(&self, tenant: &TenantId, key: &FlowKey) -> Result<bool, StoreError> {
        let remembered = format!("{tenant}#{key}");
        if let Some(paused) = self.paused.get(&remembered) {
            return Ok(paused);
        }
        let item = (tenant_pk(tenant), format!("P#{key}"));
        let found = get_item(&self.client, &self.table, item, true).await;
        let paused = found.map_err(StoreError::Unavailable)?.is_some();
        self.paused.put(remembered, paused);
        Ok(paused)
    }

    async fn paused_flows(&self, tenant: &TenantId) -> Result<Vec<FlowKey>, StoreError> {
        let items = self.query_all(&tenant_pk(tenant), "P#").await?;
        let keys = (items.iter())
            .filter_map(|item| item.get(attr::SK)?.as_s().ok()?.strip_prefix("P#"))
            .filter_map(|key| FlowKey::parse(key).ok());
        Ok(keys.collect())
    }
}
