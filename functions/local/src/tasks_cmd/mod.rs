//! `boomerang tasks …`: the API from the command line, for people and for scripts.
//!
//! Exit codes: 0 done; 1 the API refused (its problem's detail is printed); 2 usage (clap's
//! own); 3 the server could not be reached.

pub mod breakers;
pub mod bulk;
mod client;
mod failure;
pub mod flows;
pub mod order_keys;
mod request;
pub mod schedules;
pub mod secrets;
mod show;
pub mod templates;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use boomerang_client::{Client, ClientError, ListParams};
use boomerang_core::domain::{BusinessKey, Status, TaskId};
use clap::{Args, Subcommand};

use failure::Failure;

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
    #[arg(long, value_parser = status_named)]
    status: Option<Status>,
    /// Only tasks with this business key.
    #[arg(long, value_parser = |s: &str| BusinessKey::parse(s))]
    key: Option<BusinessKey>,
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
    let (command, json) = (args.command, args.json);
    with_api(args.connection, |api| async move {
        execute(&api, command, json).await
    })
    .await
}

/// Connects to the API and runs `command` with it; what it answers decides the exit code.
async fn with_api<F, Fut>(connection: Connection, command: F) -> Result<ExitCode>
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    let api = match client::connect(&connection.url, connection.api_key, &connection.data_dir) {
        Ok(api) => api,
        Err(why) => {
            eprintln!("error: {why}");
            return Ok(ExitCode::from(2));
        }
    };
    let failure = match command(api).await {
        Ok(()) => return Ok(ExitCode::SUCCESS),
        Err(failure) => failure,
    };
    match failure {
        Failure::Usage(why) => {
            eprintln!("error: {why}");
            Ok(ExitCode::from(2))
        }
        Failure::Refused(problem) => {
            eprintln!("error: {}: {}", problem.status, problem.detail);
            Ok(ExitCode::from(1))
        }
        Failure::Api(e) => match *e {
            ClientError::Refused { status, problem } => {
                eprintln!("error: {status}: {}", problem.detail);
                Ok(ExitCode::from(1))
            }
            ClientError::Unexpected { status, body } => {
                eprintln!("error: {status}: {body}");
                Ok(ExitCode::from(1))
            }
            ClientError::Unreachable(why) => {
                eprintln!("error: cannot reach {}: {why}", connection.url);
                Ok(ExitCode::from(3))
            }
            e => Err(e.into()),
        },
    }
}

async fn execute(api: &Client, command: TasksCommand, json: bool) -> Result<(), Failure> {
    let out = show::Output { json };
    match command {
        TasksCommand::Create(create) => {
            let (task, idempotency_key) = create.into_request()?;
            let created = api.create(&task, idempotency_key.as_deref()).await?;
            out.task(&created.body);
        }
        TasksCommand::Get { id } => out.task(&api.get(&id).await?),
        TasksCommand::List(list) => list_tasks(api, &out, list).await?,
        TasksCommand::Cancel(target) => match by_id_or_key(target) {
            Target::Key(key) => {
                let answer = api.cancel_by_key(&key).await?;
                out.by_key(show::ByKey {
                    answer: &answer,
                    verb: "canceled",
                    done: &answer.canceled,
                    left: &answer.not_canceled,
                    more: answer.more,
                });
            }
            Target::Id(id) => out.task(&api.cancel(&id).await?),
        },
        TasksCommand::Retry { id } => out.task(&api.retry(&id).await?),
        TasksCommand::Release(target) => match by_id_or_key(target) {
            Target::Key(key) => {
                let answer = api.release_by_key(&key).await?;
                out.by_key(show::ByKey {
                    answer: &answer,
                    verb: "released",
                    done: &answer.released,
                    left: &answer.not_released,
                    more: answer.more,
                });
            }
            Target::Id(id) => out.task(&api.release(&id).await?),
        },
        TasksCommand::Watch { id, every } => watch(api, &out, &id, every).await?,
    }
    Ok(())
}

/// A cancel's or release's target: one task, or with `--key` every task with the key.
enum Target {
    Id(TaskId),
    Key(String),
}

/// A task state by its name, refused here as the API would refuse it.
fn status_named(name: &str) -> Result<Status, String> {
    Status::parse(name).ok_or_else(|| {
        let names: Vec<_> = Status::ALL.iter().map(|s| s.as_str()).collect();
        format!("one of {}", names.join(", "))
    })
}

fn by_id_or_key(target: ByIdOrKey) -> Target {
    match (target.id, target.key) {
        (_, Some(key)) => Target::Key(key),
        (Some(id), None) => Target::Id(id),
        (None, None) => unreachable!("clap requires an id or --key"),
    }
}

async fn list_tasks(api: &Client, out: &show::Output, list: ListArgs) -> Result<(), Failure> {
    let mut params = ListParams {
        status: list.status,
        key: list.key,
        limit: Some(list.limit),
        cursor: None,
    };
    let mut tasks = Vec::new();
    loop {
        let page = api.list(&params).await?;
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) if list.all => params.cursor = Some(next),
            next => {
                out.list(&tasks, next.as_deref());
                return Ok(());
            }
        }
    }
}

/// Polls the task and prints what is new: each attempt as it is recorded, and each change
/// of state, until the task ends.
async fn watch(
    api: &Client,
    out: &show::Output,
    id: &TaskId,
    every: Duration,
) -> Result<(), Failure> {
    let mut shown_attempts = 0;
    let mut last_status = None;
    loop {
        let task = api.get(id).await?;
        let attempts = task.attempts.as_deref().unwrap_or_default();
        for attempt in attempts.iter().skip(shown_attempts) {
            out.attempt_progress(attempt);
        }
        shown_attempts = attempts.len();
        if last_status != Some(task.status) {
            out.status_change(&task);
            last_status = Some(task.status);
        }
        if task.status.is_terminal() {
            out.watched_end(&task);
            return Ok(());
        }
        tokio::time::sleep(every).await;
    }
}
