//! `boomerang-bench cost`: what a callback costs on AWS. It runs the AWS code path (the same
//! Router, engine and adapters the Lambdas run) against the emulator at `AWS_ENDPOINT_URL`,
//! counts every AWS request through an SDK interceptor ([`meter`]), prices DynamoDB by the
//! items written and read, and prints dollars per million callbacks by component.

mod access_log;
mod functions;
mod meter;
mod prices;
mod scenarios;
mod sweeper;
mod table_shape;

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

#[derive(clap::Args)]
pub struct CostArgs {
    /// Tasks per scenario (deliveries share SQS batches of up to 10, as at volume).
    #[arg(long, default_value_t = 100)]
    pub tasks: usize,
    /// Where the built `api` and `delivery` function binaries are; they are run under
    /// cargo-lambda's runtime emulator to time them and measure their logs.
    #[arg(long, default_value = "target/release")]
    pub functions: PathBuf,
    /// Skip the function binaries: durations from this process, logs not measured.
    #[arg(long)]
    pub in_process: bool,
}

pub async fn run(args: CostArgs) -> Result<()> {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .context("`bench cost` runs against an emulator: set AWS_ENDPOINT_URL (moto server)")?;
    if !boomerang_aws::is_loopback_endpoint(&endpoint) {
        bail!("AWS_ENDPOINT_URL={endpoint} is not a loopback address; the meter only talks to a local emulator");
    }
    if args.tasks == 0 || args.tasks > 10_000 {
        bail!("--tasks must be between 1 and 10000");
    }
    let functions = (!args.in_process).then_some(args.functions);
    scenarios::run_all(&endpoint, args.tasks, functions).await
}
