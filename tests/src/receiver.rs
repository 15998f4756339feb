//! Real HTTP receivers on loopback that answer as a test scripts them and keep what they
//! were sent.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// What a receiver answers to one request.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: vec![],
            body: "ok".into(),
            delay: Duration::ZERO,
        }
    }
}

/// One request a receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub at: Instant,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

type Script = dyn Fn(&str, usize) -> Reply + Send + Sync;

/// A real HTTP server on loopback that records requests and answers per a script of
/// (path, how many requests that path had before) → reply.
pub struct Receiver {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    in_flight: Arc<InFlight>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start(script: impl Fn(&str, usize) -> Reply + Send + Sync + 'static) -> Self {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let in_flight: Arc<InFlight> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let (rec, flying) = (received.clone(), in_flight.clone());
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let (rec, script, flying) = (rec.clone(), script.clone(), flying.clone());
            async move {
                let _call = flying.begin();
                answer(rec, script, uri, headers, body).await
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            addr,
            received,
            in_flight,
            task,
        }
    }

    /// Always answers `status`.
    pub async fn always(status: u16) -> Self {
        Self::start(move |_, _| Reply::status(status)).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    pub fn count(&self, path: &str) -> usize {
        self.received().iter().filter(|r| r.path == path).count()
    }

    /// The most requests it was answering at once (from arrival until the answer was
    /// handed back).
    pub fn most_at_once(&self) -> usize {
        self.in_flight.peak.load(Ordering::SeqCst)
    }
}

/// Requests being answered, and the most there were at once.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl InFlight {
    fn begin(self: &Arc<Self>) -> CallGuard {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        CallGuard(self.clone())
    }
}

/// Counts one request as answered when dropped.
struct CallGuard(Arc<InFlight>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Script>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let seen = {
        let mut all = received.lock().unwrap();
        let seen = all.iter().filter(|r| r.path == path).count();
        all.push(Received {
            at: Instant::now(),
            path: path.clone(),
            headers,
            body,
        });
        seen
    };
    let reply = script(&path, seen);
    tokio::time::sleep(reply.delay).await;
    let mut res = (StatusCode::from_u16(reply.status).unwrap(), reply.body).into_response();
    for (name, value) in reply.headers {
        res.headers_mut().insert(name, value.parse().unwrap());
    }
    res
}

/// A received request's header, or "".
pub fn header(r: &Received, name: &str) -> String {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}
