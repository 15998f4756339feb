//! The real Lambda binaries, run on this machine under cargo-lambda's runtime emulator
//! (`cargo lambda watch --only-lambda-apis`): the emulator serves the Lambda Runtime API,
//! each function binary polls it as it would in AWS, and the meter invokes them through the
//! emulator (the API through its function-URL emulation, the delivery function with the
//! events SQS and Scheduler would send). Their durations and log bytes are what the meter
//! prices Lambda and CloudWatch Logs with.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// CloudWatch Logs bills each log event's bytes plus this much.
pub const LOG_EVENT_OVERHEAD: usize = 26;

pub struct Functions {
    children: Vec<Child>,
    port: u16,
    logs: PathBuf,
    http: reqwest::Client,
}

impl Drop for Functions {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Functions {
    /// Starts the emulator and the `api` and `delivery` binaries from `bin_dir`, with `env`
    /// (the stack's settings, pointing at the emulated AWS) and each function's memory size.
    pub async fn start(
        bin_dir: &Path,
        env: &[(String, String)],
        memory_mb: [(&str, u32); 2],
    ) -> Result<Functions> {
        for (name, _) in memory_mb {
            if !bin_dir.join(name).is_file() {
                bail!(
                    "{} is missing: build the functions first (cargo build --release -p boomerang-api-lambda -p boomerang-delivery)",
                    bin_dir.join(name).display()
                );
            }
        }
        let port = free_port()?;
        let logs = std::env::temp_dir().join(format!("boomerang-functions-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&logs)?;
        let emulator = Command::new("cargo")
            .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1", "-P"])
            .arg(port.to_string())
            .stdout(File::create(logs.join("emulator.log"))?)
            .stderr(Stdio::from(File::create(logs.join("emulator.err"))?))
            .spawn()
            .context("cannot run `cargo lambda` (install it: pip install cargo-lambda, or run ./scripts/build-lambdas.sh once)")?;
        let mut functions = Functions {
            children: vec![emulator],
            port,
            logs,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()?,
        };
        functions.wait_for_emulator().await?;
        for (name, memory) in memory_mb {
            let log = File::create(functions.logs.join(format!("{name}.log")))?;
            let child = Command::new(bin_dir.join(name))
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .env(
                    "AWS_LAMBDA_RUNTIME_API",
                    format!("http://127.0.0.1:{port}/.rt/{name}"),
                )
                .env("AWS_LAMBDA_FUNCTION_NAME", name)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", memory.to_string())
                .env("RUST_LOG", "info")
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .with_context(|| format!("cannot start {}", bin_dir.join(name).display()))?;
            functions.children.push(child);
        }
        Ok(functions)
    }

    async fn wait_for_emulator(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            if Instant::now() > deadline {
                bail!(
                    "cargo lambda watch did not start (see {})",
                    self.logs.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// An HTTP request to the API function, as a function URL (or API Gateway) delivers it.
    pub async fn api(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<(reqwest::StatusCode, Value, f64)> {
        let started = Instant::now();
        let response = request.send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        Ok((
            status,
            serde_json::from_slice(&body).unwrap_or(Value::Null),
            started.elapsed().as_secs_f64(),
        ))
    }

    pub fn api_request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(
            method,
            format!("http://127.0.0.1:{}/lambda-url/api{path}", self.port),
        )
    }

    /// Invokes a function with an event; returns its answer and how long it took.
    pub async fn invoke(&self, name: &str, event: &Value) -> Result<(Value, f64)> {
        let started = Instant::now();
        let response = self
            .http
            .post(format!(
                "http://127.0.0.1:{}/2015-03-31/functions/{name}/invocations",
                self.port
            ))
            .json(event)
            .send()
            .await?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            bail!(
                "invoking {name} answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        Ok((
            serde_json::from_slice(&body).unwrap_or(Value::Null),
            started.elapsed().as_secs_f64(),
        ))
    }

    /// The bytes CloudWatch Logs would ingest from a function so far: each line it wrote
    /// (JSON logs and metric lines), plus the per-event overhead.
    pub fn log_bytes(&self, name: &str) -> usize {
        std::fs::read_to_string(self.logs.join(format!("{name}.log")))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() + LOG_EVENT_OVERHEAD)
            .sum()
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
