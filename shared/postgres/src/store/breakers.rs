//! Circuit breakers, one row per tenant and destination, written conditionally on their
//! version; `open` is kept beside the document so that open ones are listed by an index
//! read, not by decoding every row.
//!
//! Of two servers writing one breaker at once, exactly one wins: a first write is an
//! insert that does nothing where a row exists (the loser's waits for the winner's
//! commit, then finds it), a later one an update of the version read.

use async_trait::async_trait;

use boomerang_core::domain::{Breaker, Destination, TenantId};
use boomerang_core::ports::{Breakers, StoreError, StoredBreaker};

use super::codec::{decode, encode};
use super::sql::unavailable;
use super::PgStore;

#[async_trait]
impl Breakers for PgStore {
    async fn breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
    ) -> Result<Option<StoredBreaker>, StoreError> {
        let row = self
            .query_opt(
                "SELECT doc, version FROM breakers WHERE tenant = $1 AND destination = $2",
                &[&tenant.as_str(), &destination.as_str()],
            )
            .await?;
        row.map(|r| {
            Ok(StoredBreaker {
                breaker: decode(r.get(0))?,
                version: u64::try_from(r.get::<_, i64>(1)).unwrap_or_default(),
            })
        })
        .transpose()
    }

    async fn save_breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        breaker: &Breaker,
        version: Option<u64>,
    ) -> Result<bool, StoreError> {
        let (doc, open) = (encode(breaker)?, breaker.is_open());
        let (tenant, destination) = (tenant.as_str(), destination.as_str());
        let client = self.client().await?;
        let changed = match version {
            None => {
                let stmt = client
                    .prepare_cached(
                        "INSERT INTO breakers (tenant, destination, version, open, doc)
                         VALUES ($1, $2, 1, $3, $4)
                         ON CONFLICT (tenant, destination) DO NOTHING",
                    )
                    .await
                    .map_err(unavailable)?;
                client
                    .execute(&stmt, &[&tenant, &destination, &open, &doc])
                    .await
            }
            Some(v) => {
                // A version past i64 was never written: it matches no row.
                let expected = i64::try_from(v).unwrap_or(i64::MAX);
                let stmt = client
                    .prepare_cached(
                        "UPDATE breakers SET version = version + 1, open = $3, doc = $4
                         WHERE tenant = $1 AND destination = $2 AND version = $5",
                    )
                    .await
                    .map_err(unavailable)?;
                client
                    .execute(&stmt, &[&tenant, &destination, &open, &doc, &expected])
                    .await
            }
        };
        changed.map(|n| n == 1).map_err(unavailable)
    }

    async fn open_breakers(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(Destination, Breaker)>, StoreError> {
        let rows = self
            .query(
                "SELECT destination, doc FROM breakers WHERE tenant = $1 AND open
                 ORDER BY destination",
                &[&tenant.as_str()],
            )
            .await?;
        rows.iter()
            .map(|r| Ok((Destination::of(r.get(0)), decode(r.get(1))?)))
            .collect()
    }
}
