//! `boomerang tasks create`: flags into the API's own registration request. Durations,
//! times and choices are read as the API's types read them (a bad one is refused in the
//! API's words, exit code 1); the server checks every rule.

use std::collections::BTreeMap;
use std::path::PathBuf;

use std::str::FromStr;

use anyhow::{bail, Context};
use boomerang_api::request::{Choice, HoldRequest, OnKey, RetryField, RetryRequest, TaskRequest};
use boomerang_api::Problem;
use clap::Args;
use serde_json::Value;

use super::failure::Failure;

/// What a task is and how it is delivered: the flags `tasks create` and `schedules
/// create` share.
#[derive(Args)]
pub struct TaskArgs {
    /// Where to call.
    url: String,
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
    /// One of your task templates (`boomerang templates`): the task takes each of its
    /// settings the flags leave out; URL may then be relative to the template's base.
    #[arg(long)]
    template: Option<String>,
    /// Your own id for the task (list, cancel and release by it).
    #[arg(long)]
    key: Option<String>,
    /// Metadata, `name=value` (repeatable).
    #[arg(long = "metadata", value_name = "NAME=VALUE")]
    metadata: Vec<String>,
}

impl TaskArgs {
    /// The task's part of a registration request.
    pub fn into_request(self) -> Result<TaskRequest, Failure> {
        let usage = |e: anyhow::Error| Failure::Usage(format!("{e:#}"));
        Ok(TaskRequest {
            url: Some(self.url),
            method: self.method,
            body: self.body.map(|b| body(&b)).transpose().map_err(usage)?,
            headers: pairs(&self.headers, ':', "--header").map_err(usage)?,
            metadata: pairs(&self.metadata, '=', "--metadata").map_err(usage)?,
            key: self.key,
            retry: retry(self.retry, self.max_attempts, self.policy)?,
            template: self.template,
            ..TaskRequest::default()
        })
    }
}

/// `tasks create`: the task, and when and how it is registered (a schedule takes none of
/// these: its occurrences give each task its time).
#[derive(Args)]
pub struct CreateArgs {
    #[command(flatten)]
    task: TaskArgs,
    /// Wait before the first attempt, e.g. 90s, 15m, "2h 30m".
    #[arg(long, conflicts_with = "at")]
    delay: Option<String>,
    /// When to make the first attempt (RFC 3339).
    #[arg(long)]
    at: Option<String>,
    /// With --key: replace the key's pending task (none of whose attempts has begun)
    /// instead of adding one: "call once, after the last trigger".
    #[arg(long, requires = "key")]
    replace: bool,
    /// With --replace: the task fires at most this long after the first registration it
    /// replaced, however often it is replaced.
    #[arg(long, requires = "replace")]
    max_delay: Option<String>,
    /// Registers once per key: a repeat answers the task the first one made.
    #[arg(long)]
    idempotency_key: Option<String>,
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
    /// The request, and the idempotency key to send as a header.
    pub fn into_request(self) -> Result<(TaskRequest, Option<String>), Failure> {
        let hold = match self.hold {
            Some(timeout) => Some(HoldRequest {
                timeout: read("hold.timeout", Some(timeout))?,
                check_url: self.check_url,
                on_unknown: choose("hold.on_unknown", self.on_unknown)?,
                max_checks: None,
            }),
            None => None,
        };
        let task = TaskRequest {
            delay: read("delay", self.delay)?,
            fire_at: read("fire_at", self.at)?,
            hold,
            on_key: self.replace.then_some(OnKey::Replace),
            max_delay: read("max_delay", self.max_delay)?,
            ..self.task.into_request()?
        };
        Ok((task, self.idempotency_key))
    }
}

/// A flag's value read as the API reads its `field`: one that does not parse is refused in
/// the API's words, as the server would refuse it.
pub(super) fn read<T: FromStr<Err = String>>(
    field: &str,
    given: Option<String>,
) -> Result<Option<T>, Failure> {
    given.map(|text| parse(field, &text)).transpose()
}

fn parse<T: FromStr<Err = String>>(field: &str, text: &str) -> Result<T, Failure> {
    text.parse().map_err(|detail| refused(field, detail))
}

/// A flag naming one of the API's choices for `field` (`cancel` or `release`).
pub(super) fn choose<C: Choice>(field: &str, given: Option<String>) -> Result<Option<C>, Failure> {
    given
        .map(|text| C::parse(&text).ok_or_else(|| refused(field, C::must_be())))
        .transpose()
}

fn refused(field: &str, detail: String) -> Failure {
    Failure::Refused(Box::new(Problem::invalid(field, detail)))
}

/// `--body`: JSON if it parses as JSON, else the text itself; `@FILE` reads a file.
fn body(given: &str) -> anyhow::Result<Value> {
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

/// `NAME<sep>VALUE` flags into a map (None when there are none).
pub(super) fn pairs(
    given: &[String],
    sep: char,
    flag: &str,
) -> anyhow::Result<Option<BTreeMap<String, String>>> {
    if given.is_empty() {
        return Ok(None);
    }
    let mut map = BTreeMap::new();
    for pair in given {
        let Some((name, value)) = pair.split_once(sep) else {
            bail!("{flag} {pair:?}: expected NAME{sep}VALUE");
        };
        map.insert(name.trim().to_string(), value.trim().to_string());
    }
    Ok(Some(map))
}

/// `--retry 30s,1m` and `--max-attempts`, or `--policy NAME`.
fn retry(
    schedule: Vec<String>,
    max_attempts: Option<u32>,
    policy: Option<String>,
) -> Result<Option<RetryField>, Failure> {
    if let Some(name) = policy {
        return Ok(Some(RetryField::Named(name)));
    }
    if schedule.is_empty() && max_attempts.is_none() {
        return Ok(None);
    }
    let steps = (schedule.into_iter().enumerate())
        .map(|(i, step)| parse(&format!("retry.schedule[{i}]"), &step))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(RetryField::Inline(RetryRequest {
        schedule: (!steps.is_empty()).then_some(steps),
        max_attempts: max_attempts.map(|n| Some(i64::from(n))),
        ..RetryRequest::default()
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::json;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        create: CreateArgs,
    }

    /// The request as it goes on the wire, without the fields left out.
    fn request(args: &[&str]) -> (Value, Option<String>) {
        let cli = Cli::try_parse_from(std::iter::once("create").chain(args.iter().copied()))
            .expect("valid flags");
        let (task, key) = cli.create.into_request().unwrap();
        let mut body = serde_json::to_value(task).unwrap();
        body.as_object_mut().unwrap().retain(|_, v| !v.is_null());
        if let Some(hold) = body.get_mut("hold").and_then(Value::as_object_mut) {
            hold.retain(|_, v| !v.is_null());
        }
        if let Some(retry) = body.get_mut("retry").and_then(Value::as_object_mut) {
            retry.retain(|_, v| !v.is_null());
        }
        (body, key)
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
        let args = [
            "create",
            "https://e.com",
            "--body",
            "hello",
            "--policy",
            "payments",
        ];
        let (task, _) = Cli::try_parse_from(args)
            .unwrap()
            .create
            .into_request()
            .unwrap();
        assert_eq!(task.body, Some(json!("hello")));
        assert!(matches!(task.retry, Some(RetryField::Named(name)) if name == "payments"));
        let cli = Cli::try_parse_from(["create", "https://e.com", "--header", "no-colon"]).unwrap();
        assert!(cli.create.into_request().is_err());
        assert!(
            Cli::try_parse_from(["create", "https://e.com", "--delay", "1s", "--at", "x"]).is_err()
        );
        assert!(Cli::try_parse_from(["create", "https://e.com", "--check-url", "x"]).is_err());
    }
}
