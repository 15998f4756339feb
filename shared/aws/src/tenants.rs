//! Tenants and API keys in the task table. Keys are stored only as SHA-256 digests; each
//! tenant has its own signing secret.
//!
//! Items ([`crate::keys::api_key`], [`crate::keys::tenant`]): an API key's names its
//! tenant; a tenant's holds its signing secrets (the newest alone in `signing_secret`, and
//! once a rotation wrote it, all in force in `signing_secrets`) and, if set, the default
//! alert destination
//! (`alert`, JSON), its own limit of calls at once to one destination
//! (`destination_limit`) and its partition plan (`shards`, which the store reads).
//!
//! A Lambda instance serves many requests, so what it read is kept for [`CACHE_TTL`]: a
//! request or a delivery then costs no read for its key or secret. The price: a revoked
//! key keeps working on warm instances for up to that long, and a rotated secret signs
//! their deliveries from up to that long after the rotation (the secrets it replaced sign
//! them meanwhile, so receivers that switch within their grace period miss nothing).

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

use crate::attr;
use crate::keys::{self, ItemKey};
use crate::sdk::cache::Cache;
pub use crate::sdk::cache::CACHE_TTL;
use crate::sdk::items::{get_item, get_n, get_s, n, s, Item};
use crate::sdk::sdk_failure;
use crate::shards::ShardPlan;
use boomerang_core::domain::{generate_api_key, AlertTarget, SecretSet, SigningSecret, TenantId};
use boomerang_core::ports::{ReplaceSecretsError, SigningKeys, Tenants, TenantsError};

pub struct DynamoTenants {
    client: Client,
    table: String,
    keys: Cache<TenantId>,
    records: Cache<TenantRecord>,
}

/// What the `TENANT` item holds.
#[derive(Clone)]
struct TenantRecord {
    secrets: SecretSet,
    alert: Option<AlertTarget>,
    destination_limit: Option<usize>,
}

/// A freshly minted API key (shown once) and the tenant's signing secret.
pub struct MintedKey {
    pub api_key: String,
    pub tenant: TenantId,
    pub secret: SigningSecret,
}

impl DynamoTenants {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            keys: Cache::new(),
            records: Cache::new(),
        }
    }

    async fn get(&self, key: &ItemKey) -> Result<Option<Item>, TenantsError> {
        get_item(&self.client, &self.table, key, true)
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
            .set_item(Some(keys::tenant(tenant).to_item()))
            .item(attr::tenant::SIGNING_SECRET, s(fresh.expose()))
            .condition_expression(format!("attribute_not_exists({})", attr::PK))
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
            .signing_secrets(tenant)
            .await?
            .ok_or_else(|| TenantsError("tenant vanished while minting a key".into()))?
            .newest()
            .clone();
        let api_key = generate_api_key();
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(keys::api_key(&api_key).to_item()))
            .item(attr::tenant::TENANT, s(tenant.as_str()))
            .item(attr::tenant::CREATED_AT, n(chrono::Utc::now().timestamp()))
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

impl DynamoTenants {
    /// Sets (or with `None` removes) the tenant's default alert destination. Warm
    /// instances see the change within [`CACHE_TTL`].
    pub async fn set_alert(
        &self,
        tenant: &TenantId,
        alert: Option<&AlertTarget>,
    ) -> Result<(), TenantsError> {
        let json = alert
            .map(|target| serde_json::to_string(target).map(s))
            .transpose()
            .map_err(|e| TenantsError(e.into()))?;
        self.set_or_remove(tenant, attr::tenant::ALERT, json).await
    }

    /// Sets (or with `None` removes) the tenant's own limit of calls at once to one
    /// destination. Warm instances see the change within [`CACHE_TTL`].
    pub async fn set_destination_limit(
        &self,
        tenant: &TenantId,
        limit: Option<usize>,
    ) -> Result<(), TenantsError> {
        let value = limit.map(|l| n(l as i64));
        self.set_or_remove(tenant, attr::tenant::DESTINATION_LIMIT, value)
            .await
    }

    /// Spreads the tenant's tasks over `shards` partitions from
    /// [`SHARD_CHANGE_DELAY`](crate::shards::SHARD_CHANGE_DELAY) after `now` on
    /// (tasks already made keep theirs); returns the new plan. Written only if the plan is
    /// still the one read, so two changes at once cannot lose a step.
    pub async fn set_shards(
        &self,
        tenant: &TenantId,
        shards: u32,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<ShardPlan, TenantsError> {
        let item = self
            .get(&keys::tenant(tenant))
            .await?
            .ok_or_else(|| TenantsError(format!("no tenant {tenant}").into()))?;
        let old = item.get(attr::tenant::SHARDS).cloned();
        let plan = ShardPlan::from_attribute(old.as_ref())
            .map_err(|e| TenantsError(format!("tenant {tenant}: {e}").into()))?;
        let plan = plan
            .changed(shards, now)
            .map_err(|e| TenantsError(e.into()))?;
        let text = serde_json::to_string(&plan).map_err(|e| TenantsError(e.into()))?;
        let update = self
            .update_tenant(tenant)
            .update_expression("SET #p = :new")
            .expression_attribute_names("#p", attr::tenant::SHARDS)
            .expression_attribute_values(":new", s(text));
        let update = match old {
            None => update.condition_expression("attribute_not_exists(#p)"),
            Some(old) => update
                .condition_expression("#p = :old")
                .expression_attribute_values(":old", old),
        };
        update
            .send()
            .await
            .map_err(|e| match e.as_service_error() {
                Some(se) if se.is_conditional_check_failed_exception() => TenantsError(
                    format!("tenant {tenant}: its shards changed meanwhile; try again").into(),
                ),
                _ => TenantsError(sdk_failure(e)),
            })?;
        Ok(plan)
    }

    /// An update of the tenant's item.
    fn update_tenant(
        &self,
        tenant: &TenantId,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(keys::tenant(tenant).to_item()))
    }

    /// Sets attribute `name` of an existing tenant's item to `value`, or removes it.
    async fn set_or_remove(
        &self,
        tenant: &TenantId,
        name: &str,
        value: Option<AttributeValue>,
    ) -> Result<(), TenantsError> {
        let update = self
            .update_tenant(tenant)
            .condition_expression(format!("attribute_exists({})", attr::PK))
            .expression_attribute_names("#a", name);
        let update = match value {
            Some(value) => update
                .update_expression("SET #a = :v")
                .expression_attribute_values(":v", value),
            None => update.update_expression("REMOVE #a"),
        };
        match update.send().await {
            Ok(_) => {
                self.records.forget(tenant.as_str());
                Ok(())
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Err(TenantsError(format!("no tenant {tenant}").into()))
            }
            Err(e) => Err(TenantsError(sdk_failure(e))),
        }
    }

    /// The tenant's item, cached.
    async fn record(&self, tenant: &TenantId) -> Result<Option<TenantRecord>, TenantsError> {
        if let Some(record) = self.records.get(tenant.as_str()) {
            return Ok(Some(record));
        }
        let Some(item) = self.get(&keys::tenant(tenant)).await? else {
            return Ok(None);
        };
        let secrets = stored_secrets(&item)
            .map_err(|e| TenantsError(format!("tenant {tenant}: {e}").into()))?;
        let alert = match get_s(&item, attr::tenant::ALERT) {
            Ok(json) => Some(
                serde_json::from_str(json)
                    .map_err(|e| TenantsError(format!("tenant {tenant}: alert: {e}").into()))?,
            ),
            Err(_) => None,
        };
        let destination_limit = get_n(&item, attr::tenant::DESTINATION_LIMIT)
            .ok()
            .and_then(|limit| usize::try_from(limit).ok());
        let record = TenantRecord {
            secrets,
            alert,
            destination_limit,
        };
        self.records.put(tenant.to_string(), record.clone());
        Ok(Some(record))
    }
}

#[async_trait]
impl Tenants for DynamoTenants {
    async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError> {
        let key = keys::api_key(api_key);
        if let Some(tenant) = self.keys.get(&key.pk) {
            return Ok(Some(tenant));
        }
        let item = self.get(&key).await?;
        let tenant = item
            .as_ref()
            .and_then(|i| get_s(i, attr::tenant::TENANT).ok())
            .and_then(|t| TenantId::parse(t).ok());
        if let Some(t) = &tenant {
            self.keys.put(key.pk, t.clone());
        }
        Ok(tenant)
    }

    async fn alert_target(&self, tenant: &TenantId) -> Result<Option<AlertTarget>, TenantsError> {
        Ok(self.record(tenant).await?.and_then(|r| r.alert))
    }

    async fn destination_limit(&self, tenant: &TenantId) -> Result<Option<usize>, TenantsError> {
        Ok(self.record(tenant).await?.and_then(|r| r.destination_limit))
    }
}

/// The secrets a tenant's item holds: its `signing_secrets`, or (before any rotation) its
/// one `signing_secret`.
fn stored_secrets(item: &Item) -> Result<SecretSet, String> {
    if let Ok(json) = get_s(item, attr::tenant::SIGNING_SECRETS) {
        return serde_json::from_str(json).map_err(|e| format!("signing_secrets: {e}"));
    }
    let raw = get_s(item, attr::tenant::SIGNING_SECRET).map_err(|e| e.to_string())?;
    let secret = SigningSecret::parse(raw).map_err(|e| e.to_string())?;
    Ok(SecretSet::single(secret, None))
}

#[async_trait]
impl SigningKeys for DynamoTenants {
    /// Read through the cache: a rotation by another instance is seen within
    /// [`CACHE_TTL`].
    async fn signing_secrets(&self, tenant: &TenantId) -> Result<Option<SecretSet>, TenantsError> {
        Ok(self.record(tenant).await?.map(|r| r.secrets))
    }

    /// Written on condition that the item still holds `old` (as `signing_secrets`, or as
    /// the one `signing_secret` of a tenant never rotated). The cache may hold an older
    /// set than the table: the write then fails, the cache is dropped, and the engine
    /// reads again.
    async fn replace_signing_secrets(
        &self,
        tenant: &TenantId,
        old: &SecretSet,
        new: &SecretSet,
    ) -> Result<(), ReplaceSecretsError> {
        let json = |set: &SecretSet| serde_json::to_string(set).map_err(|e| TenantsError(e.into()));
        let update = self
            .update_tenant(tenant)
            .update_expression("SET #set = :new, #one = :newest")
            .expression_attribute_names("#set", attr::tenant::SIGNING_SECRETS)
            .expression_attribute_names("#one", attr::tenant::SIGNING_SECRET)
            .expression_attribute_values(":new", s(json(new)?))
            .expression_attribute_values(":newest", s(new.newest().expose()));
        let update = update
            .condition_expression("(attribute_not_exists(#set) AND #one = :old_one) OR #set = :old")
            .expression_attribute_values(":old_one", s(old.newest().expose()))
            .expression_attribute_values(":old", s(json(old)?));
        let result = update.send().await;
        self.records.forget(tenant.as_str());
        match result {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Err(ReplaceSecretsError::Changed)
            }
            Err(e) => Err(TenantsError(sdk_failure(e)).into()),
        }
    }
}
