//! Owner notices: the database tells a server when another one changes a row it owns (a
//! cancel or a replace through another server's API, a take-over; see migration
//! `V4__owner_notices`), on the channel `boomerang_owners`, on a connection of its own.
//! What the server kept of that row is then no longer vouched for ([`Owned`]), and the
//! next claim of it reads the row.
//!
//! Listening counts only once it is proven: a notice sent from a pooled connection comes
//! back on the listening one, and the pooled connections name this server (a pooler in
//! transaction mode, or one that drops the connections' `options`, fails that). While
//! the connection is lost or unproven, nothing is vouched for, and every claim reads its
//! row (as a server that never listened does). The connection is pinged every 2 s (a
//! quarter of `--server-lease` if that is less), each ping also reading this server's
//! lease, and what is kept is vouched for only until half a lease after the last ping
//! that answered: a connection gone silent (a network cut with no reset) or a server
//! that stalled past its lease vouches for nothing.

use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::mpsc;
use tokio_postgres::Notification;

use boomerang_core::domain::TaskId;

use super::owned::Owned;
use crate::connect::{connect_one, ListenError, PgSettings};

pub(crate) const CHANNEL: &str = "boomerang_owners";
/// The id in a probe's payload (see [`probe`]).
const PROBE: &str = "probe";
/// Most time between pings, and how long a ping may take.
const PING_EVERY: Duration = Duration::from_secs(2);
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// How often the connection is pinged (a ping also finds this server's lease alive),
/// and for how long after a ping anything is vouched for: half a lease, so that a server
/// that stalled past its lease (and may have been taken over) vouches for nothing when
/// it wakes, before it hears of the take-over.
#[derive(Clone, Copy)]
struct Pace {
    every: Duration,
    proof_lasts: Duration,
}

impl Pace {
    fn of(lease: Duration) -> Pace {
        Pace {
            every: PING_EVERY.min(lease / 4),
            proof_lasts: lease / 2,
        }
    }
}
/// How long to wait before connecting again.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Listens for the notices to `server` for as long as the process runs.
pub(crate) fn spawn(
    settings: PgSettings,
    pool: Pool,
    owned: Owned,
    server: String,
    lease: Duration,
) {
    let pace = Pace::of(lease);
    tokio::spawn(async move {
        loop {
            if let Err(e) = listen(&settings, &pool, &owned, &server, pace).await {
                tracing::warn!(error = %e, "owner notices unheard; claims read their rows");
            }
            owned.deaf();
            tokio::time::sleep(RECONNECT_AFTER).await;
        }
    });
}

#[derive(Debug, thiserror::Error)]
enum Lost {
    #[error(transparent)]
    Connect(#[from] ListenError),
    #[error("the connection failed: {0}")]
    Failed(#[from] tokio_postgres::Error),
    #[error("the connection ended")]
    Ended,
    #[error("a ping went unanswered for {PING_TIMEOUT:?}")]
    Silent,
    #[error("a notice sent through the pool did not come back within {PING_TIMEOUT:?} (a pooler in transaction mode drops them)")]
    Unproven,
    #[error("the pool's connections do not name this server (a pooler dropped their `options`): its own writes would notify it")]
    Unnamed,
    #[error("no connection from the pool: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("this server's lease has lapsed: its rows are others' to take")]
    Lapsed,
}

/// Listens until the connection is lost.
async fn listen(
    settings: &PgSettings,
    pool: &Pool,
    owned: &Owned,
    server: &str,
    pace: Pace,
) -> Result<(), Lost> {
    let (client, mut notices) = connect_one(settings).await?;
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
    probe(pool, &mut notices, owned, server).await?;
    alive(&client, owned, server, pace).await?;
    owned.listening();
    // The notices are heard while a ping waits for its answer.
    let hear = async {
        while let Some(notice) = notices.recv().await {
            heard(&notice, owned, server);
        }
        Err(Lost::Ended)
    };
    let ping = async {
        loop {
            tokio::time::sleep(pace.every).await;
            alive(&client, owned, server, pace).await?;
        }
    };
    tokio::select! {
        lost = hear => lost,
        lost = ping => lost,
    }
}

/// Pings: the connection answers, and this server's lease is alive in the table, which
/// vouches for what it keeps for [`Pace::proof_lasts`] more. A lapsed lease gives every
/// row up: another server may be taking them over.
async fn alive(
    client: &tokio_postgres::Client,
    owned: &Owned,
    server: &str,
    pace: Pace,
) -> Result<(), Lost> {
    let asked = std::time::Instant::now();
    let row = tokio::time::timeout(
        PING_TIMEOUT,
        client.query_opt(
            "SELECT alive_until > now() FROM servers WHERE id = $1",
            &[&server],
        ),
    )
    .await
    .map_err(|_| Lost::Silent)??;
    if !row.is_some_and(|r| r.get::<_, bool>(0)) {
        owned.lost_all();
        return Err(Lost::Lapsed);
    }
    owned.proven_until(asked + pace.proof_lasts);
    Ok(())
}

/// Proves the notices work before anything is vouched for on them: a notice sent from a
/// pooled connection (as another server's write would send one) comes back here, and
/// the pool's connections name this server. Notices heard meanwhile are taken as usual.
async fn probe(
    pool: &Pool,
    notices: &mut mpsc::UnboundedReceiver<Notification>,
    owned: &Owned,
    server: &str,
) -> Result<(), Lost> {
    let client = pool.get().await?;
    let named: Option<String> = client
        .query_one("SELECT current_setting('boomerang.server', true)", &[])
        .await?
        .get(0);
    if named.as_deref() != Some(server) {
        return Err(Lost::Unnamed);
    }
    let probe = format!("{server} {PROBE} {}", ulid::Ulid::new());
    client
        .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &probe])
        .await?;
    let back = async {
        while let Some(notice) = notices.recv().await {
            if notice.payload() == probe {
                return Ok(());
            }
            heard(&notice, owned, server);
        }
        Err(Lost::Ended)
    };
    tokio::time::timeout(PING_TIMEOUT, back)
        .await
        .map_err(|_| Lost::Unproven)?
}

/// A notice's payload: the row's owner before the change, its id (`*`: every row it
/// owned, freed by a take-over), its owner after.
fn heard(notice: &Notification, owned: &Owned, server: &str) {
    let mut parts = notice.payload().split(' ');
    let (Some(before), Some(id), after) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    if before != server {
        return;
    }
    if id == PROBE {
        return;
    }
    if id == "*" {
        tracing::warn!("this server was taken over (its lease lapsed): its rows are freed");
        return owned.lost_all();
    }
    match id.parse::<TaskId>() {
        Ok(id) => owned.noticed(id, after == Some(server)),
        Err(_) => tracing::warn!(payload = notice.payload(), "an owner notice unreadable"),
    }
}
