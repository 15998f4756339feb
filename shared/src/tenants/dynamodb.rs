//! Tenants and API keys in the task table. Keys are stored only as SHA-256 digests; each
//! tenant has its own signing secret.
//!
//! Items: `K#<sha256 hex of key>`, `KEY` → tenant; `N#<tenant>`, `TENANT` → signing secret.

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use sha2::{Digest, Sha256};

use crate::aws::items::{get_item, get_s, n, s, Item};
use crate::aws::sdk_failure;
use crate::domain::{generate_api_key, SigningSecret, TenantId};
use crate::ports::{Tenants, TenantsError};

pub struct DynamoTenants {
    client: Client,
    table: String,
}

/// A freshly minted API key (shown once) and the tenant's signing secret.
pub struct MintedKey {
    pub api_key: String,
    pub tenant: TenantId,
    pub secret: SigningSecret,
}

fn key_pk(api_key: &str) -> String {
    format!("K#{:x}", Sha256::digest(api_key.as_bytes()))
}

fn tenant_pk(tenant: &TenantId) -> String {
    format!("N#{tenant}")
}

impl DynamoTenants {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    async fn get(&self, pk: String, sk: &str) -> Result<Option<Item>, TenantsError> {
        get_item(&self.client, &self.table, pk, sk)
            .await
            .map_err(TenantsError)
    }

    /// Creates the tenant if new (keeping an existing tenant's secret) and a new API key.
    pub async fn mint_key(&self, tenant: &TenantId) -> Result<MintedKey, TenantsError> {
        let fresh = SigningSecret::generate();
        let created = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(tenant_pk(tenant)))
            .item("sk", s("TENANT"))
            .item("signing_secret", s(fresh.expose()))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) => {}
            Err(e) => return Err(TenantsError(sdk_failure(e))),
        }
        let secret = self
            .signing_secret(tenant)
            .await?
            .ok_or_else(|| TenantsError("tenant vanished while minting a key".into()))?;
        let api_key = generate_api_key();
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(key_pk(&api_key)))
            .item("sk", s("KEY"))
            .item("tenant", s(tenant.as_str()))
            .item("created_at", n(chrono::Utc::now().timestamp()))
            .send()
            .await
            .map_err(|e| TenantsError(sdk_failure(e)))?;
        Ok(MintedKey {
            api_key,
            tenant: tenant.clone(),
            secret,
        })
    }
}

#[async_trait]
impl Tenants for DynamoTenants {
    async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError> {
        let item = self.get(key_pk(api_key), "KEY").await?;
        Ok(item
            .as_ref()
            .and_then(|i| get_s(i, "tenant").ok())
            .and_then(|t| TenantId::parse(t).ok()))
    }

    async fn signing_secret(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<SigningSecret>, TenantsError> {
        let Some(item) = self.get(tenant_pk(tenant), "TENANT").await? else {
            return Ok(None);
        };
        let raw = get_s(&item, "signing_secret").map_err(|e| TenantsError(e.into()))?;
        SigningSecret::parse(raw)
            .map(Some)
            .map_err(|e| TenantsError(format!("tenant {tenant}: {e}").into()))
    }
}
