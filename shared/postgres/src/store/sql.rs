//! What every store module shares: errors of the database and of the pool as store
//! errors.

use boomerang_core::ports::StoreError;
use tokio_postgres::error::SqlState;

/// A failed statement: a lost unique race is a conflict; anything else means the
/// database could not do it now (the engine answers 503 and tries again later).
pub(crate) fn unavailable(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
        return StoreError::Conflict;
    }
    StoreError::Unavailable(e.into())
}

pub(crate) fn pool_unavailable(e: deadpool_postgres::PoolError) -> StoreError {
    StoreError::Unavailable(e.into())
}

/// Milliseconds since the epoch, as the tables keep times.
pub(crate) fn ms(at: chrono::DateTime<chrono::Utc>) -> i64 {
    at.timestamp_millis()
}

/// A time the tables keep, back.
pub(crate) fn at_ms(ms: i64) -> Result<chrono::DateTime<chrono::Utc>, StoreError> {
    chrono::DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| StoreError::Corrupt(format!("time out of range: {ms}").into()))
}
