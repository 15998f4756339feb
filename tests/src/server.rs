//! The `boomerang` binary under test: built on first use, started on either backend,
//! and stopped (its log checked for panics) when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use boomerang_api::request::TaskRequest;
use boomerang_api::view::TaskView;
use boomerang_api::Problem;
use boomerang_client::{Answer, Client};
use boomerang_core::domain::{SigningSecret, Status, TaskId};
use serde_json::Value;

use crate::fault_proxy::{FaultProxy, Service};

use crate::aws;
use crate::binaries::binary;
use crate::cli::cli;
use crate::receiver::{header, Received};
use crate::wait::wait_for;

/// The API key a server under test on the embedded backend takes.
pub const API_KEY: &str = "bmr_e2e_test_key";

/// Which backend a server under test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// SQLite and the in-process timer.
    Embedded,
    /// Scheduler and SQS on moto, DynamoDB on dynalite, with the triggers emulated by the
    /// server. Dynalite's conditional writes are atomic under the concurrency the service
    /// creates itself (a timer and the sweep firing at once); moto's are not.
    Aws,
    /// PostgreSQL: a fresh database on the test cluster (or `database_url`'s), which
    /// `another_worker` shares.
    Postgres,
}

pub struct ServerOptions {
    pub backend: Backend,
    pub dev: bool,
    pub lease_margin: &'static str,
    /// `--sweep-interval` (the repair pass's period): 1 s unless set.
    pub sweep_interval: &'static str,
    /// `--retention`, if given.
    pub retention: Option<&'static str>,
    /// `--alert-url`, if given.
    pub alert_url: Option<String>,
    /// `--destination-limit`, if given.
    pub destination_limit: Option<usize>,
    /// Embedded: no `--api-key` or `--signing-secret`, so `serve` generates both and keeps
    /// them in its data directory (where `boomerang tasks` finds the key).
    pub generated_credentials: bool,
    /// More flags for `serve` (`--shutdown-grace 1s`).
    pub extra_args: Vec<String>,
    /// The server's open-file limit, soft and hard (so it cannot raise it), if set.
    pub open_files: Option<u64>,
    /// Where the data directory goes (embedded backend); a fresh temporary one if unset.
    pub data_dir: Option<PathBuf>,
    /// Set in the server's environment over the rest (an AWS endpoint through a fault
    /// proxy, say).
    pub env: Vec<(String, String)>,
    /// Where the server's log (`stderr.log`) goes; the data directory if unset.
    pub log_dir: Option<PathBuf>,
    /// PostgreSQL: the database (a fresh one on the test cluster if unset).
    pub database_url: Option<String>,
}

impl ServerOptions {
    pub fn on(backend: Backend) -> Self {
        Self {
            backend,
            dev: true,
            lease_margin: "2s",
            sweep_interval: "1s",
            retention: None,
            alert_url: None,
            destination_limit: None,
            generated_credentials: false,
            extra_args: Vec::new(),
            open_files: None,
            data_dir: None,
            env: Vec::new(),
            log_dir: None,
            database_url: None,
        }
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self::on(Backend::Embedded)
    }
}

/// A fresh database on the test cluster, made on a thread of its own (a server may be
/// started from inside a test's runtime, which cannot block on another future).
pub fn fresh_database() -> String {
    std::thread::spawn(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(boomerang_postgres::testing::fresh_database())
    })
    .join()
    .expect("a fresh database")
}

/// How to start a server: its arguments and environment (the same on every restart).
#[derive(Clone)]
struct Launch {
    args: Vec<String>,
    env: Vec<(String, String)>,
    open_files: Option<u64>,
    /// Where `stderr.log` goes, if not the data directory.
    log_dir: Option<PathBuf>,
}

/// A running `boomerang serve` on its own data directory and a free port.
pub struct Server {
    child: Child,
    pub base: String,
    pub data_dir: PathBuf,
    pub secret: SigningSecret,
    pub api_key: String,
    launch: Launch,
    http: reqwest::Client,
    /// The typed client at `base` (made again when a restart moves the server).
    api: Client,
}

impl Server {
    /// A server on the AWS backend whose calls to `service`'s emulator go through `proxy`.
    pub fn aws_through(proxy: &FaultProxy, service: Service) -> Self {
        let variable = match service {
            Service::DynamoDb => "AWS_ENDPOINT_URL_DYNAMODB",
            Service::Sqs | Service::Scheduler => "AWS_ENDPOINT_URL",
        };
        Server::start(ServerOptions {
            env: vec![(variable.to_string(), proxy.url.clone())],
            ..ServerOptions::on(Backend::Aws)
        })
    }

    pub fn start(options: ServerOptions) -> Self {
        let fresh = || std::env::temp_dir().join(format!("boomerang-e2e-{}", ulid::Ulid::new()));
        let data_dir = options.data_dir.clone().unwrap_or_else(fresh);
        std::fs::create_dir_all(&data_dir).unwrap();
        let mut args: Vec<String> = ["serve", "--addr", "127.0.0.1:0"].map(String::from).into();
        args.extend(["--sweep-interval".into(), options.sweep_interval.into()]);
        args.extend(["--lease-margin".into(), options.lease_margin.into()]);
        if options.dev {
            args.push("--dev".into());
        }
        if let Some(retention) = options.retention {
            args.extend(["--retention".into(), retention.into()]);
        }
        if let Some(url) = options.alert_url {
            args.extend(["--alert-url".into(), url]);
        }
        if let Some(limit) = options.destination_limit {
            args.extend(["--destination-limit".into(), limit.to_string()]);
        }
        args.extend(options.extra_args);
        let (secret, api_key, env) = match options.backend {
            Backend::Embedded => {
                let secret = SigningSecret::generate();
                args.extend(["--data-dir".into(), data_dir.display().to_string()]);
                if !options.generated_credentials {
                    args.extend(["--api-key".into(), API_KEY.into()]);
                    args.extend(["--signing-secret".into(), secret.expose()]);
                }
                (secret, API_KEY.to_string(), Vec::new())
            }
            Backend::Postgres => {
                let secret = SigningSecret::generate();
                let url = options.database_url.clone().unwrap_or_else(fresh_database);
                args.extend(["--backend".into(), "postgres".into()]);
                args.extend(["--database-url".into(), url]);
                args.extend(["--api-key".into(), API_KEY.into()]);
                args.extend(["--signing-secret".into(), secret.expose()]);
                (secret, API_KEY.to_string(), Vec::new())
            }
            Backend::Aws => {
                args.extend(
                    [
                        "--backend",
                        "aws",
                        "--emulate-triggers",
                        "--sweep-lag",
                        "3s",
                    ]
                    .map(String::from),
                );
                aws_resources()
            }
        };
        let launch = Launch {
            args,
            env: env.into_iter().chain(options.env).collect(),
            open_files: options.open_files,
            log_dir: options.log_dir,
        };
        let (child, base) = spawn(&data_dir, &launch);
        // The AWS backend's are always made by the commands that set it up.
        let generated = options.generated_credentials && options.backend == Backend::Embedded;
        let (secret, api_key) = if generated {
            generated_credentials(&data_dir)
        } else {
            (secret, api_key)
        };
        let api = Client::new(&base, &api_key).expect("the server's URL");
        Self {
            child,
            base,
            data_dir,
            secret,
            api_key,
            launch,
            http: reqwest::Client::new(),
            api,
        }
    }

    /// Another `serve` on the same table and queues (AWS backend), or the same database
    /// (PostgreSQL): a second worker that shares the work.
    pub fn another_worker(&self) -> Server {
        let data_dir = std::env::temp_dir().join(format!("boomerang-e2e-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&data_dir).unwrap();
        let launch = Launch {
            log_dir: None,
            ..self.launch.clone()
        };
        let (child, base) = spawn(&data_dir, &launch);
        let api = Client::new(&base, &self.api_key).expect("the server's URL");
        Server {
            child,
            base,
            data_dir,
            secret: self.secret.clone(),
            api_key: self.api_key.clone(),
            launch,
            http: reqwest::Client::new(),
            api,
        }
    }

    /// Sends SIGTERM and waits for the server to exit (at most `within`): how it exited,
    /// and how long after the signal. Async, so that the test's receivers keep answering.
    pub async fn terminate(&mut self, within: Duration) -> (std::process::ExitStatus, Duration) {
        let sent = Instant::now();
        self.sigterm();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return (status, sent.elapsed());
            }
            assert!(
                sent.elapsed() < within,
                "the server did not exit within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Sends SIGTERM, and returns at once.
    pub fn sigterm(&self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: kill(2) with our own child's pid and a signal number has no memory effects.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "SIGTERM");
    }

    /// Starts the server again on the same data, after it exited.
    pub fn restart(&mut self) {
        let (child, base) = spawn(&self.data_dir, &self.launch);
        self.child = child;
        self.api = self.api.at(&base).expect("the server's URL");
        self.base = base;
    }

    /// `kill -9`, then start again on the same data (directory, or table and queues).
    pub fn kill9_and_restart(&mut self) {
        self.kill9_and_stay_down();
        self.restart();
    }

    /// `kill -9`, and nothing more (`restart` starts it again).
    pub fn kill9_and_stay_down(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().unwrap();
    }

    /// `boomerang ARGS` with the server's environment (its table and queues, on the AWS
    /// backend): what the command printed.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(args, &self.launch.env)
    }

    /// A variable of the server's environment (`BOOMERANG_TIMER_QUEUE_URL`, on the AWS
    /// backend), if set.
    pub fn env_var(&self, name: &str) -> Option<String> {
        (self.launch.env.iter().rev())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// `boomerang tenants alert`: sets the test tenant's default alert destination (AWS
    /// backend; do it before any delivery, which caches the tenant for a minute).
    pub fn set_tenant_alert(&self, url: &str) {
        let out = cli(
            &[
                "tenants",
                "alert",
                "--tenant",
                TENANT,
                "--url",
                url,
                "--header",
                "X-Oncall: t1",
            ],
            &self.launch.env,
        );
        assert!(out.contains(url), "{out}");
    }

    /// `boomerang keys create --tenant NAME` (AWS backend): an API key of another tenant.
    pub fn mint_key(&self, tenant: &str) -> String {
        let minted = cli(&["keys", "create", "--tenant", tenant], &self.launch.env);
        (minted.lines())
            .find_map(|l| l.strip_prefix("API key:"))
            .map(|k| k.trim().to_string())
            .expect("keys create prints the key")
    }

    /// `boomerang tenants destination-limit`: the test tenant's own limit of calls at once
    /// to one destination (AWS backend; do it before any delivery, as above).
    pub fn set_tenant_destination_limit(&self, limit: usize) {
        let limit = limit.to_string();
        let args = [
            "tenants",
            "destination-limit",
            "--tenant",
            TENANT,
            "--limit",
            &limit,
        ];
        let out = cli(&args, &self.launch.env);
        assert!(out.contains(&format!("at most {limit} calls")), "{out}");
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server logged on stderr (all runs).
    pub fn log(&self) -> String {
        std::fs::read_to_string(log_path(&self.data_dir, &self.launch)).unwrap_or_default()
    }

    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(&self.api_key)
    }

    /// The typed client of this server's API, with its key.
    pub fn api(&self) -> Client {
        self.api.clone()
    }

    /// `POST /v1/tasks`, which must create the task (201).
    pub async fn register(&self, task: &TaskRequest) -> TaskView {
        match self.api().create(task, None).await {
            Ok(Answer { status: 201, body }) => body,
            Ok(Answer { status, body }) => panic!("registration answered {status}: {body:?}"),
            Err(e) => panic!("registration refused: {e}"),
        }
    }

    /// Sends `body` as it is (JSON the typed request cannot express: hostile input);
    /// returns the status and the problem, if the answer is one.
    pub async fn post_raw(&self, path: &str, body: &Value) -> (u16, Option<Problem>) {
        self.send_raw(reqwest::Method::POST, path, body).await
    }

    /// [`Self::post_raw`] with any method.
    pub async fn send_raw(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> (u16, Option<Problem>) {
        let res = self.request(method, path).json(body).send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.ok())
    }

    /// Each body is refused with a 422 naming its field (`method` to `path`).
    pub async fn refuses_naming(
        &self,
        method: reqwest::Method,
        path: &str,
        cases: &[(Value, &str)],
    ) {
        for (body, field) in cases {
            let (status, problem) = self.send_raw(method.clone(), path, body).await;
            assert_eq!(status, 422, "{body}");
            let named = problem.and_then(|p| p.field);
            assert_eq!(named.as_deref(), Some(*field), "{body}");
        }
    }

    /// Whether `call` carries a valid signature of this server's tenant, made now.
    pub fn signed(&self, call: &Received) -> bool {
        boomerang_webhook::signing::verify(
            &self.secret,
            &header(call, "webhook-id"),
            &header(call, "webhook-timestamp"),
            &header(call, "webhook-signature"),
            &call.body,
            chrono::Utc::now().timestamp(),
        )
        .is_ok()
    }

    /// POSTs a request that declares a `Content-Length` of `declared` bytes but sends only
    /// the first KiB, and returns the status the server answers with meanwhile.
    pub async fn post_declaring_length(&self, path: &str, declared: usize) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = self.base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n",
            self.api_key
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&[b' '; 1024]).await.unwrap();
        let mut response = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            let mut buf = [0u8; 1024];
            while !response.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => response.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await;
        assert!(read.is_ok(), "the server waited for the rest of the body");
        let head = String::from_utf8_lossy(&response);
        head.split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {head:?}"))
    }

    /// `GET /v1/tasks/{id}`.
    pub async fn task(&self, id: &TaskId) -> TaskView {
        self.api()
            .get(id)
            .await
            .unwrap_or_else(|e| panic!("task {id}: {e}"))
    }

    /// Waits until the task reaches `status`; returns the task.
    pub async fn wait_status(&self, id: &TaskId, status: Status, within: Duration) -> TaskView {
        let api = self.api();
        wait_for(&format!("task {id} to be {status:?}"), within, || async {
            // A request may fail while the server restarts; keep polling.
            let task = api.get(id).await.ok()?;
            (task.status == status).then_some(task)
        })
        .await
    }
}

impl Drop for Server {
    /// Stops the server, and fails the test if any request reached the Router's last line
    /// of defence (a handler panic turned into a 500): no input may ever get that far.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let log = self.log();
        let _ = std::fs::remove_dir_all(&self.data_dir);
        if std::thread::panicking() {
            // The test failed: what the server said is the first thing to read.
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            eprintln!("--- the server's log, last lines ---\n{}", tail.join("\n"));
        } else {
            assert!(
                !log.contains(boomerang_http::PANIC_LOG),
                "a request made the server panic:\n{log}"
            );
        }
    }
}

/// The environment that points the CLI at the emulators.
fn emulator_env() -> Vec<(String, String)> {
    vec![
        ("AWS_ENDPOINT_URL".to_string(), aws::moto_endpoint()),
        ("AWS_ACCESS_KEY_ID".to_string(), "test".to_string()),
        ("AWS_SECRET_ACCESS_KEY".to_string(), "test".to_string()),
        ("AWS_REGION".to_string(), "us-east-1".to_string()),
        ("AWS_EC2_METADATA_DISABLED".to_string(), "true".to_string()),
        (
            "AWS_ENDPOINT_URL_DYNAMODB".to_string(),
            aws::dynalite_endpoint(),
        ),
    ]
}

/// The key and secret `serve` generated in its data directory.
fn generated_credentials(data_dir: &Path) -> (SigningSecret, String) {
    use boomerang_embedded::tenants::credentials::{stored_api_key, stored_secret};
    let secret = stored_secret(data_dir).unwrap().expect("a stored secret");
    let key = stored_api_key(data_dir).unwrap().expect("a stored key");
    (secret, key)
}

/// The tenant the AWS backend's tests mint their key for.
const TENANT: &str = "e2e";

/// `boomerang aws bootstrap` and `boomerang keys create`, as a user would run them.
fn aws_resources() -> (SigningSecret, String, Vec<(String, String)>) {
    let mut env = emulator_env();
    let exports = cli(
        &["aws", "bootstrap", "--prefix", &aws::unique_prefix("e2e")],
        &env,
    );
    for line in exports.lines() {
        let (k, v) = line
            .strip_prefix("export ")
            .and_then(|l| l.split_once('='))
            .expect("export NAME='value' lines");
        env.push((k.to_string(), v.trim_matches('\'').to_string()));
    }
    let minted = cli(&["keys", "create", "--tenant", TENANT], &env);
    let field = |name: &str| {
        minted
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .expect("keys create prints the field")
    };
    let secret = SigningSecret::parse(&field("signing secret:")).unwrap();
    (secret, field("API key:"), env)
}

/// Where the server's stderr goes.
fn log_path(data_dir: &Path, launch: &Launch) -> PathBuf {
    (launch.log_dir.as_deref())
        .unwrap_or(data_dir)
        .join("stderr.log")
}

fn spawn(data_dir: &Path, launch: &Launch) -> (Child, String) {
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(data_dir, launch))
        .unwrap();
    let mut cmd = Command::new(binary());
    cmd.args(&launch.args)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .env_remove("BOOMERANG_DEV")
        .stdout(Stdio::piped())
        .stderr(stderr);
    if let Some(limit) = launch.open_files {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
        unsafe {
            cmd.pre_exec(move || {
                let rlim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                match libc::setrlimit(libc::RLIMIT_NOFILE, &rlim) {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            });
        }
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
