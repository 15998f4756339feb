//! The benchmark's receiver: records when each attempt arrived, answers 500 to the first
//! `fail_first` attempts of each task and 200 after, and reports what it saw. It can also
//! play a receiver of limited capacity (`slots` requests served at once, `serve_ms` each;
//! the others wait their turn) or one that never answers. With `backlog`, it is a server
//! of `slots` workers that each accept one connection and serve it until it goes quiet,
//! with a listen backlog that small: connections past it wait in `SYN-SENT`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::get;
use axum::{Json, Router};
use boomerang_webhook::client::HEADER_ATTEMPT;
use boomerang_webhook::signing::HEADER_ID;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

/// One request the receiver got.
#[derive(Clone, Debug, Deserialize)]
pub struct Arrival {
    pub path: String,
    pub attempt: u32,
    pub at_ms: i64,
}

/// How the receiver behaves.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReceiverArgs {
    /// Answer 500 to the first N attempts of each task.
    #[arg(long, default_value_t = 0)]
    pub fail_first: u32,
    /// Hold the first request of each path this long before answering.
    #[arg(long, default_value_t = 0)]
    pub hang_first_ms: u64,
    /// Requests served at once (0: no limit); the others wait for a slot.
    #[arg(long, default_value_t = 0)]
    pub slots: usize,
    /// How long serving one request takes.
    #[arg(long, default_value_t = 0)]
    pub serve_ms: u64,
    /// Never answer at all.
    #[arg(long)]
    pub never_answer: bool,
    /// Serve with `slots` workers, each accepting one connection at a time, and this
    /// listen backlog (unset: accept every connection at once).
    #[arg(long)]
    pub backlog: Option<u32>,
    /// With `backlog`: how long a worker waits for the next request on its connection
    /// before it closes it and accepts another (0: it closes after each answer).
    #[arg(long, default_value_t = 0)]
    pub worker_keep_alive_ms: u64,
}

impl ReceiverArgs {
    /// As command-line arguments of the `receiver` mode.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "receiver".to_string(),
            format!("--fail-first={}", self.fail_first),
            format!("--hang-first-ms={}", self.hang_first_ms),
            format!("--slots={}", self.slots),
            format!("--serve-ms={}", self.serve_ms),
        ];
        if self.never_answer {
            args.push("--never-answer".into());
        }
        if let Some(backlog) = self.backlog {
            args.push(format!("--backlog={backlog}"));
            args.push(format!(
                "--worker-keep-alive-ms={}",
                self.worker_keep_alive_ms
            ));
        }
        args
    }
}

#[derive(Default)]
struct Seen {
    arrivals: Vec<(String, u32, i64)>,
    tasks: BTreeSet<String>,
    /// Requests being served now, and the most there ever were.
    in_flight: usize,
    most_in_flight: usize,
}

pub async fn run(args: ReceiverArgs) -> Result<()> {
    let ReceiverArgs {
        fail_first,
        hang_first_ms,
        ..
    } = args;
    let slots = Arc::new(Semaphore::new(match args.slots {
        0 => Semaphore::MAX_PERMITS,
        n => n,
    }));
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let (a, t, p, c) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
    let r = seen;
    let app = Router::new()
        .route(
            "/__arrivals",
            get(move || async move { Json(arrivals(&a)) }),
        )
        .route("/__tasks", get(move || async move { Json(tasks(&t)) }))
        .route(
            "/__count",
            get({
                let seen = c;
                move || async move { Json(seen.lock().expect("receiver lock").arrivals.len()) }
            }),
        )
        .route(
            "/__peak",
            get(move || async move { Json(p.lock().expect("receiver lock").most_in_flight) }),
        )
        .fallback(move |uri: Uri, headers: HeaderMap| async move {
            let _slot = slots.acquire().await.expect("never closed");
            let _serving = Serving::start(&r);
            let header = |n: &str| {
                headers
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string()
            };
            let attempt: u32 = header(HEADER_ATTEMPT).parse().unwrap_or(0);
            let now = chrono::Utc::now().timestamp_millis();
            let first = {
                let mut seen = r.lock().expect("receiver lock");
                let path = uri.path().to_string();
                let first = hang_first_ms > 0 && !seen.arrivals.iter().any(|(p, _, _)| *p == path);
                seen.arrivals.push((path, attempt, now));
                seen.tasks.insert(header(HEADER_ID));
                first
            };
            if args.never_answer {
                std::future::pending::<()>().await;
            }
            if args.serve_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(args.serve_ms)).await;
            }
            if first && hang_first_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(hang_first_ms)).await;
            }
            if attempt <= fail_first {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::OK
            }
        });
    match args.backlog {
        None => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("receiver on http://{}", listener.local_addr()?);
            axum::serve(listener, app).await?;
        }
        Some(backlog) => {
            let workers = Workers {
                count: args.slots.max(1),
                backlog,
                keep_alive: std::time::Duration::from_millis(args.worker_keep_alive_ms),
            };
            serve_by_workers(app, workers).await?
        }
    }
    Ok(())
}

/// A worker server: `count` workers, each accepting one connection and serving it until
/// it closes or stays quiet for `keep_alive` (zero: closed after each answer), on a
/// listener with a `backlog` this small: a thread-per-connection server under a burst.
struct Workers {
    count: usize,
    backlog: u32,
    keep_alive: std::time::Duration,
}

async fn serve_by_workers(app: Router, workers: Workers) -> Result<()> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind("127.0.0.1:0".parse()?)?;
    let listener = Arc::new(socket.listen(workers.backlog)?);
    println!("receiver on http://{}", listener.local_addr()?);
    let keep_alive = workers.keep_alive;
    let workers = (0..workers.count).map(|_| {
        let (listener, app) = (listener.clone(), app.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                let mut http = hyper::server::conn::http1::Builder::new();
                match keep_alive.is_zero() {
                    true => http.keep_alive(false),
                    false => (http.timer(hyper_util::rt::TokioTimer::new()))
                        .header_read_timeout(keep_alive),
                };
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = http.serve_connection(io, service).await;
            }
        })
    });
    for worker in workers.collect::<Vec<_>>() {
        worker.await?;
    }
    Ok(())
}

/// One request being served, counted while it lives.
struct Serving<'a>(&'a Mutex<Seen>);

impl<'a> Serving<'a> {
    fn start(seen: &'a Mutex<Seen>) -> Self {
        let mut s = seen.lock().expect("receiver lock");
        s.in_flight += 1;
        s.most_in_flight = s.most_in_flight.max(s.in_flight);
        Serving(seen)
    }
}

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        self.0.lock().expect("receiver lock").in_flight -= 1;
    }
}

fn arrivals(seen: &Mutex<Seen>) -> Value {
    let seen = seen.lock().expect("receiver lock");
    let list: Vec<Value> = seen
        .arrivals
        .iter()
        .map(|(path, attempt, at_ms)| json!({"path": path, "attempt": attempt, "at_ms": at_ms}))
        .collect();
    Value::Array(list)
}

fn tasks(seen: &Mutex<Seen>) -> Value {
    json!(seen.lock().expect("receiver lock").tasks)
}

/// The gaps between consecutive attempts of each path, in milliseconds.
pub fn gaps(arrivals: &[Arrival]) -> Vec<i64> {
    let mut by_path: HashMap<&str, Vec<(u32, i64)>> = HashMap::new();
    for a in arrivals {
        by_path
            .entry(&a.path)
            .or_default()
            .push((a.attempt, a.at_ms));
    }
    by_path
        .values_mut()
        .flat_map(|v| {
            v.sort_unstable();
            v.windows(2).map(|w| w[1].1 - w[0].1).collect::<Vec<_>>()
        })
        .collect()
}
