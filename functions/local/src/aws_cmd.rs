//! `boomerang aws bootstrap`, `boomerang aws rearm`, `boomerang keys create`, `boomerang
//! tenants alert` and `boomerang tenants destination-limit`: setting up and repairing the
//! AWS code path (against an emulator, or the deployed table).

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use boomerang_aws::bootstrap::{bootstrap, env_exports};
use boomerang_aws::rearm::{QueueHeld, RearmSettings};
use boomerang_aws::settings::ENV_TABLE;
use boomerang_aws::DynamoTenants;
use boomerang_core::domain::TenantId;
use boomerang_webhook::destination::alert_destination;

/// Creates the table, queues and schedule group in the emulator at `AWS_ENDPOINT_URL` and
/// prints the `export` lines that point `serve --backend aws` at them.
pub async fn bootstrap_emulator(prefix: &str) -> Result<()> {
    if std::env::var("AWS_ENDPOINT_URL").map_or(true, |v| v.trim().is_empty()) {
        bail!("`aws bootstrap` is for emulators: set AWS_ENDPOINT_URL (a real account is set up with the CDK stack in infra/)");
    }
    let sdk = boomerang_aws::sdk_config().await;
    let settings = bootstrap(&sdk, prefix).await?;
    print!("{}", env_exports(&settings));
    Ok(())
}

/// The tenant directory in the table `BOOMERANG_TABLE` names.
async fn tenants() -> Result<DynamoTenants> {
    let table = std::env::var(ENV_TABLE).with_context(|| format!("{ENV_TABLE} is not set"))?;
    let sdk = boomerang_aws::sdk_config().await;
    Ok(DynamoTenants::new(
        boomerang_aws::DynamoClient::new(&sdk),
        table,
    ))
}

/// Mints an API key for a tenant (creating the tenant and its signing secret if new).
pub async fn create_key(tenant: &str) -> Result<()> {
    let tenant = TenantId::parse(tenant).context("--tenant")?;
    let minted = tenants().await?.mint_key(&tenant).await?;
    say!("tenant:         {}", minted.tenant);
    say!("API key:        {}", minted.api_key);
    say!("signing secret: {}", minted.secret.expose());
    say!("(the API key is stored only as a hash: keep it now)");
    Ok(())
}

#[derive(clap::Args)]
pub struct TenantAlertArgs {
    #[arg(long)]
    tenant: String,
    /// Where alerts go (an absolute http:// or https:// URL).
    #[arg(long, required_unless_present = "clear", conflicts_with = "clear")]
    url: Option<String>,
    /// A header sent with every alert, as `Name: value` (repeatable).
    #[arg(long = "header", requires = "url")]
    headers: Vec<String>,
    /// Remove the tenant's default: its tasks then fall back to the server's.
    #[arg(long)]
    clear: bool,
}

/// Sets or removes a tenant's default alert destination.
pub async fn tenant_alert(args: TenantAlertArgs) -> Result<()> {
    let tenant = TenantId::parse(&args.tenant).context("--tenant")?;
    let target = match args.url {
        Some(url) => {
            let mut target = alert_destination("--url", &url)?;
            target.headers = args
                .headers
                .iter()
                .map(|h| header(h))
                .collect::<Result<Vec<_>>>()?;
            Some(target)
        }
        None => None,
    };
    tenants().await?.set_alert(&tenant, target.as_ref()).await?;
    match target {
        Some(t) => say!("tenant {tenant}: alerts go to {}", t.url),
        None => say!("tenant {tenant}: no default alert destination"),
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct TenantDestinationLimitArgs {
    #[arg(long)]
    tenant: String,
    /// The most calls the tenant's tasks make at once to one destination (1–1000).
    #[arg(long, required_unless_present = "clear", conflicts_with = "clear",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    limit: Option<u32>,
    /// Remove the tenant's own limit: the server's (`BOOMERANG_DESTINATION_LIMIT`) applies.
    #[arg(long)]
    clear: bool,
}

/// Sets or removes a tenant's own destination limit.
pub async fn tenant_destination_limit(args: TenantDestinationLimitArgs) -> Result<()> {
    let tenant = TenantId::parse(&args.tenant).context("--tenant")?;
    let limit = args.limit.map(|l| l as usize);
    tenants()
        .await?
        .set_destination_limit(&tenant, limit)
        .await?;
    match limit {
        Some(l) => say!("tenant {tenant}: at most {l} calls at once to one destination"),
        None => say!("tenant {tenant}: the server's destination limit applies"),
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct TenantShardsArgs {
    #[arg(long)]
    tenant: String,
    /// Partitions the tenant's tasks are spread over (1–256; 16 by default). Each takes
    /// about 330 callbacks a second.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    shards: u32,
}

/// Changes how many partitions a tenant's new tasks are spread over, ten minutes from now.
pub async fn tenant_shards(args: TenantShardsArgs) -> Result<()> {
    let tenant = TenantId::parse(&args.tenant).context("--tenant")?;
    let plan = tenants()
        .await?
        .set_shards(&tenant, args.shards, chrono::Utc::now())
        .await?;
    let from = plan
        .steps()
        .last()
        .map(|s| s.from)
        .context("a plan with a step")?;
    say!(
        "tenant {tenant}: {} partitions from {} (about {} callbacks a second); lists read {}",
        args.shards,
        from.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        args.shards * CALLBACKS_PER_PARTITION,
        plan.partitions()
    );
    Ok(())
}

/// A partition takes 1,000 write units a second; a callback writes about three.
const CALLBACKS_PER_PARTITION: u32 = 330;

/// `Name: value`, checked as an HTTP header.
fn header(raw: &str) -> Result<(String, String)> {
    let (name, value) = raw
        .split_once(':')
        .with_context(|| format!("--header `{raw}`: write it as `Name: value`"))?;
    let (name, value) = (name.trim(), value.trim());
    reqwest::header::HeaderName::from_bytes(name.as_bytes())
        .with_context(|| format!("--header `{raw}`: not a valid header name"))?;
    reqwest::header::HeaderValue::from_str(value)
        .with_context(|| format!("--header `{raw}`: not a valid header value"))?;
    Ok((name.to_string(), value.to_string()))
}

#[derive(clap::Args)]
pub struct RearmArgs {
    /// Parts read side by side (1–1000): the `due` index's 48 partitions, then the
    /// tenants' partitions or the scan's segments. Also the scan's segment count: a run
    /// resumes the scan positions saved by runs with the same count.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    segments: u32,
    /// Entries or items one read takes (1–1000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(i32).range(1..=1000))]
    page: i32,
    /// Read everything again, forgetting where earlier runs got to.
    #[arg(long)]
    restart: bool,
    /// Only index entries due, and (with --tenant) tasks created, this long ago or later
    /// (e.g. `6h`, `2d`): a task is then missed only if every wait since then went through
    /// the timer queue. The scan reads everything.
    #[arg(long, value_parser = humantime::parse_duration)]
    since: Option<std::time::Duration>,
    /// Find the tasks whose every wait went through the timer queue in this tenant's task
    /// partitions (repeatable), instead of scanning the table.
    #[arg(long = "tenant", value_name = "TENANT", conflicts_with = "index_only")]
    tenants: Vec<String>,
    /// Read the `due` index only: the timer queue is intact (a lost schedule group).
    #[arg(long)]
    index_only: bool,
}

/// Arms again every unfinished task's pending work, printing each page's count.
pub async fn rearm(args: RearmArgs) -> Result<()> {
    let backend = boomerang_aws::lambda::start::backend_with(
        Arc::new(boomerang_core::metrics::NoMetrics),
        None,
    )
    .await?;
    let client = boomerang_aws::DynamoClient::new(&boomerang_aws::sdk_config().await);
    let queue_held = if args.index_only {
        QueueHeld::Skip
    } else if args.tenants.is_empty() {
        QueueHeld::Scan
    } else {
        let tenants = (args.tenants.iter())
            .map(|t| TenantId::parse(t.as_str()).context("--tenant"))
            .collect::<Result<Vec<_>>>()?;
        QueueHeld::Tenants(tenants)
    };
    let since = match args.since {
        Some(ago) => Some(chrono::Utc::now() - chrono::Duration::from_std(ago).context("--since")?),
        None => None,
    };
    let settings = RearmSettings {
        segments: args.segments,
        page: args.page,
        restart: args.restart,
        since,
        queue_held,
    };
    let started = std::time::Instant::now();
    let total = boomerang_aws::rearm::rearm(&backend, &client, settings, &|page| {
        let r = page.report;
        say!(
            "{}: {} items read, {} armed, {} leases, {} dead letters, {} alerts{}{}",
            page.unit,
            page.read,
            r.rearmed,
            r.leases_taken_over,
            r.dead_letters_resent,
            r.alerts_raised,
            match page.unreadable {
                0 => String::new(),
                n => format!(", {n} unreadable tasks passed over (see the log)"),
            },
            if page.finished { "; done" } else { "" }
        );
    })
    .await?;
    say!(
        "done in {:.1} s: {} armed, {} leases, {} dead letters, {} alerts (within a day, a run resumes; --restart reads again)",
        started.elapsed().as_secs_f64(),
        total.rearmed,
        total.leases_taken_over,
        total.dead_letters_resent,
        total.alerts_raised
    );
    Ok(())
}
