//! The processes a benchmark drives: `boomerang serve` on a fresh data dir, and the
//! receiver (this binary again), each a separate process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use boomerang_core::domain::SigningSecret;

use super::receiver::{Arrival, ReceiverArgs};

/// The `boomerang` binary of the same build as this one (`target/<profile>/boomerang`).
fn boomerang_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let bin = exe.with_file_name(format!("boomerang{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        bail!(
            "{} is missing: build it first (cargo build --release -p boomerang-local)",
            bin.display()
        );
    }
    Ok(bin)
}

/// Starts `program <args>` and waits for the line that starts with `prefix`; returns the
/// child and the rest of that line.
fn spawn(program: &Path, args: &[String], prefix: &str) -> Result<(Child, String)> {
    spawn_with(program, args, &[], prefix)
}

/// [`spawn`] with extra environment variables.
fn spawn_with(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    prefix: &str,
) -> Result<(Child, String)> {
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().context("child stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let prefix = prefix.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix(&prefix) {
                let _ = tx.send(rest.trim().to_string());
            }
        }
    });
    let rest = rx
        .recv_timeout(Duration::from_secs(60))
        .with_context(|| format!("`{} {}` did not start", program.display(), args.join(" ")))?;
    Ok((child, rest))
}

/// The benches measure what the server can do, not what one tenant is allowed: its
/// per-tenant limits are lifted.
const UNTHROTTLED: [&str; 4] = ["--tenant-rate", "1000000", "--max-pending", "1000000000"];

pub struct Server {
    child: Child,
    /// The program and its arguments (`prlimit … -- boomerang serve …` under a limit).
    program: PathBuf,
    args: Vec<String>,
    /// Environment variables it starts with, besides this process's own.
    env: Vec<(String, String)>,
    pub base: String,
    pub api_key: String,
    pub data_dir: PathBuf,
}

impl Server {
    pub fn start(extra: &[&str]) -> Result<Server> {
        Self::start_with_open_files(extra, None)
    }

    /// Starts it with both open-file limits (soft and hard) at `open_files`, if given.
    pub fn start_with_open_files(extra: &[&str], open_files: Option<u64>) -> Result<Server> {
        let data_dir = std::env::temp_dir().join(format!("boomerang-bench-{}", ulid::Ulid::new()));
        let api_key = boomerang_core::domain::generate_api_key();
        let mut args: Vec<String> = ["serve", "--addr", "127.0.0.1:0", "--dev", "--api-key"]
            .map(String::from)
            .into();
        args.push(api_key.clone());
        args.push("--signing-secret".into());
        args.push(SigningSecret::generate().expose());
        args.push("--data-dir".into());
        args.push(data_dir.display().to_string());
        args.extend(UNTHROTTLED.map(String::from));
        args.extend(extra.iter().map(|s| s.to_string()));
        let (program, args) = under_open_file_limit(boomerang_binary()?, args, open_files);
        let (child, base) = spawn(&program, &args, "Boomerang listening on ")?;
        Ok(Server {
            child,
            program,
            args,
            env: Vec::new(),
            base,
            api_key,
            data_dir,
        })
    }

    /// `n` servers on the PostgreSQL backend, sharing the database at `database_url`
    /// (given them in `BOOMERANG_DATABASE_URL`, not on their command lines), with one API
    /// key and signing secret, each on a free loopback port; started one after the other
    /// (the first migrates the database). `open_files` as in
    /// [`Server::start_with_open_files`].
    pub fn start_postgres(
        database_url: &str,
        n: usize,
        extra: &[&str],
        open_files: Option<u64>,
    ) -> Result<Vec<Server>> {
        let api_key = boomerang_core::domain::generate_api_key();
        let mut args: Vec<String> = [
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--dev",
            "--backend",
            "postgres",
            "--api-key",
        ]
        .map(String::from)
        .into();
        args.push(api_key.clone());
        args.push("--signing-secret".into());
        args.push(SigningSecret::generate().expose());
        args.extend(UNTHROTTLED.map(String::from));
        args.extend(extra.iter().map(|s| s.to_string()));
        let (program, args) = under_open_file_limit(boomerang_binary()?, args, open_files);
        let env = vec![(
            "BOOMERANG_DATABASE_URL".to_string(),
            database_url.to_string(),
        )];
        (0..n)
            .map(|_| {
                let (child, base) = spawn_with(&program, &args, &env, "Boomerang listening on ")?;
                Ok(Server {
                    child,
                    program: program.clone(),
                    args: args.clone(),
                    env: env.clone(),
                    base,
                    api_key: api_key.clone(),
                    // Never made: they keep nothing on disk.
                    data_dir: std::env::temp_dir()
                        .join(format!("boomerang-bench-{}", ulid::Ulid::new())),
                })
            })
            .collect()
    }

    /// `n` servers on the AWS backend, each playing the triggers, on one fresh set of
    /// resources (`boomerang aws bootstrap`) at the emulator the environment names
    /// (`AWS_ENDPOINT_URL`, and `AWS_ENDPOINT_URL_DYNAMODB` if DynamoDB is elsewhere).
    pub fn start_aws_workers(n: usize) -> Result<Vec<Server>> {
        for var in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"] {
            if let Ok(url) = std::env::var(var) {
                if !url.starts_with("http://127.0.0.1:") && !url.starts_with("http://localhost:") {
                    bail!("{var}={url} is not on loopback; the bench only talks to emulators");
                }
            }
        }
        if std::env::var("AWS_ENDPOINT_URL").is_err() {
            bail!("--aws-workers runs against emulators: set AWS_ENDPOINT_URL");
        }
        let program = boomerang_binary()?;
        let prefix = format!("bench-{}", ulid::Ulid::new().to_string().to_lowercase());
        let exports = run(&program, &["aws", "bootstrap", "--prefix", &prefix], &[])?;
        let env: Vec<(String, String)> = exports
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
            .collect();
        let minted = run(&program, &["keys", "create", "--tenant", "bench"], &env)?;
        let api_key = minted
            .lines()
            .find_map(|l| l.strip_prefix("API key:"))
            .map(|k| k.trim().to_string())
            .context("`keys create` printed no API key")?;
        let args: Vec<String> = [
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--dev",
            "--backend",
            "aws",
            "--emulate-triggers",
        ]
        .into_iter()
        .chain(UNTHROTTLED)
        .map(String::from)
        .collect();
        (0..n)
            .map(|_| {
                let (child, base) = spawn_with(&program, &args, &env, "Boomerang listening on ")?;
                Ok(Server {
                    child,
                    program: program.clone(),
                    args: args.clone(),
                    env: env.clone(),
                    base,
                    api_key: api_key.clone(),
                    data_dir: std::env::temp_dir()
                        .join(format!("boomerang-bench-{}", ulid::Ulid::new())),
                })
            })
            .collect()
    }

    /// The server's process id (`prlimit` execs the server in its own place).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`, then starts it again on the same data; returns when the new one was
    /// spawned.
    pub fn kill9_and_restart(&mut self) -> Result<Instant> {
        self.child.kill()?;
        self.child.wait()?;
        let started = Instant::now();
        let (child, base) = spawn_with(
            &self.program,
            &self.args,
            &self.env,
            "Boomerang listening on ",
        )?;
        self.child = child;
        self.base = base;
        Ok(started)
    }

    /// Stops the server (SIGTERM), starts it again on the same data, and returns how long
    /// the new one took from spawn to answering `/healthz`.
    pub fn restart(&mut self) -> Result<Duration> {
        self.stop()?;
        self.start_again()
    }

    /// Stops the server (SIGTERM) and waits for it to exit.
    pub fn stop(&mut self) -> Result<()> {
        self.terminate()?;
        self.wait()
    }

    /// Sends it SIGTERM (a graceful stop), without waiting.
    pub fn terminate(&self) -> Result<()> {
        Command::new("kill").arg(self.pid().to_string()).status()?;
        Ok(())
    }

    /// Waits for it to exit.
    pub fn wait(&mut self) -> Result<()> {
        self.child.wait()?;
        Ok(())
    }

    /// Starts the stopped server again on the same data; how long it took from spawn to
    /// answering `/healthz`.
    pub fn start_again(&mut self) -> Result<Duration> {
        let started = Instant::now();
        let (child, base) = spawn_with(
            &self.program,
            &self.args,
            &self.env,
            "Boomerang listening on ",
        )?;
        self.child = child;
        self.base = base;
        let health = format!("{}/healthz", self.base);
        loop {
            if answers_ok(&health) {
                return Ok(started.elapsed());
            }
            if started.elapsed() > Duration::from_secs(120) {
                bail!("the restarted server never became healthy");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// `program args`, or `prlimit --nofile=n:n -- program args` if `open_files` is `Some(n)`
/// (prlimit execs the server: the pid stays the server's).
fn under_open_file_limit(
    program: PathBuf,
    mut args: Vec<String>,
    open_files: Option<u64>,
) -> (PathBuf, Vec<String>) {
    match open_files {
        Some(n) => {
            let server = program.display().to_string();
            args.splice(0..0, [format!("--nofile={n}:{n}"), "--".into(), server]);
            (PathBuf::from("prlimit"), args)
        }
        None => (program, args),
    }
}

/// Runs `program <args>` to its end; its stdout, or an error with its stderr.
fn run(program: &Path, args: &[&str], env: &[(String, String)]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()?;
    if !out.status.success() {
        bail!(
            "`{} {}` failed: {}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether a plain blocking GET of `url` answers 200 (so `restart` needs no runtime).
fn answers_ok(url: &str) -> bool {
    use std::io::{Read, Write};
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (addr, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let req = format!("GET /{path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let mut out = String::new();
    s.write_all(req.as_bytes()).is_ok()
        && s.read_to_string(&mut out).is_ok()
        && out.starts_with("HTTP/1.1 200")
}

pub struct ReceiverProcess {
    child: Child,
    pub url: String,
}

impl ReceiverProcess {
    pub fn start(behaviour: &ReceiverArgs) -> Result<ReceiverProcess> {
        let args = behaviour.to_args();
        let (child, url) = spawn(&std::env::current_exe()?, &args, "receiver on ")?;
        Ok(ReceiverProcess { child, url })
    }

    /// The receiver's port.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// The most requests it ever served at once.
    pub async fn peak(&self) -> Result<usize> {
        Ok(reqwest::get(format!("{}/__peak", self.url))
            .await?
            .json()
            .await?)
    }

    pub async fn arrivals(&self) -> Result<Vec<Arrival>> {
        Ok(reqwest::get(format!("{}/__arrivals", self.url))
            .await?
            .json()
            .await?)
    }

    /// How many requests arrived so far.
    pub async fn count(&self) -> Result<usize> {
        Ok(reqwest::get(format!("{}/__count", self.url))
            .await?
            .json()
            .await?)
    }

    /// Waits until `count` requests arrived; returns them.
    pub async fn wait_for(&self, count: usize, within: Duration) -> Result<Vec<Arrival>> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.count().await?;
            if got >= count {
                return self.arrivals().await;
            }
            if Instant::now() > deadline {
                bail!("only {got} of {count} callbacks arrived in {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The task ids the receiver saw (each request's `webhook-id`).
    pub async fn task_ids(&self) -> Result<Vec<String>> {
        Ok(reqwest::get(format!("{}/__tasks", self.url))
            .await?
            .json()
            .await?)
    }
}

impl Drop for ReceiverProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Bytes under `dir`.
pub fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let meta = entry?.metadata()?;
        total += if meta.is_dir() { 0 } else { meta.len() };
    }
    Ok(total)
}
