//! `boomerang secrets …`: the signing secrets deliveries carry, and their rotation without
//! downtime: list them, rotate (a new one, the others kept for a grace period), retire one.

use std::process::ExitCode;

use anyhow::Result;
use boomerang_api::request::RotationRequest;
use boomerang_client::Client;
use boomerang_core::domain::SecretId;
use clap::{Args, Subcommand};

use super::request::read;
use super::{show, with_api, Connection, Failure};

#[derive(Args)]
pub struct SecretsArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: SecretsCommand,
}

#[derive(Subcommand)]
enum SecretsCommand {
    /// The secrets in force, newest first.
    List,
    /// Add a new secret: it signs every delivery from now on, beside the ones in force
    /// until their grace period ends.
    Rotate {
        /// How long the secrets in force now go on signing, e.g. 24h (0s to 30d).
        #[arg(long)]
        grace: Option<String>,
    },
    /// Stop signing with a secret at once (its id, as `list` shows it).
    Retire {
        #[arg(value_parser = clap::value_parser!(SecretId))]
        id: SecretId,
    },
}

/// Runs one command; what it answers decides the exit code (as for `tasks`).
pub async fn run(args: SecretsArgs) -> Result<ExitCode> {
    let (command, json) = (args.command, args.json);
    with_api(args.connection, |api| async move {
        execute(&api, command, json).await
    })
    .await
}

async fn execute(api: &Client, command: SecretsCommand, json: bool) -> Result<(), Failure> {
    let out = show::Output { json };
    let secrets = match command {
        SecretsCommand::List => api.signing_secrets().await?,
        SecretsCommand::Rotate { grace } => {
            let rotation = RotationRequest {
                grace_period: read("grace_period", grace)?,
            };
            api.rotate_signing_secret(&rotation).await?
        }
        SecretsCommand::Retire { id } => api.retire_signing_secret(&id).await?,
    };
    out.signing_secrets(&secrets);
    Ok(())
}
