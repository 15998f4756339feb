//! The connection pool: where the database is (a URL, or libpq's `PG*` variables), TLS,
//! and bounded connect, wait and statement times.

use std::time::Duration;

use deadpool::managed::QueueMode;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use tokio::sync::mpsc;
use tokio_postgres::config::SslMode;
use tokio_postgres::{AsyncMessage, Notification};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How to reach the database and how many connections a server keeps.
#[derive(Clone, Debug)]
pub struct PgSettings {
    /// A `postgres://` URL (or libpq's key=value form); empty: libpq's `PG*` variables.
    pub url: String,
    /// Most connections this server opens.
    pub pool_size: usize,
    /// Longest a statement may run before the database cancels it.
    pub statement_timeout: Duration,
    /// Longest a connection takes to open (and a request waits for a free one).
    pub connect_timeout: Duration,
    /// The server's id, told to the database on each connection, so that a change to a
    /// row another server owns is noticed by that server (see `store::owner_notices`).
    pub server: Option<String>,
}

impl PgSettings {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            pool_size: 16,
            statement_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            server: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("the database URL is not valid: {0}")]
    Url(#[source] tokio_postgres::Error),
    #[error("no database given: set --database-url (or DATABASE_URL, or PGHOST and friends)")]
    NoDatabase,
    #[error("cannot read the CA certificates in {path}: {source}")]
    RootCert {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    #[error("cannot build the connection pool: {0}")]
    Pool(#[source] deadpool_postgres::BuildError),
}

/// The pool for `settings`. No connection is opened yet: the first use opens one.
pub fn pool(settings: &PgSettings) -> Result<Pool, ConnectError> {
    let (config, tls) = connection(settings)?;
    let manager = Manager::from_config(
        config,
        tls,
        ManagerConfig {
            // A connection a failover reset is found out by its next statement, which
            // fails with "unavailable" and is tried again on a new one.
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(settings.pool_size)
        // The connection used last is the next one out: a few backends stay busy and warm
        // rather than every one of them woken in turn (each a process on the database's
        // host, its caches cold).
        .queue_mode(QueueMode::Lifo)
        .timeouts(Timeouts {
            wait: Some(settings.connect_timeout),
            create: Some(settings.connect_timeout),
            recycle: Some(settings.connect_timeout),
        })
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(ConnectError::Pool)
}

/// One connection of its own, outside the pool (the owner notices' listener), with its
/// messages: the notifications its `LISTEN` asked for. The stream of messages ends when
/// the connection does.
pub(crate) async fn connect_one(
    settings: &PgSettings,
) -> Result<
    (
        tokio_postgres::Client,
        mpsc::UnboundedReceiver<Notification>,
    ),
    ListenError,
> {
    let (mut config, tls) = connection(settings)?;
    config.application_name("boomerang notices");
    let (client, mut connection) = config.connect(tls).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // Polling the messages is what drives the connection, the client's statements too.
        while let Some(Ok(message)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(n) = message {
                if tx.send(n).is_err() {
                    break;
                }
            }
        }
    });
    Ok((client, rx))
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ListenError {
    #[error(transparent)]
    Settings(#[from] ConnectError),
    #[error("cannot connect: {0}")]
    Connect(#[from] tokio_postgres::Error),
}

/// What every connection of this server is opened with: where, TLS, the timeouts, and
/// who it is (`application_name`, and `boomerang.server`, which the owner notices read).
fn connection(settings: &PgSettings) -> Result<(tokio_postgres::Config, Tls), ConnectError> {
    let (url, root_cert) = without_root_cert(&settings.url);
    let mut config = config_of(&url)?;
    // Added to the URL's own `options`, if it has any.
    let mut options = config.get_options().unwrap_or_default().to_string();
    options.push_str(&format!(
        " -c statement_timeout={} -c lock_timeout={}",
        settings.statement_timeout.as_millis(),
        settings.statement_timeout.as_millis()
    ));
    if let Some(server) = &settings.server {
        // An id with anything but letters, digits, `-`, `_` and `.` would need escaping
        // here; such a server names itself nowhere, and its own writes notify it.
        if server.chars().all(crate::servers::plain) {
            options.push_str(&format!(" -c boomerang.server={server}"));
        }
    }
    config
        .connect_timeout(settings.connect_timeout)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .application_name("boomerang")
        .options(options);
    Ok((config, Tls(tls(root_cert)?)))
}

/// The URL parsed, or the connection libpq's variables describe. `sslmode=verify-full`
/// and `verify-ca` are taken as `require`: the TLS here always verifies the server's
/// certificate and name.
fn config_of(url: &str) -> Result<tokio_postgres::Config, ConnectError> {
    if url.trim().is_empty() {
        return from_env();
    }
    let url = url
        .replace("sslmode=verify-full", "sslmode=require")
        .replace("sslmode=verify-ca", "sslmode=require");
    url.parse().map_err(ConnectError::Url)
}

fn from_env() -> Result<tokio_postgres::Config, ConnectError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let host = var("PGHOST").ok_or(ConnectError::NoDatabase)?;
    let mut config = tokio_postgres::Config::new();
    config.host(&host);
    if let Some(port) = var("PGPORT").and_then(|p| p.parse().ok()) {
        config.port(port);
    }
    if let Some(user) = var("PGUSER").or_else(|| var("USER")) {
        config.user(&user);
    }
    if let Some(password) = var("PGPASSWORD") {
        config.password(password);
    }
    if let Some(db) = var("PGDATABASE") {
        config.dbname(&db);
    }
    config.ssl_mode(match var("PGSSLMODE").as_deref() {
        Some("disable") => SslMode::Disable,
        Some("require" | "verify-ca" | "verify-full") => SslMode::Require,
        _ => SslMode::Prefer,
    });
    Ok(config)
}

/// The URL without its `sslrootcert` parameter (libpq's, which the URL parser here does
/// not take), and that parameter's value: the URL of a database's own documentation
/// (`…?sslmode=verify-full&sslrootcert=/certs/global-bundle.pem`) works as it is.
fn without_root_cert(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    // The other parameters are kept as written: only the one taken out is decoded.
    let (taken, kept): (Vec<&str>, Vec<&str>) = query
        .split('&')
        .partition(|pair| pair.starts_with("sslrootcert="));
    let Some(value) = taken.last().map(|pair| &pair["sslrootcert=".len()..]) else {
        return (url.to_string(), None);
    };
    let path = percent_encoding::percent_decode_str(value)
        .decode_utf8_lossy()
        .into_owned();
    match kept.is_empty() {
        true => (base.to_string(), Some(path)),
        false => (format!("{base}?{}", kept.join("&")), Some(path)),
    }
}

/// TLS with the platform's roots, or only those in `root_cert` (the URL's `sslrootcert`)
/// or else `PGSSLROOTCERT`, when set.
fn tls(root_cert: Option<String>) -> Result<MakeRustlsConnect, ConnectError> {
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ConnectError::Tls(e.to_string()))?;
    let root_cert = root_cert.or_else(|| std::env::var("PGSSLROOTCERT").ok());
    let config = match root_cert.filter(|p| !p.is_empty()) {
        Some(path) => {
            let pem = std::fs::read(&path).map_err(|source| ConnectError::RootCert {
                path: path.clone(),
                source,
            })?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_pemfile_certs(&pem) {
                roots
                    .add(cert)
                    .map_err(|e| ConnectError::Tls(e.to_string()))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        None => rustls_platform_verifier::BuilderVerifierExt::with_platform_verifier(builder)
            .map_err(|e| ConnectError::Tls(e.to_string()))?
            .with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

/// TLS to a host by name; a Unix socket (a host that is a path) is named `localhost`, a
/// name TLS accepts (no TLS runs over a socket, but a connector is made for every host).
#[derive(Clone)]
struct Tls(MakeRustlsConnect);

impl<S> tokio_postgres::tls::MakeTlsConnect<S> for Tls
where
    MakeRustlsConnect: tokio_postgres::tls::MakeTlsConnect<S>,
{
    type Stream = <MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<S>>::Stream;
    type TlsConnect = <MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<S>>::TlsConnect;
    type Error = <MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<S>>::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Self::TlsConnect, Self::Error> {
        let domain = if domain.starts_with('/') {
            "localhost"
        } else {
            domain
        };
        self.0.make_tls_connect(domain)
    }
}

/// The certificates of a PEM file.
fn rustls_pemfile_certs(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::without_root_cert;

    #[test]
    fn the_urls_sslrootcert_is_taken_out_and_the_rest_kept() {
        assert_eq!(
            without_root_cert(
                "postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fcerts%2Fca.pem"
            ),
            (
                "postgres://u@h/db?sslmode=verify-full".to_string(),
                Some("/certs/ca.pem".to_string())
            )
        );
        assert_eq!(
            without_root_cert("postgres://u@h/db?sslrootcert=/ca.pem"),
            ("postgres://u@h/db".to_string(), Some("/ca.pem".to_string()))
        );
        assert_eq!(
            without_root_cert(
                "postgres://u@h/db?options=-c%20search_path%3Dx&sslrootcert=/a+b.pem&sslmode=require"
            ),
            (
                "postgres://u@h/db?options=-c%20search_path%3Dx&sslmode=require".to_string(),
                Some("/a+b.pem".to_string())
            )
        );
        assert_eq!(
            without_root_cert("postgres://u@h/db?sslmode=require"),
            ("postgres://u@h/db?sslmode=require".to_string(), None)
        );
        assert_eq!(
            without_root_cert("host=h dbname=db"),
            ("host=h dbname=db".to_string(), None)
        );
    }
}
