//! The API's HTTP server: its own accept loop, so that a flood of connections cannot take
//! the API from the clients that use it.
//!
//! - A connection has `header_timeout` to send a request's headers, counted from its start
//!   or from the end of its previous response: a slow sender (slowloris) and a kept-alive
//!   connection left idle are both closed after it.
//! - At most `max_connections` are open, below the open-file limit so that deliveries and
//!   the store keep their files. A connection beyond it takes the place of an idle one:
//!   first one that never completed a request (answered `503`: its first request may be
//!   on its way), then the longest idle; a connection is
//!   never closed while a request is under way on it. Only if every connection is busy is
//!   the new one refused, with a `503` problem and `Retry-After`.
//! - Accept errors (out of files) are retried within milliseconds, not a second later.
//! - Once the connections of a storm are closed, the allocator is asked to give its free
//!   memory back to the system.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tower::ServiceExt;

/// The limits of the API's connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a connection has to send a request's headers, from its start or from its
    /// previous response.
    pub header_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
}

/// Open files kept for everything but the API's connections: deliveries (a connection
/// each, and idle ones kept for reuse), the store, the timer and the runtime.
pub fn reserved_files(concurrency: usize) -> u64 {
    2 * concurrency as u64 + 128
}

/// The connection cap that fits under an open-file limit of `open_files`.
pub fn max_connections_for(open_files: u64, concurrency: usize) -> usize {
    let room = open_files.saturating_sub(reserved_files(concurrency));
    usize::try_from(room)
        .unwrap_or(usize::MAX)
        .clamp(16, 65_536)
}

/// Memory is given back once no more than this many connections are open...
const TRIM_BELOW: usize = 32;
/// ...after at least this many were.
const TRIM_AFTER: usize = 256;
/// How long a refused connection's answer may take to write.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);
/// Between accept errors (out of open files: the next try may find one freed).
const ACCEPT_RETRY: Duration = Duration::from_millis(5);

/// The open connections, oldest first.
#[derive(Default)]
struct Connections {
    open: Mutex<Open>,
    /// The most open at once since memory was last given back.
    peak: AtomicUsize,
}

#[derive(Default)]
struct Open {
    next_id: u64,
    by_id: BTreeMap<u64, Arc<Connection>>,
}

#[derive(Default)]
struct Connection {
    /// Requests under way (from their headers to the end of their response's body).
    busy: AtomicUsize,
    /// It has completed a request: a client's, not a flood's.
    served: AtomicBool,
    /// Close it now (it is idle and its place is wanted).
    evict: Notify,
    evicted: AtomicBool,
}

impl Connections {
    fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self) -> (u64, Arc<Connection>) {
        let mut open = self.lock();
        let id = open.next_id;
        open.next_id += 1;
        let connection = Arc::new(Connection::default());
        open.by_id.insert(id, connection.clone());
        self.peak.fetch_max(open.by_id.len(), Ordering::Relaxed);
        (id, connection)
    }

    fn remove(&self, id: u64) {
        let left = {
            let mut open = self.lock();
            open.by_id.remove(&id);
            open.by_id.len()
        };
        if left <= TRIM_BELOW && self.peak.load(Ordering::Relaxed) >= TRIM_AFTER {
            self.peak.store(left, Ordering::Relaxed);
            tokio::task::spawn_blocking(give_memory_back);
        }
    }

    /// Closes one idle connection to make room: the oldest that never completed a request,
    /// else the oldest idle one. False if every connection has a request under way.
    fn evict_one(&self) -> bool {
        let open = self.lock();
        let idle = |c: &&Arc<Connection>| {
            c.busy.load(Ordering::SeqCst) == 0 && !c.evicted.load(Ordering::SeqCst)
        };
        let never_served = open
            .by_id
            .values()
            .filter(idle)
            .find(|c| !c.served.load(Ordering::SeqCst));
        let victim = never_served.or_else(|| open.by_id.values().find(idle));
        match victim {
            Some(c) => {
                c.evicted.store(true, Ordering::SeqCst);
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A request under way on a connection, until its response's body is dropped.
struct Busy(Arc<Connection>);

impl Busy {
    fn start(connection: &Arc<Connection>) -> Self {
        connection.busy.fetch_add(1, Ordering::SeqCst);
        Self(connection.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.served.store(true, Ordering::SeqCst);
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves `router` on `listener` within `limits` until `stop` turns true; then accepts no
/// more, closes idle connections at once and the others after their request, and returns
/// once every connection is closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let connections = Arc::new(Connections::default());
    let (closed_tx, mut all_closed) = mpsc::channel::<()>(1);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stop| *stop) => break,
        };
        match accepted {
            Ok((stream, _)) => {
                let ours = (&connections, &stop, &closed_tx);
                admit(stream, &router, limits, ours);
            }
            Err(e) => {
                if out_of_files(&e) {
                    connections.evict_one();
                }
                tracing::debug!(error = %e, "accept failed");
                tokio::time::sleep(ACCEPT_RETRY).await;
            }
        }
    }
    drop(listener);
    // Each connection holds a sender: the channel closes with the last of them.
    drop(closed_tx);
    let _ = all_closed.recv().await;
}

fn out_of_files(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(code) if code == libc::EMFILE || code == libc::ENFILE)
}

/// Serves a new connection, making room for it if the cap is reached.
fn admit(
    stream: TcpStream,
    router: &Router,
    limits: ConnectionLimits,
    (connections, stop, closed): (&Arc<Connections>, &watch::Receiver<bool>, &mpsc::Sender<()>),
) {
    if connections.len() >= limits.max_connections && !connections.evict_one() {
        tokio::spawn(refuse(stream, ALL_BUSY));
        return;
    }
    let _ = stream.set_nodelay(true);
    let (id, connection) = connections.add();
    let (router, connections, stop, closed) = (
        router.clone(),
        connections.clone(),
        stop.clone(),
        closed.clone(),
    );
    tokio::spawn(async move {
        serve_connection(stream, router, limits, &connection, stop).await;
        connections.remove(id);
        drop(closed);
    });
}

async fn serve_connection(
    stream: TcpStream,
    router: Router,
    limits: ConnectionLimits,
    connection: &Arc<Connection>,
    mut stop: watch::Receiver<bool>,
) {
    let on_request = {
        let connection = connection.clone();
        hyper::service::service_fn(move |request: Request<Incoming>| {
            let busy = Busy::start(&connection);
            let router = router.clone();
            async move {
                let response = router.oneshot(request.map(Body::new)).await?;
                // The request stays under way until its response is sent.
                Ok::<_, Infallible>(response.map(|body| {
                    Body::new(body.map_frame(move |frame| {
                        let _ = &busy;
                        frame
                    }))
                }))
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let mut served = builder.serve_connection(TokioIo::new(stream), on_request);
    let evicted_idle = tokio::select! {
        _ = &mut served => return,
        () = connection.evict.notified() => {
            // Chosen while idle, but a request may have started since: it is answered
            // first (a registration cut off midway would be stored with nobody told).
            // Requests run only inside `served`, polled by this task alone, so none can
            // start between this look and the return.
            connection.busy.load(Ordering::SeqCst) == 0
        }
        _ = stop.wait_for(|stop| *stop) => false,
    };
    if !evicted_idle {
        Pin::new(&mut served).graceful_shutdown();
        let _ = served.await;
        return;
    }
    // A connection that never completed a request may have one on its way: it is told to
    // come back, rather than cut off with no answer. (Hyper has nothing of its own to
    // flush first: with no request completed, at most an error answer to a malformed
    // one, which the 503 then follows.)
    if !connection.served.load(Ordering::SeqCst) {
        refuse(served.into_parts().io.into_inner(), EVICTED).await;
    }
}

/// Why a connection is refused: every connection is busy.
const ALL_BUSY: &str = "too many connections are busy: try again in a second";
/// Why a connection that never completed a request is closed: a newer one took its place.
const EVICTED: &str = "too many connections are open: this one, which had sent no whole request, made room for a newer one; try again in a second";

/// Answers `503` with `why`, and closes the connection.
async fn refuse(mut stream: TcpStream, why: &str) {
    let body = format!(
        r#"{{"type":"urn:boomerang:problem:unavailable","title":"Service Unavailable","status":503,"detail":"{why}"}}"#
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_WRITE, write).await;
    // What the client sends meanwhile is read and dropped, briefly: a socket closed with
    // bytes unread is reset, and the client could lose the answer. A client that reads
    // it closes at once; a flood's connections linger no longer than this.
    let mut sink = [0u8; 4096];
    let mut left = LINGER_BYTES;
    let linger = async {
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, linger).await;
}

/// How long a refused connection is read from before it is closed, and how much.
const LINGER: Duration = Duration::from_millis(20);
const LINGER_BYTES: usize = 64 * 1024;

/// Asks the allocator to return its free memory to the system (glibc keeps what a storm
/// of connections freed, in each thread's arena, unless asked).
fn give_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_for_deliveries_and_the_store() {
        assert_eq!(max_connections_for(1024, 64), 1024 - 256);
        assert_eq!(max_connections_for(100, 64), 16, "never below 16");
        assert_eq!(max_connections_for(u64::MAX, 64), 65_536);
    }

    /// A client's connection, served with `router` by a task of its own: the client's
    /// end, the connection's state, the task, and the sender that stops it.
    async fn served_connection(
        router: Router,
    ) -> (
        TcpStream,
        Arc<Connection>,
        tokio::task::JoinHandle<()>,
        watch::Sender<bool>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let connection = Arc::new(Connection::default());
        let (stop_tx, stop) = watch::channel(false);
        let limits = ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            max_connections: 16,
        };
        let serving = tokio::spawn({
            let connection = connection.clone();
            async move { serve_connection(stream, router, limits, &connection, stop).await }
        });
        (client, connection, serving, stop_tx)
    }

    /// The race an eviction can lose: the connection was chosen while idle, and a request
    /// started on it before its task saw the eviction. The request is answered, and the
    /// connection closed after it.
    #[tokio::test]
    async fn a_connection_evicted_as_its_request_starts_answers_it_first() {
        use axum::routing::get;
        use tokio::io::AsyncReadExt;

        let release = Arc::new(Notify::new());
        let started = Arc::new(Notify::new());
        let (handler_release, handler_started) = (release.clone(), started.clone());
        let router = Router::new().route(
            "/slow",
            get(move || async move {
                handler_started.notify_one();
                handler_release.notified().await;
                "done"
            }),
        );
        let (mut client, connection, serving, _stop) = served_connection(router).await;

        client
            .write_all(b"GET /slow HTTP/1.1\r\nhost: test\r\n\r\n")
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(10), started.notified())
            .await
            .expect("the request started");
        connection.evicted.store(true, Ordering::SeqCst);
        connection.evict.notify_one();
        release.notify_one();

        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(10), client.read_to_string(&mut answer))
            .await
            .expect("the connection closed after its answer")
            .expect("the answer was read, not reset");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("done"), "{answer}");
        tokio::time::timeout(Duration::from_secs(10), serving)
            .await
            .expect("the connection's task ended")
            .unwrap();
    }

    /// A connection evicted before it completed a request (its request may be on its
    /// way) is answered `503` with `Retry-After`, not cut off.
    #[tokio::test]
    async fn a_connection_evicted_before_its_first_request_is_answered_503() {
        let (mut client, connection, serving, _stop) = served_connection(Router::new()).await;
        // Half a request: its headers are not complete when the eviction comes.
        client
            .write_all(b"POST /v1/tasks HTTP/1.1\r\nhost: test\r\n")
            .await
            .unwrap();
        connection.evicted.store(true, Ordering::SeqCst);
        connection.evict.notify_one();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(10), client.read_to_string(&mut answer))
            .await
            .expect("the connection closed after its answer")
            .expect("the answer was read, not reset");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(answer.contains("retry-after: 1"), "{answer}");
        assert!(answer.contains("made room for a newer one"), "{answer}");
        tokio::time::timeout(Duration::from_secs(10), serving)
            .await
            .expect("the connection's task ended")
            .unwrap();
    }

    #[test]
    fn eviction_takes_a_connection_that_never_completed_a_request_first() {
        let connections = Connections::default();
        let (_, served) = connections.add();
        served.served.store(true, Ordering::SeqCst);
        let (_, flood) = connections.add();
        let (_, busy) = connections.add();
        let _under_way = Busy::start(&busy);
        assert!(connections.evict_one());
        assert!(flood.evicted.load(Ordering::SeqCst));
        assert!(!served.evicted.load(Ordering::SeqCst));
        assert!(connections.evict_one(), "then the idle one that was served");
        assert!(served.evicted.load(Ordering::SeqCst));
        assert!(
            !connections.evict_one(),
            "never one with a request under way"
        );
    }
}
