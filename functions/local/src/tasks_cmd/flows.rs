//! `boomerang flows …`: a tenant's flows from the command line: list them with what waits
//! in them, show one, pause and resume.

use std::process::ExitCode;

use anyhow::Result;
use boomerang_client::Client;
use clap::{Args, Subcommand};

use super::{show, with_api, Connection, Failure};

#[derive(Args)]
pub struct FlowsArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: FlowsCommand,
}

#[derive(Subcommand)]
enum FlowsCommand {
    /// The flows that are paused, or have tasks waiting or calls in flight.
    List,
    /// One flow (one no task named yet is simply empty).
    Get { key: String },
    /// Hold the flow's tasks back until it is resumed (calls already made run to their end).
    Pause { key: String },
    /// Let the flow's tasks go again: those waiting are due at once, paced by its limits.
    Resume { key: String },
}

/// Runs one command; what it answers decides the exit code (as for `tasks`).
pub async fn run(args: FlowsArgs) -> Result<ExitCode> {
    let (command, json) = (args.command, args.json);
    with_api(args.connection, |api| async move {
        execute(&api, command, json).await
    })
    .await
}

async fn execute(api: &Client, command: FlowsCommand, json: bool) -> Result<(), Failure> {
    let out = show::Output { json };
    match command {
        FlowsCommand::List => out.flows(&api.flows().await?),
        FlowsCommand::Get { key } => out.flow(&api.flow(&key).await?),
        FlowsCommand::Pause { key } => out.flow(&api.pause_flow(&key).await?),
        FlowsCommand::Resume { key } => out.flow(&api.resume_flow(&key).await?),
    }
    Ok(())
}
