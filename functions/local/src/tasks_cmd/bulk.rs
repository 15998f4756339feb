//! `boomerang bulk …`: retry, cancel or release every task a filter takes (previewed with
//! `--dry-run`), and follow the jobs that do it.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use boomerang_api::request::{BetweenRequest, BulkRequest, FilterRequest};
use boomerang_api::view::BulkJobView;
use boomerang_client::Client;
use boomerang_core::domain::{BulkAction, BulkJobId};
use clap::{Args, Subcommand};

use super::request::{choose, pairs, read};
use super::{show, with_api, Connection, Failure};

/// How often `--wait` asks how the job is going.
const POLL: Duration = Duration::from_millis(500);

#[derive(Args)]
pub struct BulkArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: BulkCommand,
}

#[derive(Subcommand)]
enum BulkCommand {
    /// A new round of retries for each failed task the filter takes.
    Retry(ActionArgs),
    /// Cancel each scheduled or held task the filter takes.
    Cancel(ActionArgs),
    /// Release each held task the filter takes.
    Release(ActionArgs),
    /// The newest bulk jobs, with their progress.
    Jobs,
    /// One bulk job: its progress, or its report once finished.
    Job {
        id: BulkJobId,
        /// Wait until it is finished, printing its progress.
        #[arg(long)]
        wait: bool,
    },
}

#[derive(Args)]
struct ActionArgs {
    #[command(flatten)]
    filter: FilterArgs,
    /// Only count the tasks and show a sample; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Take every task of the action's states (no filter, on purpose).
    #[arg(long)]
    all: bool,
    /// Tasks acted on per second, at most (default 100).
    #[arg(long)]
    per_second: Option<i64>,
    /// Wait until the job is finished, printing its progress.
    #[arg(long)]
    wait: bool,
}

#[derive(Args)]
struct FilterArgs {
    /// Only tasks in this state (repeatable).
    #[arg(long = "status")]
    statuses: Vec<String>,
    /// The tasks' business key.
    #[arg(long)]
    key: Option<String>,
    /// The tasks' URL, exactly (`--url` is the server's).
    #[arg(long = "task-url", conflicts_with = "url_prefix")]
    url: Option<String>,
    /// The tasks' URL begins with this.
    #[arg(long)]
    url_prefix: Option<String>,
    /// A URL of the destination: tasks to the same scheme, host and port.
    #[arg(long)]
    destination: Option<String>,
    #[arg(long)]
    flow_key: Option<String>,
    /// The schedule whose occurrences to take (its id).
    #[arg(long)]
    schedule: Option<String>,
    /// A metadata entry the tasks have (repeatable).
    #[arg(long = "metadata", value_name = "NAME=VALUE")]
    metadata: Vec<String>,
    /// Registered at or after this time (RFC 3339).
    #[arg(long)]
    registered_after: Option<String>,
    /// Registered before this time (RFC 3339).
    #[arg(long)]
    registered_before: Option<String>,
    /// Ended at or after this time (RFC 3339).
    #[arg(long)]
    ended_after: Option<String>,
    /// Ended before this time (RFC 3339).
    #[arg(long)]
    ended_before: Option<String>,
    /// The last attempt was answered with this status code.
    #[arg(long)]
    last_status: Option<i64>,
    /// How the last attempt failed: http, body_mismatch, timeout, transport or refused.
    #[arg(long)]
    error_class: Option<String>,
}

impl FilterArgs {
    fn request(self) -> Result<FilterRequest, Failure> {
        let usage = |e: anyhow::Error| Failure::Usage(format!("{e:#}"));
        let between = |field: &str, after: Option<String>, before: Option<String>| {
            let after = read(&format!("filter.{field}.after"), after)?;
            let before = read(&format!("filter.{field}.before"), before)?;
            Ok::<_, Failure>(
                (after.is_some() || before.is_some()).then_some(BetweenRequest { after, before }),
            )
        };
        Ok(FilterRequest {
            statuses: self.statuses,
            key: self.key,
            url: self.url,
            url_prefix: self.url_prefix,
            destination: self.destination,
            flow_key: self.flow_key,
            schedule: self.schedule,
            metadata: (pairs(&self.metadata, '=', "--metadata").map_err(usage)?)
                .unwrap_or_default(),
            registered: between("registered", self.registered_after, self.registered_before)?,
            ended: between("ended", self.ended_after, self.ended_before)?,
            last_status: self.last_status,
            error_class: choose("filter.error_class", self.error_class)?,
        })
    }
}

/// Runs one command; what it answers decides the exit code (as for `tasks`).
pub async fn run(args: BulkArgs) -> Result<ExitCode> {
    let (command, json) = (args.command, args.json);
    with_api(args.connection, |api| async move {
        execute(&api, command, json).await
    })
    .await
}

async fn execute(api: &Client, command: BulkCommand, json: bool) -> Result<(), Failure> {
    let out = show::Output { json };
    let (action, args) = match command {
        BulkCommand::Jobs => {
            out.bulk_jobs(&api.bulk_jobs().await?);
            return Ok(());
        }
        BulkCommand::Job { id, wait } => {
            let job = api.bulk_job(&id).await?;
            return follow(api, &out, job, wait).await;
        }
        BulkCommand::Retry(args) => (BulkAction::Retry, args),
        BulkCommand::Cancel(args) => (BulkAction::Cancel, args),
        BulkCommand::Release(args) => (BulkAction::Release, args),
    };
    let request = BulkRequest {
        action: Some(action),
        filter: args.filter.request()?,
        all: args.all,
        dry_run: args.dry_run,
        per_second: args.per_second,
    };
    if args.dry_run {
        out.bulk_preview(&api.preview_bulk(&request).await?);
        return Ok(());
    }
    let job = api.start_bulk(&request).await?;
    follow(api, &out, job, args.wait).await
}

/// Prints the job; with `wait`, again each time its progress moves, until it finishes.
async fn follow(
    api: &Client,
    out: &show::Output,
    job: BulkJobView,
    wait: bool,
) -> Result<(), Failure> {
    out.bulk_job(&job);
    let mut last = job;
    while wait && last.state != "finished" {
        tokio::time::sleep(POLL).await;
        let job = api.bulk_job(&last.id).await?;
        if job.progress != last.progress || job.state != last.state {
            out.bulk_job(&job);
        }
        last = job;
    }
    Ok(())
}
