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

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use aws_sdk_dynamodb::types::ProjectionType;
use boomerang_aws::capacity::{IndexShape, Projection, TableShape};

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

/// The table's key and indexes, as DynamoDB describes them.
pub async fn table_shape(client: &aws_sdk_dynamodb::Client, table: &str) -> Result<TableShape> {
    let described = client.describe_table().table_name(table).send().await?;
    let t = described.table.context("no table description")?;
    let names = |ks: &[aws_sdk_dynamodb::types::KeySchemaElement]| {
        ks.iter()
            .map(|k| k.attribute_name().to_string())
            .collect::<Vec<_>>()
    };
    let indexes = t
        .global_secondary_indexes()
        .iter()
        .map(|gsi| {
            let projection = gsi.projection();
            IndexShape {
                name: gsi.index_name().unwrap_or_default().to_string(),
                key: names(gsi.key_schema()),
                projection: match projection.and_then(|p| p.projection_type()) {
                    Some(ProjectionType::KeysOnly) => Projection::KeysOnly,
                    Some(ProjectionType::Include) => Projection::Include(
                        projection
                            .map(|p| p.non_key_attributes().to_vec())
                            .unwrap_or_default(),
                    ),
                    _ => Projection::All,
                },
            }
        })
        .collect();
    Ok(TableShape {
        key: names(t.key_schema()),
        indexes,
    })
}
