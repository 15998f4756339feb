//! The tenant directory of servers sharing one database: one API key, given to every
//! server by its configuration, for one tenant (`default`), whose signing secrets are kept
//! in the database (`tenant_secrets`), so that every server signs with the same secrets
//! and a rotation on one is seen by all.
//!
//! Deliveries read the secrets for every call, so each server keeps a copy for at most
//! [`FRESH_FOR`]: a rotation made elsewhere is seen here within that, one made here at
//! once.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deadpool_postgres::{Client, Pool};

use boomerang_core::domain::{AlertTarget, SecretSet, SigningSecret, TenantId};
use boomerang_core::ports::{ReplaceSecretsError, SigningKeys, Tenants, TenantsError};
use boomerang_embedded::{SecretsKept, StaticTenants};

use crate::store::codec::{decode, encode};

/// The one tenant, as the local server names its own.
pub const TENANT: &str = "default";

/// How long a copy of the secrets read from the table is used without reading again.
pub const FRESH_FOR: Duration = Duration::from_secs(1);

/// The secrets as last read or written here, with the version the table held them at.
struct Seen {
    secrets: SecretSet,
    version: i64,
    at: Instant,
}

pub struct PgTenants {
    pool: Pool,
    tenant: TenantId,
    /// The API key's check: the local server's own (digests compared, so the time it
    /// takes tells nothing of the key). Only its `authenticate` is used: the secrets are
    /// the table's.
    key: StaticTenants,
    seen: Mutex<Option<Seen>>,
}

fn unavailable(e: impl Into<boomerang_core::ports::Cause>) -> TenantsError {
    TenantsError(e.into())
}

impl PgTenants {
    /// The directory for `api_key`, with the tenant's secrets seeded at the database's
    /// first start: `given_secret` if given, else a new one. Answers the secrets in
    /// force.
    ///
    /// The database's secrets win over a given secret that differs from their newest (a
    /// later server started with another `--signing-secret`, or a rotation made since):
    /// every server must sign alike, so one server's configuration cannot replace what
    /// the others use. That is logged as a warning; rotate through the API instead. For
    /// the same reason the secrets can always be rotated here, given or not.
    pub async fn open(
        pool: Pool,
        api_key: &str,
        given_secret: Option<SigningSecret>,
    ) -> Result<(PgTenants, SecretSet), TenantsError> {
        let tenant = TenantId::parse(TENANT).map_err(unavailable)?;
        let client = pool.get().await.map_err(unavailable)?;
        let seed = given_secret.clone().unwrap_or_else(SigningSecret::generate);
        let seed = encode(&SecretSet::single(seed, None)).map_err(unavailable)?;
        client
            .execute(
                "INSERT INTO tenant_secrets (tenant, version, doc) VALUES ($1, 1, $2)
                 ON CONFLICT (tenant) DO NOTHING",
                &[&tenant.as_str(), &seed],
            )
            .await
            .map_err(unavailable)?;
        let (secrets, version) = stored(&client, &tenant).await?;
        if let Some(given) = given_secret.filter(|g| g != secrets.newest()) {
            let kept = if secrets.signing(chrono::Utc::now()).contains(&given) {
                "still in force, but not the newest"
            } else {
                "not in force"
            };
            tracing::warn!(
                "the signing secret given in this server's configuration differs from the \
                 newest in the database, which every server signs with; the database's \
                 win (the given one is {kept}): rotate secrets through the API, not the \
                 configuration"
            );
        }
        let key = StaticTenants::with_secrets(
            api_key,
            tenant.clone(),
            secrets.clone(),
            SecretsKept::Fixed,
        );
        let tenants = PgTenants {
            pool,
            tenant,
            key,
            seen: Mutex::new(None),
        };
        tenants.note(secrets.clone(), version);
        Ok((tenants, secrets))
    }

    fn seen(&self) -> MutexGuard<'_, Option<Seen>> {
        // Every change under this lock is one assignment: a poisoned lock is still good.
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The copy, if read within [`FRESH_FOR`].
    fn fresh(&self) -> Option<SecretSet> {
        let seen = self.seen();
        let seen = seen.as_ref().filter(|s| s.at.elapsed() < FRESH_FOR)?;
        Some(seen.secrets.clone())
    }

    /// Keeps `secrets`, read or written at `version`, unless a newer version is kept
    /// already (a slow read must not undo a rotation made here meanwhile).
    fn note(&self, secrets: SecretSet, version: i64) {
        let mut seen = self.seen();
        if seen.as_ref().is_some_and(|s| s.version > version) {
            return;
        }
        *seen = Some(Seen {
            secrets,
            version,
            at: Instant::now(),
        });
    }
}

/// The tenant's secrets and their version, as the table holds them.
async fn stored(client: &Client, tenant: &TenantId) -> Result<(SecretSet, i64), TenantsError> {
    let stmt = client
        .prepare_cached("SELECT doc, version FROM tenant_secrets WHERE tenant = $1")
        .await
        .map_err(unavailable)?;
    let row = client
        .query_opt(&stmt, &[&tenant.as_str()])
        .await
        .map_err(unavailable)?;
    // Seeded at the first start and never deleted: a missing row is a damaged database.
    let row = row.ok_or_else(|| unavailable(format!("no signing secrets kept for {tenant}")))?;
    let secrets = decode(row.get(0)).map_err(unavailable)?;
    Ok((secrets, row.get(1)))
}

#[async_trait]
impl Tenants for PgTenants {
    async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError> {
        self.key.authenticate(api_key).await
    }

    /// One tenant, no per-tenant settings: the server's alert destination applies.
    async fn alert_target(&self, _tenant: &TenantId) -> Result<Option<AlertTarget>, TenantsError> {
        Ok(None)
    }

    /// Likewise the server's destination limit.
    async fn destination_limit(&self, _tenant: &TenantId) -> Result<Option<usize>, TenantsError> {
        Ok(None)
    }
}

#[async_trait]
impl SigningKeys for PgTenants {
    async fn signing_secrets(&self, tenant: &TenantId) -> Result<Option<SecretSet>, TenantsError> {
        if tenant != &self.tenant {
            return Ok(None);
        }
        if let Some(secrets) = self.fresh() {
            return Ok(Some(secrets));
        }
        let client = self.pool.get().await.map_err(unavailable)?;
        let (secrets, version) = stored(&client, &self.tenant).await?;
        self.note(secrets.clone(), version);
        Ok(Some(secrets))
    }

    /// Compares `old` with the table's (not the copy's) secrets, then writes `new` only
    /// over the version compared: of two changes at once, on any servers, one wins and
    /// the other is told `Changed`. Either way the copy is what the table now holds, so
    /// that a caller who reads again and redoes its change starts from it.
    async fn replace_signing_secrets(
        &self,
        tenant: &TenantId,
        old: &SecretSet,
        new: &SecretSet,
    ) -> Result<(), ReplaceSecretsError> {
        if tenant != &self.tenant {
            return Err(unavailable(format!("no tenant {tenant}")).into());
        }
        let doc = encode(new).map_err(unavailable)?;
        let client = self.pool.get().await.map_err(unavailable)?;
        let (stored_secrets, version) = stored(&client, &self.tenant).await?;
        if &stored_secrets != old {
            self.note(stored_secrets, version);
            return Err(ReplaceSecretsError::Changed);
        }
        let stmt = client
            .prepare_cached(
                "UPDATE tenant_secrets SET version = version + 1, doc = $3
                 WHERE tenant = $1 AND version = $2",
            )
            .await
            .map_err(unavailable)?;
        let changed = client
            .execute(&stmt, &[&self.tenant.as_str(), &version, &doc])
            .await
            .map_err(unavailable)?;
        if changed != 1 {
            // Another change came between the read and the write: read it next time.
            *self.seen() = None;
            return Err(ReplaceSecretsError::Changed);
        }
        self.note(new.clone(), version + 1);
        Ok(())
    }
}
