//! Paused flows, kept in the table as items `P#<key>` in the tenant's partition
//! `FL#<tenant>` (no expiry). Every limited delivery asks whether its flow is paused; a
//! process remembers the answer for a second, so a pause takes hold within one.

use async_trait::async_trait;

use super::counters::{sort_key, DynamoFlowCounters};
use crate::keys;
use crate::sdk::items::get_item;
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
        let item = keys::flow_paused(tenant, key).to_item();
        let sent = match paused {
            true => (self.client.put_item().table_name(&self.table))
                .set_item(Some(item))
                .send()
                .await
                .map(|_| ())
                .map_err(sdk_failure),
            false => (self.client.delete_item().table_name(&self.table))
                .set_key(Some(item))
                .send()
                .await
                .map(|_| ())
                .map_err(sdk_failure),
        };
        sent.map_err(StoreError::Unavailable)?;
        // Remembered by the flow's partition, which names it.
        self.paused.put(keys::flow_partition(tenant, key), paused);
        Ok(())
    }

    async fn flow_paused(&self, tenant: &TenantId, key: &FlowKey) -> Result<bool, StoreError> {
        let remembered = keys::flow_partition(tenant, key);
        if let Some(paused) = self.paused.get(&remembered) {
            return Ok(paused);
        }
        let item = keys::flow_paused(tenant, key);
        let found = get_item(&self.client, &self.table, &item, true).await;
        let paused = found.map_err(StoreError::Unavailable)?.is_some();
        self.paused.put(remembered, paused);
        Ok(paused)
    }

    async fn paused_flows(&self, tenant: &TenantId) -> Result<Vec<FlowKey>, StoreError> {
        let partition = keys::tenant_flows_partition(tenant);
        let items = self.query_all(&partition, keys::FLOWS_PAUSED).await?;
        let flows = (items.iter()).filter_map(|item| keys::paused_flow(sort_key(item)?));
        Ok(flows.collect())
    }
}
