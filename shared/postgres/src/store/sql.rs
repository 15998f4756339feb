//! What every store module shares: errors of the database and of the pool as store
//! errors.

use boomerang_core::error_chain::error_chain;
use boomerang_core::ports::StoreError;
use tokio_postgres::error::SqlState;

/// A failed statement: a lost unique race is a conflict; anything else means the
/// database could not do it now (the engine answers 503 and tries again later).
pub(crate) fn unavailable(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
        return StoreError::Conflict;
    }
    StoreError::Unavailable(Box::new(Described(e)))
}

/// A driver error told with its causes: the driver's own message for a statement the
/// database refused is only "db error", and the database's reason ("could not extend
/// file …: No space left on device") is its source.
#[derive(Debug)]
struct Described(tokio_postgres::Error);

impl std::fmt::Display for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&error_chain(&self.0))
    }
}

impl std::error::Error for Described {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// No connection from the pool, told with its causes (a refused connection's reason is
/// the driver error's source).
pub(crate) fn pool_unavailable(e: deadpool_postgres::PoolError) -> StoreError {
    StoreError::Unavailable(error_chain(&e).into())
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
