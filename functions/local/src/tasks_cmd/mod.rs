//! `boomerang tasks …`: the API from the command line, for people and for scripts.
//!
//! Exit codes: 0 done; 1 the API refused (its problem's detail is printed); 2 usage (clap's
//! own); 3 the server could not be reached.

mod client;
mod request;
mod show;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use boomerang_core::domain::TaskId;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::Value;

use client::{Api, ApiError};

#[derive(Args)]
pub struct TasksArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: TasksCommand,
}

/// Where the API is, and the key to it.
#[derive(Args)]
pub struct Connection {
    /// The server's base URL.
    #[arg(
        id = "server_url",
        long = "url",
        env = "BOOMERANG_URL",
        default_value = "http://127.0.0.1:8080",
        global = true
    )]
    url: String,
    /// The API key; defaults to the one `serve` keeps in --data-dir.
    #[arg(long, env = "BOOMERANG_API_KEY", hide_env_values = true, global = true)]
    api_key: Option<String>,
    /// The local server's data directory (for its API key).
    #[arg(
        long,
        env = "BOOMERANG_DATA_DIR",
        default_value = "./.boomerang",
        global = true
    )]
    data_dir: PathBuf,
}

#[derive(Subcommand)]
enum TasksCommand {
    /// Register a callback to URL.
    Create(Box<request::CreateArgs>),
    /// Show a task and its attempts.
    Get { id: TaskId },
    /// List tasks, newest first.
    List(ListArgs),
    /// Cancel a scheduled or held task, or with --key every one with that business key.
    Cancel(ByIdOrKey),
    /// Give a failed task a new round of its retry policy.
    Retry { id: TaskId },
    /// Release a held task for delivery, or with --key every held one with that key.
    Release(ByIdOrKey),
    /// Follow a task: print each attempt as it happens, until the task ends.
    Watch {
        id: TaskId,
        /// How often to look.
        #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
        every: Duration,
    },
}

#[derive(Args)]
struct ListArgs {
    /// Only tasks in this state (held, scheduled, delivering, succeeded, failed, canceled).
    #[arg(long)]
    status: Option<String>,
    /// Only tasks with this business key.
    #[arg(long)]
    key: Option<String>,
    /// Tasks per page (1–100).
    #[arg(long, default_value_t = 20)]
    limit: u32,
    /// Follow the cursors to the last page.
    #[arg(long)]
    all: bool,
}

#[derive(Args)]
struct ByIdOrKey {
    #[arg(required_unless_present = "key", conflicts_with = "key")]
    id: Option<TaskId>,
    /// Every task with this business key.
    #[arg(long)]
    key: Option<String>,
}

/// Runs one command; what it answers decides the exit code.
pub async fn run(args: TasksArgs) -> Result<ExitCode> {
    let api = match Api::connect(
        &args.connection.url,
        args.connection.api_key,
        &args.connection.data_dir,
    ) {
        Ok(api) => api,
        Err(why) => {
            eprintln!("error: {why}");
            return Ok(ExitCode::from(2));
        }
    };
    match execute(&api, args.command, args.json).await {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(ApiError::Refused { status, detail }) => {
            eprintln!("error: {status}: {detail}");
            Ok(ExitCode::from(1))
        }
        Err(ApiError::Unreachable(why)) => {
            eprintln!("error: cannot reach {}: {why}", args.connection.url);
            Ok(ExitCode::from(3))
        }
        Err(ApiError::Usage(why)) => {
            eprintln!("error: {why}");
            Ok(ExitCode::from(2))
        }
        Err(ApiError::Other(e)) => Err(e),
    }
}

async fn execute(api: &Api, command: TasksCommand, json: bool) -> Result<(), ApiError> {
    let out = show::Output { json };
    match command {
        TasksCommand::Create(create) => {
            let (body, idempotency_key) = create
                .into_request()
                .map_err(|e| ApiError::Usage(format!("{e:#}")))?;
            let task = api.create(&body, idempotency_key.as_deref()).await?;
            out.task(&task);
        }
        TasksCommand::Get { id } => out.task(&api.get(&format!("/v1/tasks/{id}"), &[]).await?),
        TasksCommand::List(list) => list_tasks(api, &out, list).await?,
        TasksCommand::Cancel(target) => {
            let by_key = ("/v1/tasks", "canceled");
            one_or_by_key(api, &out, target, Method::DELETE, "", by_key).await?
        }
        TasksCommand::Retry { id } => {
            out.task(&api.post(&format!("/v1/tasks/{id}/retry"), &[]).await?)
        }
        TasksCommand::Release(target) => {
            let by_key = ("/v1/tasks/release", "released");
            one_or_by_key(api, &out, target, Method::POST, "/release", by_key).await?
        }
        TasksCommand::Watch { id, every } => watch(api, &out, &id, every).await?,
    }
    Ok(())
}

/// A cancel or release: of one task (`method` on `/v1/tasks/{id}{suffix}`), or with
/// `--key` of every task with the key (`method` on the path of `by_key`, whose answer
/// names what was done `verb`).
async fn one_or_by_key(
    api: &Api,
    out: &show::Output,
    target: ByIdOrKey,
    method: Method,
    suffix: &str,
    (by_key_path, verb): (&str, &str),
) -> Result<(), ApiError> {
    match (target.id, target.key) {
        (_, Some(key)) => {
            let outcome = api.call(method, by_key_path, &[("key", &key)]).await?;
            out.by_key(&outcome, verb);
        }
        (Some(id), None) => {
            let path = format!("/v1/tasks/{id}{suffix}");
            out.task(&api.call(method, &path, &[]).await?);
        }
        (None, None) => unreachable!("clap requires an id or --key"),
    }
    Ok(())
}

async fn list_tasks(api: &Api, out: &show::Output, list: ListArgs) -> Result<(), ApiError> {
    let limit = list.limit.to_string();
    let mut params = vec![("limit", limit.as_str())];
    params.extend(list.status.as_deref().map(|s| ("status", s)));
    params.extend(list.key.as_deref().map(|k| ("key", k)));
    let mut tasks: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut page_params = params.clone();
        page_params.extend(cursor.as_deref().map(|c| ("cursor", c)));
        let page = api.get("/v1/tasks", &page_params).await?;
        tasks.extend(page["tasks"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(next) if list.all => cursor = Some(next.to_string()),
            next => {
                out.list(&tasks, next);
                return Ok(());
            }
        }
    }
}

/// Polls the task and prints what is new: each attempt as it is recorded, and each change
/// of state, until the task ends.
async fn watch(
    api: &Api,
    out: &show::Output,
    id: &TaskId,
    every: Duration,
) -> Result<(), ApiError> {
    let path = format!("/v1/tasks/{id}");
    let mut shown_attempts = 0;
    let mut last_status = String::new();
    loop {
        let task = api.get(&path, &[]).await?;
        let status = task["status"].as_str().unwrap_or_default().to_string();
        let attempts = task["attempts"].as_array().cloned().unwrap_or_default();
        for attempt in attempts.iter().skip(shown_attempts) {
            out.attempt_progress(attempt);
        }
        shown_attempts = attempts.len();
        if status != last_status {
            out.status_change(&task);
            last_status = status.clone();
        }
        if matches!(status.as_str(), "succeeded" | "failed" | "canceled") {
            out.watched_end(&task);
            return Ok(());
        }
        tokio::time::sleep(every).await;
    }
}
