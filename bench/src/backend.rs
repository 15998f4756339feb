//! The servers a benchmark drives: one embedded server on a fresh data dir, or any number
//! of PostgreSQL-backend servers sharing one fresh database; and what they and the
//! database's processes use.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio_postgres::NoTls;

use super::measure::{listener_on, tree_cpu_seconds, Usage};
use super::procs::Server;

#[derive(clap::Args, Clone)]
pub struct BackendArgs {
    /// `embedded`: one server on SQLite in a fresh data dir. `postgres`: `--servers`
    /// servers sharing one fresh PostgreSQL database.
    #[arg(long, default_value = "embedded", value_parser = ["embedded", "postgres"])]
    backend: String,
    /// How many servers (more than one only with `--backend postgres`).
    #[arg(long, default_value_t = 1)]
    servers: usize,
    /// With `--backend postgres`: the PostgreSQL server to make the fresh database
    /// (`bench_<ulid>`) on, as the URL of a role allowed to create databases; it is dropped
    /// at the end. Unset: a cluster of the bench's own (initdb in a temporary directory,
    /// fsync on, loopback), or the one at BOOMERANG_TEST_DATABASE_URL if that is set.
    #[arg(long)]
    database_url: Option<String>,
}

/// The servers, and their database if they share one.
pub struct Deployment {
    pub servers: Vec<Server>,
    pub database: Option<Database>,
}

/// The fresh database the PostgreSQL-backend servers share.
pub struct Database {
    pub url: String,
    /// `<name> on <host:port>, PostgreSQL <version>; <settings>; <whose cluster>`.
    description: String,
    /// The cluster's postmaster, if it runs on this machine and could be found.
    postmaster: Option<u32>,
    /// A URL on the cluster's `postgres` database, to drop this one at the end, when the
    /// cluster outlives the bench.
    drop_from: Option<String>,
}

/// CPU time and memory of each server, and the database's CPU time, at one moment.
pub struct Snapshot {
    pub servers: Vec<Usage>,
    /// CPU seconds of the postmaster and every process under it, if it was found.
    pub database_cpu: Option<f64>,
}

impl Snapshot {
    /// Servers that just started (nothing used yet), and the database's CPU as given.
    pub fn at_start(servers: usize, database_cpu: Option<f64>) -> Snapshot {
        let nothing = || Usage {
            cpu_seconds: 0.0,
            rss_kb: 0,
            peak_rss_kb: 0,
        };
        Snapshot {
            servers: (0..servers).map(|_| nothing()).collect(),
            database_cpu,
        }
    }
}

impl BackendArgs {
    /// Whether these are the defaults: one embedded server.
    pub fn is_default(&self) -> bool {
        self.backend == "embedded" && self.servers == 1 && self.database_url.is_none()
    }

    /// Starts the servers (and makes the database) this asks for; `extra` and
    /// `open_files` as in [`Server::start_with_open_files`].
    pub async fn start(&self, extra: &[&str], open_files: Option<u64>) -> Result<Deployment> {
        if self.servers == 0 {
            bail!("--servers must be at least 1");
        }
        if self.backend != "postgres" {
            if self.servers > 1 {
                bail!("--servers {} needs --backend postgres", self.servers);
            }
            if self.database_url.is_some() {
                bail!("--database-url needs --backend postgres");
            }
            return Ok(Deployment {
                servers: vec![Server::start_with_open_files(extra, open_files)?],
                database: None,
            });
        }
        let database = Database::fresh(self.database_url.as_deref()).await?;
        let servers = Server::start_postgres(&database.url, self.servers, extra, open_files)?;
        Ok(Deployment {
            servers,
            database: Some(database),
        })
    }
}

impl Deployment {
    /// `embedded, 1 server` or `postgres, N servers (database: …)`.
    pub fn describe(&self) -> String {
        let n = self.servers.len();
        let servers = format!("{n} server{}", if n == 1 { "" } else { "s" });
        match &self.database {
            None => format!("embedded, {servers}"),
            Some(db) => format!("postgres, {servers} (database: {})", db.description),
        }
    }

    /// The header line naming the backend.
    pub fn print_header(&self) {
        println!("backend:           {}", self.describe());
    }

    pub fn snapshot(&self) -> Result<Snapshot> {
        Ok(Snapshot {
            servers: self
                .servers
                .iter()
                .map(|s| Usage::of(s.pid()))
                .collect::<Result<_>>()?,
            database_cpu: self.database_cpu(),
        })
    }

    /// CPU seconds of the database's postmaster and every process under it, if it was
    /// found (the servers may be stopped).
    pub fn database_cpu(&self) -> Option<f64> {
        self.database
            .as_ref()
            .and_then(|db| tree_cpu_seconds(db.postmaster?))
    }

    /// Stops every server (SIGTERM to all, then waits for each to exit).
    pub fn stop_all(&mut self) -> Result<()> {
        for server in &self.servers {
            server.terminate()?;
        }
        for server in &mut self.servers {
            server.wait()?;
        }
        Ok(())
    }

    /// Starts every stopped server again, one after the other; how long each took from its
    /// spawn to answering `/healthz`.
    pub fn start_all_again(&mut self) -> Result<Vec<Duration>> {
        self.servers.iter_mut().map(Server::start_again).collect()
    }

    /// The lines on CPU and memory between two snapshots: the servers' CPU and peak RSS,
    /// summed (and each server's when there are several), and the database's CPU.
    pub fn print_usage(&self, before: &Snapshot, after: &Snapshot) {
        let cpu: Vec<f64> = after
            .servers
            .iter()
            .zip(&before.servers)
            .map(|(a, b)| a.cpu_seconds - b.cpu_seconds)
            .collect();
        let each = |values: Vec<String>| match values.len() {
            1 => String::new(),
            _ => format!(" ({})", values.join(" + ")),
        };
        println!(
            "server CPU:        {:.2} s{}",
            cpu.iter().sum::<f64>(),
            each(cpu.iter().map(|c| format!("{c:.2}")).collect())
        );
        let peaks: Vec<u64> = after.servers.iter().map(|u| u.peak_rss_kb / 1024).collect();
        println!(
            "server peak RSS:   {} MB{}",
            peaks.iter().sum::<u64>(),
            each(peaks.iter().map(u64::to_string).collect())
        );
        self.print_database_cpu(before, after);
    }

    /// The CPU each of `deliveries` took between two snapshots, the servers' and the
    /// database's apart: the cost of a delivery, whatever the machine's load. `label`
    /// heads the line, padded to the column of figures.
    pub fn print_cpu_per_delivery(
        &self,
        label: &str,
        before: &Snapshot,
        after: &Snapshot,
        deliveries: usize,
    ) {
        let per = |seconds: f64| seconds * 1e6 / deliveries.max(1) as f64;
        let servers: f64 = after
            .servers
            .iter()
            .zip(&before.servers)
            .map(|(a, b)| a.cpu_seconds - b.cpu_seconds)
            .sum();
        let database = match (before.database_cpu, after.database_cpu) {
            (Some(b), Some(a)) if self.database.is_some() => {
                format!(" + database {:.0} µs", per(a - b))
            }
            _ => String::new(),
        };
        println!(
            "{:<19}servers {:.0} µs{database}",
            format!("{label}:"),
            per(servers)
        );
    }

    /// The database's CPU between two snapshots (nothing on the embedded backend).
    pub fn print_database_cpu(&self, before: &Snapshot, after: &Snapshot) {
        let Some(db) = &self.database else { return };
        match (db.postmaster, before.database_cpu, after.database_cpu) {
            (Some(pid), Some(b), Some(a)) => println!(
                "database CPU:      {:.2} s (postmaster {pid} and every process under it)",
                a - b
            ),
            _ => println!("database CPU:      unknown (external database)"),
        }
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        // The servers first (killed), then their database, if it is to go.
        self.servers.clear();
        if let Some(admin) = self.database.as_ref().and_then(|db| db.drop_from.clone()) {
            let name = database_of(&self.database.as_ref().expect("a database").url);
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(async move {
                    let client = connect(&admin).await?;
                    client
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await?;
                    Ok::<_, anyhow::Error>(())
                })
            })
            .join();
        }
    }
}

impl Database {
    /// A new, empty database: `bench_<ulid>` on the server at `server_url`, or one from
    /// `boomerang_postgres::testing::fresh_database` if `None`.
    async fn fresh(server_url: Option<&str>) -> Result<Database> {
        let (url, whose, drop_from) = match server_url {
            Some(server_url) => {
                let name = format!("bench_{}", ulid::Ulid::new().to_string().to_lowercase());
                connect(server_url)
                    .await?
                    .batch_execute(&format!("CREATE DATABASE {name}"))
                    .await
                    .with_context(|| format!("creating database {name}"))?;
                let url = url_with_database(server_url, &name)?;
                let admin = url_with_database(server_url, "postgres")?;
                (url, "the cluster at --database-url", Some(admin))
            }
            None => {
                let shared = std::env::var(boomerang_postgres::testing::DATABASE_URL_VAR)
                    .is_ok_and(|v| !v.is_empty());
                let url = boomerang_postgres::testing::fresh_database().await;
                match shared {
                    true => {
                        let admin = url_with_database(&url, "postgres")?;
                        (
                            url,
                            "the cluster at BOOMERANG_TEST_DATABASE_URL",
                            Some(admin),
                        )
                    }
                    false => (url, "a cluster of the bench's own", None),
                }
            }
        };
        let config: tokio_postgres::Config = url.parse().context("the database URL")?;
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let (host, local) = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => (
                host.clone(),
                matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1" | "[::1]"),
            ),
            Some(tokio_postgres::config::Host::Unix(dir)) => (dir.display().to_string(), true),
            None => ("localhost".to_string(), true),
        };
        let postmaster = local.then(|| listener_on(port)).flatten();
        let client = connect(&url).await?;
        let setting = |row: &tokio_postgres::Row| row.get::<_, String>(0);
        let mut settings = Vec::new();
        for name in [
            "server_version",
            "fsync",
            "synchronous_commit",
            "shared_buffers",
            "max_connections",
        ] {
            let row = client.query_one(&format!("SHOW {name}"), &[]).await?;
            settings.push(setting(&row));
        }
        let description = format!(
            "{} on {host}:{port}, PostgreSQL {}; fsync {}, synchronous_commit {}, \
             shared_buffers {}, max_connections {}; {whose}",
            database_of(&url),
            settings[0],
            settings[1],
            settings[2],
            settings[3],
            settings[4],
        );
        Ok(Database {
            url,
            description,
            postmaster,
            drop_from,
        })
    }

    /// `pg_database_size(current_database())`, in bytes.
    pub async fn size(&self) -> Result<i64> {
        let row = connect(&self.url)
            .await?
            .query_one("SELECT pg_database_size(current_database())", &[])
            .await?;
        Ok(row.get(0))
    }
}

/// A connection to `url` (no TLS: the bench's databases are on loopback or a trusted
/// network), driven on a task of its own.
async fn connect(url: &str) -> Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .with_context(|| format!("connecting to {}", without_password(url)))?;
    tokio::spawn(connection);
    Ok(client)
}

/// The database a `postgres://` URL names (its path).
fn database_of(url: &str) -> String {
    url.parse::<tokio_postgres::Config>()
        .ok()
        .and_then(|c| c.get_dbname().map(String::from))
        .unwrap_or_default()
}

/// `url` without its password, for messages.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "the database".to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            format!("{scheme}://{user}@{host}{}", &rest[authority_end..])
        }
        None => url.to_string(),
    }
}

/// `url` with its database (path) replaced by `database`, its query kept.
fn url_with_database(url: &str, database: &str) -> Result<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        bail!("{} is not a postgres:// URL", without_password(url));
    };
    let query_start = rest.find('?').unwrap_or(rest.len());
    let authority_end = rest[..query_start].find('/').unwrap_or(query_start);
    Ok(format!(
        "{scheme}://{}/{database}{}",
        &rest[..authority_end],
        &rest[query_start..]
    ))
}
