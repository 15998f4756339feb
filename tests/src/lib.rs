//! Harness for end-to-end tests: the real `boomerang` binary, real HTTP receivers on
//! loopback, and waits with deadlines instead of sleeps.

pub mod aws;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use boomerang::domain::SigningSecret;
use serde_json::Value;

pub const API_KEY: &str = "bmr_e2e_test_key";

/// The `boomerang` binary of this workspace, built on first use if it is missing.
pub fn binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        // target/<profile>/deps/<test> → target/<profile>/boomerang
        let exe = std::env::current_exe().expect("test executable path");
        let dir = exe.parent().and_then(Path::parent).expect("target dir");
        let bin = dir.join(format!("boomerang{}", std::env::consts::EXE_SUFFIX));
        if !bin.exists() {
            let status = Command::new(env!("CARGO"))
                .args(["build", "-p", "boomerang-local", "--bin", "boomerang"])
                .status()
                .expect("cargo build");
            assert!(status.success(), "building the boomerang binary failed");
        }
        bin
    })
    .clone()
}

/// Polls `check` until it returns `Some`, or panics with `what` after `within`.
pub async fn wait_for<T, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub struct ServerOptions {
    pub dev: bool,
    pub lease_margin: &'static str,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            dev: true,
            lease_margin: "2s",
        }
    }
}

/// A running `boomerang serve` on its own data directory and a free port.
pub struct Server {
    child: Child,
    pub base: String,
    pub data_dir: PathBuf,
    pub secret: SigningSecret,
    options: ServerOptions,
    http: reqwest::Client,
}

impl Server {
    pub fn start(options: ServerOptions) -> Self {
        let data_dir = std::env::temp_dir().join(format!("boomerang-e2e-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&data_dir).unwrap();
        let secret = SigningSecret::generate();
        let (child, base) = spawn(&data_dir, &secret, &options);
        Self {
            child,
            base,
            data_dir,
            secret,
            options,
            http: reqwest::Client::new(),
        }
    }

    /// `kill -9`, then start again on the same data directory.
    pub fn kill9_and_restart(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().unwrap();
        let (child, base) = spawn(&self.data_dir, &self.secret, &self.options);
        self.child = child;
        self.base = base;
    }

    /// What the server logged on stderr (all runs).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data_dir.join("stderr.log")).unwrap_or_default()
    }

    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(API_KEY)
    }

    /// POST /v1/tasks; returns the status and the JSON body.
    pub async fn register(&self, task: Value) -> (u16, Value) {
        let res = self
            .request(reqwest::Method::POST, "/v1/tasks")
            .json(&task)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        let res = self
            .request(reqwest::Method::GET, path)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    }

    pub async fn task(&self, id: &str) -> Value {
        let (status, body) = self.get_json(&format!("/v1/tasks/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Waits until the task reaches `status`; returns the task.
    pub async fn wait_status(&self, id: &str, status: &str, within: Duration) -> Value {
        wait_for(&format!("task {id} to be {status}"), within, || async {
            // A request may fail while the server restarts; keep polling.
            let res = self
                .request(reqwest::Method::GET, &format!("/v1/tasks/{id}"))
                .send()
                .await
                .ok()?;
            let task: Value = res.json().await.ok()?;
            (task["status"] == status).then_some(task)
        })
        .await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

fn spawn(data_dir: &Path, secret: &SigningSecret, options: &ServerOptions) -> (Child, String) {
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(data_dir.join("stderr.log"))
        .unwrap();
    let mut cmd = Command::new(binary());
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--sweep-interval", "1s"])
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--api-key", API_KEY, "--lease-margin", options.lease_margin])
        .args(["--signing-secret", &secret.expose()])
        .env_remove("BOOMERANG_DEV")
        .stdout(Stdio::piped())
        .stderr(stderr);
    if options.dev {
        cmd.arg("--dev");
    }
    let mut child = cmd.spawn().expect("spawn boomerang serve");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let (false, Some(addr)) = (sent, line.strip_prefix("Boomerang listening on ")) {
                let _ = tx.send(addr.trim().to_string());
                sent = true;
            }
        }
    });
    let base = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("server did not print its address");
    (child, base)
}

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
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start(script: impl Fn(&str, usize) -> Reply + Send + Sync + 'static) -> Self {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let rec = received.clone();
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let (rec, script) = (rec.clone(), script.clone());
            async move { answer(rec, script, uri, headers, body).await }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            addr,
            received,
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
