//! `boomerang aws bootstrap` and `boomerang keys create`: setting up the AWS code path
//! against an emulator.

use anyhow::{bail, Context, Result};
use boomerang::aws::bootstrap::{bootstrap, env_exports};
use boomerang::aws::ENV_TABLE;
use boomerang::domain::TenantId;
use boomerang::tenants::DynamoTenants;

/// Creates the table, queues and schedule group in the emulator at `AWS_ENDPOINT_URL` and
/// prints the `export` lines that point `serve --backend aws` at them.
pub async fn bootstrap_emulator(prefix: &str) -> Result<()> {
    if std::env::var("AWS_ENDPOINT_URL").map_or(true, |v| v.trim().is_empty()) {
        bail!("`aws bootstrap` is for emulators: set AWS_ENDPOINT_URL (a real account is set up with the CDK stack in infra/)");
    }
    let sdk = boomerang::aws::sdk_config().await;
    let settings = bootstrap(&sdk, prefix).await?;
    print!("{}", env_exports(&settings));
    Ok(())
}

/// Mints an API key for a tenant (creating the tenant and its signing secret if new).
pub async fn create_key(tenant: &str) -> Result<()> {
    let table = std::env::var(ENV_TABLE).with_context(|| format!("{ENV_TABLE} is not set"))?;
    let sdk = boomerang::aws::sdk_config().await;
    let tenants = DynamoTenants::new(boomerang::aws::DynamoClient::new(&sdk), table);
    let tenant = TenantId::parse(tenant).context("--tenant")?;
    let minted = tenants.mint_key(&tenant).await?;
    println!("tenant:         {}", minted.tenant);
    println!("API key:        {}", minted.api_key);
    println!("signing secret: {}", minted.secret.expose());
    println!("(the API key is stored only as a hash: keep it now)");
    Ok(())
}
