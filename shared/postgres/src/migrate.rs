//! The schema: versioned migrations (`migrations/V<n>__<name>.sql`), applied at start by
//! whichever server gets there first, under an advisory lock so that servers starting
//! together do not apply one twice. A database that has migrations this server does not
//! know (a newer server migrated it) is refused: an older server could misread it.

use deadpool_postgres::Pool;

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// The key of the advisory lock held while migrating.
const MIGRATION_LOCK: i64 = 0x626f_6f6d_6572;

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("cannot reach the database: {0}")]
    Connect(#[source] deadpool_postgres::PoolError),
    #[error("cannot take the migration lock: {0}")]
    Lock(#[source] tokio_postgres::Error),
    #[error("the database's schema is newer than this server knows (or was changed by hand); upgrade this server: {0}")]
    Newer(#[source] refinery::Error),
    #[error("migrating the schema failed: {0}")]
    Failed(#[source] refinery::Error),
}

/// The schema version this server knows: its newest migration.
pub fn known_version() -> u32 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| m.version())
        .max()
        .unwrap_or(0)
}

/// Brings the database's schema up to this server's, or refuses a newer one.
pub async fn migrate(pool: &Pool) -> Result<(), MigrateError> {
    let mut conn = pool.get().await.map_err(MigrateError::Connect)?;
    let client: &mut tokio_postgres::Client = &mut conn;
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(MigrateError::Lock)?;
    let result = embedded::migrations::runner()
        .set_abort_missing(true)
        .set_abort_divergent(true)
        .run_async(client)
        .await;
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                refinery::error::Kind::MissingVersion(_)
                    | refinery::error::Kind::DivergentVersion(_, _)
            ) =>
        {
            Err(MigrateError::Newer(e))
        }
        Err(e) => Err(MigrateError::Failed(e)),
    }
}
