//! `boomerang templates …`: a tenant's task templates from the command line: put one from
//! a JSON file (or `-` for standard input), show, list and delete them.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use boomerang_api::request::{parse_json, TemplateRequest};
use boomerang_client::Client;
use clap::{Args, Subcommand};

use super::{show, with_api, Connection, Failure};

#[derive(Args)]
pub struct TemplatesArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: TemplatesCommand,
}

#[derive(Subcommand)]
enum TemplatesCommand {
    /// The templates, by name.
    List,
    /// One template's settings (header values are never shown).
    Get { name: String },
    /// Create or replace a template from a JSON file (`-`: standard input); tasks
    /// registered afterwards take it.
    Put { name: String, file: PathBuf },
    /// Delete a template; tasks registered with it keep its settings.
    Delete { name: String },
}

/// Runs one command; what it answers decides the exit code (as for `tasks`).
pub async fn run(args: TemplatesArgs) -> Result<ExitCode> {
    let (command, json) = (args.command, args.json);
    with_api(args.connection, |api| async move {
        execute(&api, command, json).await
    })
    .await
}

async fn execute(api: &Client, command: TemplatesCommand, json: bool) -> Result<(), Failure> {
    let out = show::Output { json };
    match command {
        TemplatesCommand::List => out.templates(&api.templates().await?),
        TemplatesCommand::Get { name } => out.template(&api.template(&name).await?),
        TemplatesCommand::Put { name, file } => {
            let template = read_template(&file)?;
            out.template(&api.put_template(&name, &template).await?)
        }
        TemplatesCommand::Delete { name } => api.delete_template(&name).await?,
    }
    Ok(())
}

/// The template in `file`, read as the API reads it (a bad field is refused in its words).
fn read_template(file: &PathBuf) -> Result<TemplateRequest, Failure> {
    let mut text = Vec::new();
    let read = match file.to_str() {
        Some("-") => std::io::stdin().read_to_end(&mut text).map(|_| ()),
        _ => std::fs::read(file).map(|bytes| text = bytes),
    };
    read.map_err(|e| Failure::Usage(format!("cannot read {}: {e}", file.display())))?;
    parse_json(&text).map_err(|refused| Failure::Refused(Box::new(refused.into())))
}
