//! How webhook calls get their connections: each destination (scheme, host and port) has
//! a bounded number of connection slots, and a connection, from the start of its set-up
//! until it closes, holds one. A call first takes an idle connection of its destination;
//! only when none is idle does it connect, and a connect waits for a free slot rather than
//! adding one more half-open connection to a receiver whose accept backlog is full. So no
//! destination ever has more than its slots in connections, `SYN-SENT` included.
//!
//! Every name is resolved by [`GuardedResolver`], which drops each address the
//! destination policy refuses: the connection only ever uses checked addresses (DNS
//! rebinding does not get past the guard).

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
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_service::Service;

use super::destination::DestinationPolicy;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a connection was not made: the destination's addresses are all refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RefusedAddress(pub String);

/// Resolves names, then drops every address the policy refuses; if none is left the
/// connect fails with [`RefusedAddress`].
#[derive(Clone)]
pub struct GuardedResolver(pub Arc<DestinationPolicy>);

impl Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let policy = self.0.clone();
        Box::pin(async move {
            let host = name.as_str();
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
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
                let refused = RefusedAddress(format!("{host} resolves to {why}"));
                return Err(Box::new(refused) as BoxError);
            }
            Ok(allowed.into_iter())
        })
    }
}

/// Destinations whose slots are kept while none of them is held.
const KEEP: usize = 1024;

/// Each destination's connection slots, made on first use.
struct Slots {
    per_destination: usize,
    by_destination: Mutex<HashMap<String, Arc<Semaphore>>>,
}

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

/// `inner`'s connections (TCP and TLS), each holding one of its destination's slots, and
/// each set up within a deadline.
#[derive(Clone)]
pub struct SlotConnector<C> {
    inner: C,
    slots: Arc<Slots>,
    setup_timeout: Duration,
}

impl<C> SlotConnector<C> {
    /// At most `per_destination` connections to each destination; each has
    /// `setup_timeout` for its name, its connect and its TLS handshake once it has its
    /// slot (a connect the client goes on with after a call took an idle connection has
    /// no call's deadline over it).
    pub fn new(inner: C, per_destination: usize, setup_timeout: Duration) -> Self {
        Self {
            inner,
            slots: Arc::new(Slots {
                per_destination: per_destination.max(1),
                by_destination: Mutex::new(HashMap::new()),
            }),
            setup_timeout,
        }
    }
}

impl<C> Service<Uri> for SlotConnector<C>
where
    C: Service<Uri> + Clone + Send + 'static,
    C::Future: Send,
    C::Error: Into<BoxError>,
    C::Response: Send,
{
    type Response = SlotConnection<C::Response>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let slots = self.slots.clone();
        let setup_timeout = self.setup_timeout;
        // The clone is the one made ready above; the original stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let slot = (slots.of(&destination(&uri)).acquire_owned().await)
                .expect("the slots' semaphores are never closed");
            let io = match tokio::time::timeout(setup_timeout, inner.call(uri)).await {
                Ok(io) => io.map_err(Into::into)?,
                Err(_) => {
                    let after = setup_timeout.as_secs();
                    return Err(format!("connection not set up within {after}s").into());
                }
            };
            Ok(SlotConnection { io, _slot: slot })
        })
    }
}

/// A destination as the slots count it: scheme, host and port.
fn destination(uri: &Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("http");
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    format!("{scheme}://{}:{port}", uri.host().unwrap_or(""))
}

/// A connection and the slot it holds at its destination until it is dropped.
pub struct SlotConnection<T> {
    io: T,
    _slot: OwnedSemaphorePermit,
}

impl<T: Connection> Connection for SlotConnection<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

impl<T: Read + Unpin> Read for SlotConnection<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for SlotConnection<T> {
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

#[cfg(test)]
mod tests {
    use super::destination;

    #[test]
    fn a_destination_is_its_scheme_host_and_port() {
        let of = |u: &str| destination(&u.parse().unwrap());
        assert_eq!(of("https://a.example/x"), "https://a.example:443");
        assert_eq!(of("http://a.example:8080/"), "http://a.example:8080");
        assert_eq!(of("http://[::1]:9/"), "http://[::1]:9");
    }
}
