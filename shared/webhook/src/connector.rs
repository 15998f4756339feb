//! How webhook calls get their connections: each destination (scheme, host and port) has
//! a bounded number of connection slots, and a connection, from the start of its connect
//! until it closes, holds one. A call first takes an idle connection of its destination;
//! only when none is idle does it connect, and a connect waits for a free slot rather than
//! adding one more half-open connection to a receiver whose accept backlog is full. So no
//! destination ever has more than its slots in connections, `SYN-SENT` included.
//!
//! Every name is resolved here, and every address it resolves to is checked against the
//! destination policy: the connection only ever uses checked addresses (DNS rebinding
//! does not get past the guard).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::destination::DestinationPolicy;

/// Why a connection was not made: the destination's addresses are all refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RefusedAddress(pub String);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A destination's connection slots, made on first use; idle ones are dropped past
/// [`KEEP`] destinations.
struct Slots {
    per_destination: usize,
    by_destination: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// Destinations whose slots are kept while none of them is held.
const KEEP: usize = 1024;

impl Slots {
    fn of(&self, destination: &str) -> Arc<Semaphore> {
        let mut all = self
            .by_destination
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if all.len() >= KEEP && !all.contains_key(destination) {
            let full = self.per_destination;
            all.retain(|_, slots| Arc::strong_count(slots) > 1 || slots.available_permits() < full);
        }
        let slots = all.entry(destination.to_string());
        slots
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_destination)))
            .clone()
    }
}

/// Connects to checked addresses, within each destination's connection slots.
#[derive(Clone)]
pub struct GuardedConnector {
    policy: Arc<DestinationPolicy>,
    slots: Arc<Slots>,
    connect_timeout: Duration,
}

impl GuardedConnector {
    /// At most `per_destination` connections to each destination, each connect given
    /// `connect_timeout` once it has its slot.
    pub fn new(
        policy: Arc<DestinationPolicy>,
        per_destination: usize,
        connect_timeout: Duration,
    ) -> Self {
        Self {
            policy,
            slots: Arc::new(Slots {
                per_destination: per_destination.max(1),
                by_destination: Mutex::new(HashMap::new()),
            }),
            connect_timeout,
        }
    }
}

impl tower_service::Service<Uri> for GuardedConnector {
    type Response = SlotConnection;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<SlotConnection, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let me = self.clone();
        Box::pin(async move { me.connect(uri).await })
    }
}

impl GuardedConnector {
    async fn connect(self, uri: Uri) -> Result<SlotConnection, BoxError> {
        let host = uri.host().ok_or("the URL has no host")?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let https = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let destination = format!("{}://{host}:{port}", uri.scheme_str().unwrap_or("http"));
        let slot = (self.slots.of(&destination).acquire_owned().await)
            .expect("the slots' semaphores are never closed");
        let addresses = checked_addresses(&self.policy, &host, port).await?;
        let connect = connect_first(&addresses);
        let stream = match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(stream) => stream?,
            Err(_) => {
                let after = self.connect_timeout.as_secs();
                return Err(format!("connect timed out after {after}s").into());
            }
        };
        // Webhook calls are small requests that want their answer at once.
        stream.set_nodelay(true)?;
        Ok(SlotConnection {
            io: TokioIo::new(stream),
            _slot: slot,
        })
    }
}

/// Resolves `host`, then drops every address the policy refuses; fails with
/// [`RefusedAddress`] if none is left.
async fn checked_addresses(
    policy: &DestinationPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, BoxError> {
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await?.collect();
    let mut refusals = Vec::new();
    let allowed: Vec<SocketAddr> = (resolved.into_iter())
        .filter(|a| match policy.check_ip(a.ip()) {
            Ok(()) => true,
            Err(why) => {
                refusals.push(why);
                false
            }
        })
        .collect();
    if allowed.is_empty() {
        let why = (refusals.first().cloned()).unwrap_or_else(|| "no addresses".into());
        return Err(Box::new(RefusedAddress(format!(
            "{host} resolves to {why}"
        ))));
    }
    Ok(allowed)
}

/// The first address that takes the connection, in the resolver's order; the last
/// address's error if none does.
async fn connect_first(addresses: &[SocketAddr]) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no addresses");
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A connection and the slot it holds at its destination until it is dropped.
pub struct SlotConnection {
    io: TokioIo<TcpStream>,
    _slot: OwnedSemaphorePermit,
}

impl Connection for SlotConnection {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

impl Read for SlotConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl Write for SlotConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
