//! Circuit breakers, one row per tenant and destination, written conditionally on their
//! version; `open` is kept beside the document so that open ones are listed by an index
//! read, not by decoding every row.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use boomerang_core::domain::{Breaker, Destination, TenantId};
use boomerang_core::ports::{Breakers, StoreError, StoredBreaker};

use super::codec::{decode, encode};
use super::sqlite::SqliteStore;
use super::writer::unavailable;

#[async_trait]
impl Breakers for SqliteStore {
    async fn breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
    ) -> Result<Option<StoredBreaker>, StoreError> {
        let (tenant, destination) = (tenant.to_string(), destination.to_string());
        self.read(move |c| {
            let row: Option<(String, i64)> = c
                .query_row(
                    "SELECT doc, version FROM breakers WHERE tenant = ?1 AND destination = ?2",
                    [tenant, destination],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(unavailable)?;
            row.map(|(doc, version)| {
                let version = u64::try_from(version).unwrap_or_default();
                Ok(StoredBreaker {
                    breaker: decode(&doc)?,
                    version,
                })
            })
            .transpose()
        })
        .await
    }

    async fn save_breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        breaker: &Breaker,
        version: Option<u64>,
    ) -> Result<bool, StoreError> {
        let (tenant, destination) = (tenant.to_string(), destination.to_string());
        let (doc, open) = (encode(breaker)?, breaker.is_open());
        let expected = version.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
        self.write(move |w| {
            let changed = match expected {
                None => w.conn.execute(
                    "INSERT OR IGNORE INTO breakers (tenant, destination, doc, version, open)
                     VALUES (?1, ?2, ?3, 1, ?4)",
                    params![tenant, destination, doc, open],
                ),
                Some(v) => w.conn.execute(
                    "UPDATE breakers SET doc = ?3, version = version + 1, open = ?4
                     WHERE tenant = ?1 AND destination = ?2 AND version = ?5",
                    params![tenant, destination, doc, open, v],
                ),
            };
            changed.map(|n| n == 1).map_err(unavailable)
        })
        .await
    }

    async fn open_breakers(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(Destination, Breaker)>, StoreError> {
        let tenant = tenant.to_string();
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT destination, doc FROM breakers
                     WHERE tenant = ?1 AND open = 1 ORDER BY destination",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([tenant], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (destination, doc) = row.map_err(unavailable)?;
                Ok((Destination::of(&destination), decode(&doc)?))
            })
            .collect()
        })
        .await
    }
}
