//! `boomerang order-keys …`: the tenant's order keys, each with the task whose turn it is
//! and how many tasks wait behind it.

use std::process::ExitCode;

use anyhow::Result;
use boomerang_client::Client;
use clap::{Args, Subcommand};

use super::{show, with_api, Connection, Failure};

#[derive(Args)]
pub struct OrderKeysArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: OrderKeysCommand,
}

#[derive(Subcommand)]
enum OrderKeysCommand {
    /// The keys in key order: backlog, and the head's task, place and status.
    List {
        /// Keys after this one.
        #[arg(long)]
        after: Option<String>,
        /// How many (1–100; default 50).
        #[arg(long)]
        limit: Option<u32>,
    },
    /// One key.
    Get { key: String },
}

/// Runs one command; what it answers decides the exit code (as for `tasks`).
pub async fn run(args: OrderKeysArgs) -> Result<ExitCode> {
    let (command, json) = (args.command, args.json);
    with_api(args.connection, |api| async move {
        execute(&api, command, json).await
    })
    .await
}

async fn execute(api: &Client, command: OrderKeysCommand, json: bool) -> Result<(), Failure> {
    let out = show::Output { json };
    match command {
        OrderKeysCommand::List { after, limit } => {
            out.order_keys(&api.order_keys(after.as_deref(), limit).await?)
        }
        OrderKeysCommand::Get { key } => out.order_key(&api.order_key(&key).await?),
    }
    Ok(())
}
