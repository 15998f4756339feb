//! The local `boomerang` binary: `serve` runs the whole service on an embedded store;
//! `listen` receives and verifies callbacks.

// First: the modules after it print with its `say!`.
#[macro_use]
mod say;

mod aws_cmd;
mod backup_cmd;
mod listen;
mod serve;
mod tasks_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use axum::http::StatusCode;
use boomerang_core::domain::SigningSecret;
use boomerang_server::log_writer::LogWriter;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "boomerang", version, about = "Reliable delayed callbacks")]
struct Cli {
    /// Log format on stderr.
    #[arg(long, env = "BOOMERANG_LOG_FORMAT", default_value = "text", global = true,
          value_parser = ["text", "json"])]
    log_format: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API and the delivery engine (embedded store by default, or --backend aws).
    Serve(serve::ServeArgs),
    /// Receive callbacks on localhost, verify their signatures and print them.
    Listen(ListenArgs),
    /// Copy the embedded data directory while `serve` runs on it: a backup to restore from.
    Backup(backup_cmd::BackupArgs),
    /// Register, inspect, list, cancel, retry, release and watch tasks through the API.
    Tasks(tasks_cmd::TasksArgs),
    /// List flows with what waits in them; pause and resume one, through the API.
    Flows(tasks_cmd::flows::FlowsArgs),
    /// Create, list, pause, resume and delete recurring callbacks, through the API.
    Schedules(tasks_cmd::schedules::SchedulesArgs),
    /// Put, show, list and delete task templates, through the API.
    Templates(tasks_cmd::templates::TemplatesArgs),
    /// List open circuit breakers, open or close one by hand, set when they open.
    Breakers(tasks_cmd::breakers::BreakersArgs),
    /// Retry, cancel or release every task a filter takes; follow the jobs doing it.
    Bulk(tasks_cmd::bulk::BulkArgs),
    /// List, rotate and retire the secrets deliveries are signed with, through the API.
    Secrets(tasks_cmd::secrets::SecretsArgs),
    /// List order keys with their head and backlog, through the API.
    OrderKeys(tasks_cmd::order_keys::OrderKeysArgs),
    /// Set up the AWS code path against an emulator.
    #[command(subcommand)]
    Aws(AwsCommand),
    /// Manage API keys (AWS backend).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Manage tenants (AWS backend).
    #[command(subcommand)]
    Tenants(TenantsCommand),
    /// Print the API's OpenAPI 3.1 document (as the server serves it at /openapi.json).
    Openapi,
}

#[derive(Subcommand)]
enum AwsCommand {
    /// Create the table, queues and schedule group at AWS_ENDPOINT_URL; prints `export` lines.
    Bootstrap {
        /// Prefix of every resource name.
        #[arg(long, default_value = "boomerang")]
        prefix: String,
    },
    /// Arm again the pending work of every unfinished task in BOOMERANG_TABLE (after a
    /// lost timer queue or schedule group, or a restore); resumes where a run stopped.
    Rearm(aws_cmd::RearmArgs),
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Mint an API key for a tenant (the tenant is created with its own signing secret).
    Create {
        #[arg(long)]
        tenant: String,
    },
}

#[derive(Subcommand)]
enum TenantsCommand {
    /// Set (or with --clear remove) where the tenant's failure alerts go when a task names
    /// no `on_failure` of its own.
    Alert(aws_cmd::TenantAlertArgs),
    /// Set (or with --clear remove) the tenant's own limit of calls at once to one
    /// destination, in place of the server's.
    DestinationLimit(aws_cmd::TenantDestinationLimitArgs),
    /// Spread the tenant's new tasks over more (or fewer) partitions, from ten minutes on:
    /// a tenant's ceiling is about 330 callbacks a second per partition.
    Shards(aws_cmd::TenantShardsArgs),
}

#[derive(clap::Args)]
struct ListenArgs {
    #[arg(long, default_value_t = 9000)]
    port: u16,
    /// The secret to verify with; defaults to those `serve` keeps in --data-dir (all in
    /// force, read again for each delivery, so a rotation is followed).
    #[arg(long, env = "BOOMERANG_SIGNING_SECRET", hide_env_values = true)]
    signing_secret: Option<String>,
    #[arg(long, env = "BOOMERANG_DATA_DIR", default_value = "./.boomerang")]
    data_dir: PathBuf,
    /// Status code to answer with (try 500 to watch retries).
    #[arg(long, default_value_t = 200)]
    status: u16,
}

#[tokio::main]
async fn main() -> Result<ExitCode> {
    let cli = Cli::parse();
    init_tracing(&cli.log_format);
    let done = match cli.command {
        Command::Tasks(args) => return tasks_cmd::run(args).await,
        Command::Flows(args) => return tasks_cmd::flows::run(args).await,
        Command::Schedules(args) => return tasks_cmd::schedules::run(args).await,
        Command::Templates(args) => return tasks_cmd::templates::run(args).await,
        Command::Breakers(args) => return tasks_cmd::breakers::run(args).await,
        Command::Bulk(args) => return tasks_cmd::bulk::run(args).await,
        Command::Secrets(args) => return tasks_cmd::secrets::run(args).await,
        Command::OrderKeys(args) => return tasks_cmd::order_keys::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Listen(args) => listen(args).await,
        Command::Backup(args) => backup_cmd::run(args),
        Command::Aws(AwsCommand::Bootstrap { prefix }) => {
            aws_cmd::bootstrap_emulator(&prefix).await
        }
        Command::Aws(AwsCommand::Rearm(args)) => aws_cmd::rearm(args).await,
        Command::Keys(KeysCommand::Create { tenant }) => aws_cmd::create_key(&tenant).await,
        Command::Tenants(TenantsCommand::Alert(args)) => aws_cmd::tenant_alert(args).await,
        Command::Tenants(TenantsCommand::DestinationLimit(args)) => {
            aws_cmd::tenant_destination_limit(args).await
        }
        Command::Tenants(TenantsCommand::Shards(args)) => aws_cmd::tenant_shards(args).await,
        Command::Openapi => print_openapi(),
    };
    done.map(|()| ExitCode::SUCCESS)
}

fn print_openapi() -> Result<()> {
    let doc = boomerang_http::openapi();
    say!(
        "{}",
        doc.to_pretty_json().context("rendering the document")?
    );
    Ok(())
}

fn init_tracing(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: a log file or a collector gets plain text.
    // A log line that cannot be written is dropped and counted, never reported on the
    // stderr that just failed (`LogWriter`).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(LogWriter)
        .log_internal_errors(false);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn listen(args: ListenArgs) -> Result<()> {
    let verify = match args.signing_secret {
        Some(s) => {
            listen::VerifyWith::Secret(SigningSecret::parse(&s).context("--signing-secret")?)
        }
        None => match boomerang_embedded::tenants::credentials::stored_secrets(&args.data_dir)? {
            Some(_) => listen::VerifyWith::DataDir(args.data_dir.clone()),
            None => listen::VerifyWith::Nothing,
        },
    };
    let status = StatusCode::from_u16(args.status).context("--status")?;
    listen::run(listen::ListenConfig {
        port: args.port,
        verify,
        status,
    })
    .await
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap checks a command's flags only when it is parsed: this checks them all at once
    /// (two flags of one command named alike would panic at its first use).
    #[test]
    fn every_command_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
