//! `boomerang schedules …`: recurring callbacks from the command line: create one (a
//! task's flags plus its recurrence), list, show, pause, resume and delete.

use std::process::ExitCode;

use anyhow::Result;
use boomerang_api::request::ScheduleFields;
use boomerang_api::view::ScheduleView;
use boomerang_client::Client;
use boomerang_core::domain::ScheduleId;
use clap::{Args, Subcommand};

use super::{request, show, with_api, Connection, Failure};

#[derive(Args)]
pub struct SchedulesArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: SchedulesCommand,
}

#[derive(Subcommand)]
enum SchedulesCommand {
    /// Create a schedule: a recurrence, and the task flags of `tasks create` (without a
    /// time, a hold, replace or an idempotency key: each occurrence gets its own).
    Create(Box<ScheduleCreateArgs>),
    /// The schedules, newest first.
    List,
    /// One schedule, with when its next occurrence is due.
    Get { id: ScheduleId },
    /// Skip the pending occurrence and register none until resumed.
    Pause { id: ScheduleId },
    /// Go on from the next slot.
    Resume { id: ScheduleId },
    /// Delete the schedule (its pending occurrence is skipped).
    Delete { id: ScheduleId },
}

#[derive(Args)]
struct ScheduleCreateArgs {
    /// A cron pattern (five fields, or six with seconds first), e.g. "0 9 * * MON-FRI".
    #[arg(long, conflicts_with = "every", required_unless_present = "every")]
    cron: Option<String>,
    /// The IANA time zone the pattern is read in (default UTC).
    #[arg(long, requires = "cron")]
    timezone: Option<String>,
    /// A fixed interval instead, e.g. 15m.
    #[arg(long)]
    every: Option<String>,
    /// No occurrence before this (RFC 3339).
    #[arg(long)]
    start_at: Option<String>,
    /// No occurrence after this (RFC 3339).
    #[arg(long)]
    end_at: Option<String>,
    /// A missed occurrence fires once (one) or is skipped (none).
    #[arg(long)]
    catch_up: Option<String>,
    #[command(flatten)]
    task: request::TaskArgs,
}

/// Runs one command; what it answers decides the exit code (as for `tasks`).
pub async fn run(args: SchedulesArgs) -> Result<ExitCode> {
    let (command, json) = (args.command, args.json);
    with_api(args.connection, |api| async move {
        execute(&api, command, json).await
    })
    .await
}

async fn execute(api: &Client, command: SchedulesCommand, json: bool) -> Result<(), Failure> {
    let out = show::Output { json };
    match command {
        SchedulesCommand::Create(create) => {
            let create = *create;
            let schedule = ScheduleFields {
                cron: create.cron,
                every: request::read("every", create.every)?,
                timezone: create.timezone,
                start_at: request::read("start_at", create.start_at)?,
                end_at: request::read("end_at", create.end_at)?,
                catch_up: request::choose("catch_up", create.catch_up)?,
            };
            let task = create.task.into_request()?;
            let created = api.create_schedule(&schedule, &task).await?;
            out.schedules(std::slice::from_ref(&created.body));
        }
        SchedulesCommand::List => {
            let mut all = Vec::new();
            let mut cursor = None;
            loop {
                let page = api.schedules(cursor.as_deref()).await?;
                all.extend(page.schedules);
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            out.schedules(&all);
        }
        SchedulesCommand::Get { id } => out.schedules(&[api.schedule(&id).await?]),
        SchedulesCommand::Pause { id } => out.schedules(&[api.set_schedule(&id, "pause").await?]),
        SchedulesCommand::Resume { id } => {
            out.schedules(&[api.set_schedule(&id, "resume").await?])
        }
        SchedulesCommand::Delete { id } => {
            api.delete_schedule(&id).await?;
            if !json {
                say!("deleted {id}");
            }
        }
    }
    Ok(())
}

impl show::Output {
    /// Schedules, one line each: id, state, next occurrence, recurrence and URL.
    fn schedules(&self, schedules: &[ScheduleView]) {
        if self.json {
            return match schedules {
                [one] => show::print_json(one),
                many => show::print_json(&many),
            };
        }
        say!(
            "{:<26}  {:<6}  {:<20}  {:<28}  URL",
            "ID",
            "STATE",
            "NEXT",
            "WHEN"
        );
        for s in schedules {
            let when = match (&s.cron, &s.timezone, s.every_ms) {
                (Some(cron), Some(tz), _) => format!("{cron} ({tz})"),
                (_, _, Some(ms)) => format!(
                    "every {}",
                    humantime::format_duration(std::time::Duration::from_millis(ms))
                ),
                _ => String::new(),
            };
            let next = s.next_at.map_or("-".to_string(), |t| {
                t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
            });
            say!(
                "{:<26}  {:<6}  {:<20}  {:<28}  {}",
                s.id,
                s.state,
                next,
                when,
                s.url
            );
        }
    }
}
