//! `boomerang tasks create`: flags into a `POST /v1/tasks` body. The server checks every
//! value; this only shapes them (a bad one comes back as the API's problem, exit code 1).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::{json, Map, Value};

#[derive(Args)]
pub struct CreateArgs {
    /// Where to call.
    url: String,
    /// Wait before the first attempt, e.g. 90s, 15m, "2h 30m".
    #[arg(long, conflicts_with = "at")]
    delay: Option<String>,
    /// When to make the first attempt (RFC 3339).
    #[arg(long)]
    at: Option<String>,
    /// The body: JSON (sent as JSON), other text (sent as text), or @FILE for a file's.
    #[arg(long)]
    body: Option<String>,
    /// The HTTP method.
    #[arg(long)]
    method: Option<String>,
    /// A request header, `Name: value` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// The waits between attempts, e.g. 30s,1m,3m.
    #[arg(long, conflicts_with = "policy", value_delimiter = ',')]
    retry: Vec<String>,
    /// Total attempts, the first included.
    #[arg(long)]
    max_attempts: Option<u32>,
    /// One of your named retry policies.
    #[arg(long)]
    policy: Option<String>,
    /// Your own id for the task (list, cancel and release by it).
    #[arg(long)]
    key: Option<String>,
    /// Registers once per key: a repeat answers the task the first one made.
    #[arg(long)]
    idempotency_key: Option<String>,
    /// Metadata, `name=value` (repeatable).
    #[arg(long = "metadata", value_name = "NAME=VALUE")]
    metadata: Vec<String>,
    /// Register it held: delivered only once released (`boomerang tasks release`), or as
    /// the check URL or `--on-unknown` decide after this long.
    #[arg(long, value_name = "TIMEOUT")]
    hold: Option<String>,
    /// Where to ask about a held task nobody released in time.
    #[arg(long, requires = "hold")]
    check_url: Option<String>,
    /// A held task's fate when nobody decides: cancel or release.
    #[arg(long, requires = "hold")]
    on_unknown: Option<String>,
}

impl CreateArgs {
    /// The request body, and the idempotency key to send as a header.
    pub fn into_request(self) -> Result<(Value, Option<String>)> {
        let mut task = Map::new();
        task.insert("url".into(), json!(self.url));
        let mut put = |name: &str, value: Option<Value>| {
            if let Some(v) = value {
                task.insert(name.into(), v);
            }
        };
        put("delay", self.delay.map(Value::from));
        put("fire_at", self.at.map(Value::from));
        put("method", self.method.map(Value::from));
        put("body", self.body.map(|b| body(&b)).transpose()?);
        put("headers", pairs(&self.headers, ':', "--header")?);
        put("metadata", pairs(&self.metadata, '=', "--metadata")?);
        put("key", self.key.map(Value::from));
        put("retry", retry(self.retry, self.max_attempts, self.policy));
        put(
            "hold",
            self.hold.map(|timeout| {
                let mut hold = json!({ "timeout": timeout });
                if let Some(url) = self.check_url {
                    hold["check_url"] = json!(url);
                }
                if let Some(fate) = self.on_unknown {
                    hold["on_unknown"] = json!(fate);
                }
                hold
            }),
        );
        Ok((Value::Object(task), self.idempotency_key))
    }
}

/// `--body`: JSON if it parses as JSON, else the text itself; `@FILE` reads a file.
fn body(given: &str) -> Result<Value> {
    let text = match given.strip_prefix('@') {
        Some(file) => {
            let path = PathBuf::from(file);
            std::fs::read_to_string(&path)
                .with_context(|| format!("--body: reading {}", path.display()))?
        }
        None => given.to_string(),
    };
    Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// `NAME<sep>VALUE` flags into a JSON object (None when there are none).
fn pairs(given: &[String], sep: char, flag: &str) -> Result<Option<Value>> {
    if given.is_empty() {
        return Ok(None);
    }
    let mut map = Map::new();
    for pair in given {
        let Some((name, value)) = pair.split_once(sep) else {
            bail!("{flag} {pair:?}: expected NAME{sep}VALUE");
        };
        map.insert(name.trim().to_string(), json!(value.trim()));
    }
    Ok(Some(Value::Object(map)))
}

/// `--retry 30s,1m` and `--max-attempts`, or `--policy NAME`.
fn retry(
    schedule: Vec<String>,
    max_attempts: Option<u32>,
    policy: Option<String>,
) -> Option<Value> {
    if let Some(name) = policy {
        return Some(json!(name));
    }
    if schedule.is_empty() && max_attempts.is_none() {
        return None;
    }
    let mut retry = Map::new();
    if !schedule.is_empty() {
        retry.insert("schedule".into(), json!(schedule));
    }
    if let Some(n) = max_attempts {
        retry.insert("max_attempts".into(), json!(n));
    }
    Some(Value::Object(retry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        create: CreateArgs,
    }

    fn request(args: &[&str]) -> (Value, Option<String>) {
        let cli = Cli::try_parse_from(std::iter::once("create").chain(args.iter().copied()))
            .expect("valid flags");
        cli.create.into_request().unwrap()
    }

    #[test]
    fn flags_become_the_request_body() {
        let (body, idem) = request(&[
            "https://example.com/h",
            "--delay",
            "90s",
            "--body",
            r#"{"order": 42}"#,
            "--header",
            "X-Trace: abc",
            "--retry",
            "30s,1m,3m",
            "--max-attempts",
            "5",
            "--key",
            "order-42",
            "--idempotency-key",
            "o42",
            "--metadata",
            "customer=c-9",
            "--hold",
            "30s",
            "--check-url",
            "https://example.com/tx",
        ]);
        assert_eq!(
            body,
            json!({
                "url": "https://example.com/h", "delay": "90s", "body": {"order": 42},
                "headers": {"X-Trace": "abc"}, "metadata": {"customer": "c-9"},
                "key": "order-42",
                "retry": {"schedule": ["30s", "1m", "3m"], "max_attempts": 5},
                "hold": {"timeout": "30s", "check_url": "https://example.com/tx"}
            })
        );
        assert_eq!(idem.as_deref(), Some("o42"));
    }

    #[test]
    fn text_bodies_policies_and_bad_pairs() {
        let (body, _) = request(&["https://e.com", "--body", "hello", "--policy", "payments"]);
        assert_eq!(body["body"], "hello");
        assert_eq!(body["retry"], "payments");
        let cli = Cli::try_parse_from(["create", "https://e.com", "--header", "no-colon"]).unwrap();
        assert!(cli.create.into_request().is_err());
        assert!(
            Cli::try_parse_from(["create", "https://e.com", "--delay", "1s", "--at", "x"]).is_err()
        );
        assert!(Cli::try_parse_from(["create", "https://e.com", "--check-url", "x"]).is_err());
    }
}
