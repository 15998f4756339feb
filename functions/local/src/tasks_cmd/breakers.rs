//! `boomerang breakers …`: a tenant's circuit breakers from the command line: list the
//! open ones with the settings, open or close one by hand, and set when they open.

use std::process::ExitCode;

use anyhow::Result;
use boomerang_api::request::BreakerSettingsRequest;
use boomerang_client::Client;
use clap::{Args, Subcommand};

use super::request::read;
use super::{show, with_api, Connection, Failure};

#[derive(Args)]
pub struct BreakersArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: BreakersCommand,
}

#[derive(Subcommand)]
enum BreakersCommand {
    /// The settings, and the destinations whose breaker is open.
    List,
    /// Open a destination's breaker by hand (a URL of it): nothing is sent to it, not
    /// even a probe, until it is closed by hand.
    Open { destination: String },
    /// Close a destination's breaker by hand: its deliveries go again.
    Close { destination: String },
    /// Set when breakers open and how they probe (a flag left out keeps its default).
    Settings(SettingsArgs),
}

#[derive(Args)]
struct SettingsArgs {
    /// Failed calls in a row that open a breaker.
    #[arg(long)]
    failures: Option<i64>,
    /// How long those failures must span at least, e.g. 1m.
    #[arg(long)]
    span: Option<String>,
    /// The wait before the first probe, e.g. 30s.
    #[arg(long)]
    first_probe: Option<String>,
    /// The longest wait between probes, e.g. 10m.
    #[arg(long)]
    max_probe: Option<String>,
}

/// Runs one command; what it answers decides the exit code (as for `tasks`).
pub async fn run(args: BreakersArgs) -> Result<ExitCode> {
    let (command, json) = (args.command, args.json);
    with_api(args.connection, |api| async move {
        execute(&api, command, json).await
    })
    .await
}

async fn execute(api: &Client, command: BreakersCommand, json: bool) -> Result<(), Failure> {
    let out = show::Output { json };
    match command {
        BreakersCommand::List => out.breakers(&api.breakers().await?),
        BreakersCommand::Open { destination } => {
            out.breaker(&api.set_breaker(&destination, true).await?)
        }
        BreakersCommand::Close { destination } => {
            out.breaker(&api.set_breaker(&destination, false).await?)
        }
        BreakersCommand::Settings(flags) => {
            let settings = BreakerSettingsRequest {
                failures: flags.failures,
                span: read("span", flags.span)?,
                first_probe: read("first_probe", flags.first_probe)?,
                max_probe: read("max_probe", flags.max_probe)?,
            };
            let applied = api.put_breaker_settings(&settings).await?;
            out.breaker_settings(&applied)
        }
    }
    Ok(())
}
