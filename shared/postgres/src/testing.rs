//! Real PostgreSQL for tests (the `testing` feature): a fresh database per test on a shared
//! cluster, and private clusters for tests that stop, crash or restart the database.
//!
//! - [`fresh_database`]: a new, empty database on the shared test cluster, the one at
//!   `BOOMERANG_TEST_DATABASE_URL` (`scripts/postgres.sh` starts it for the test command).
//!   Without that variable (`cargo test -p boomerang-postgres` on its own), the test process
//!   starts a cluster of its own at its first call and uses it for every later one; a
//!   watchdog process stops it and removes its directory when the test process ends, even
//!   if it is killed.
//! - [`Cluster`]: a cluster that one test owns, to stop, kill (SIGKILL: a crash) and start
//!   again on the same data directory and port.
//!
//! The clusters are made with `initdb` and run with `pg_ctl`, from `BOOMERANG_TEST_PG_BIN`
//! or else the newest Debian PostgreSQL (`/usr/lib/postgresql/*/bin`), in a temporary
//! directory: data, server log (`postgres.log`) and Unix socket. Only loopback TCP, trust
//! authentication, fsync on. PostgreSQL refuses to run as root: as root, the cluster
//! belongs to the `postgres` user (or `nobody`), and its commands run through `runuser`.
//!
//! Everything here panics, with what went wrong and the server's log, rather than
//! returning errors: it is for tests only.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio_postgres::NoTls;

/// The shared test cluster's URL (a superuser's, on its `postgres` database).
pub const DATABASE_URL_VAR: &str = "BOOMERANG_TEST_DATABASE_URL";
/// The directory of `initdb` and `pg_ctl` to use.
pub const PG_BIN_VAR: &str = "BOOMERANG_TEST_PG_BIN";

/// The superuser every cluster made here has (trust authentication: no password).
const SUPERUSER: &str = "postgres";

/// A new, empty database (named `t_<ulid>`) on the shared test cluster, and its URL.
///
/// The shared cluster is the one at `BOOMERANG_TEST_DATABASE_URL`; without that variable,
/// one that this test process starts at the first call (which then takes a second or two;
/// the call blocks its thread meanwhile) and keeps until it ends.
pub async fn fresh_database() -> String {
    let admin = match std::env::var(DATABASE_URL_VAR) {
        Ok(url) if !url.is_empty() => {
            drop_stale_databases(&url).await;
            url
        }
        _ => {
            static PROCESS_CLUSTER: OnceLock<Instance> = OnceLock::new();
            PROCESS_CLUSTER
                .get_or_init(|| Instance::start(&SHARED))
                .admin_url()
        }
    };
    create_database(&admin).await
}

/// A PostgreSQL cluster of a test's own, in a temporary directory, on a free loopback port:
/// for tests that stop, crash or restart the database. Dropping it stops it (immediate
/// shutdown) and removes its directory; a watchdog process does the same if the test
/// process ends without dropping it (killed, or the value leaked).
///
/// Every method blocks the calling thread until done: [`Cluster::start`] takes a second or
/// two (`initdb`), the others a fraction of one. From a test on tokio's single-threaded
/// runtime, tasks of that runtime (an in-process server, say) do not run meanwhile; use a
/// multi-threaded runtime, or `tokio::task::spawn_blocking`, where they must.
pub struct Cluster {
    instance: Instance,
    url: String,
}

impl Cluster {
    /// A new cluster, running, with a database `boomerang` made in it (see [`Cluster::url`]).
    /// It fsyncs (as production would); its `initdb` does not, to start sooner.
    pub fn start() -> Cluster {
        Self::start_with(&PRIVATE)
    }

    /// A cluster as [`Cluster::start`] makes it, whose database `boomerang` is reached only
    /// over TLS (plain connections to it are refused), with a certificate for `127.0.0.1`
    /// and `localhost` that is its own root: [`Cluster::root_cert`]. Its `postgres`
    /// database, the tests' own way in, stays plain.
    pub fn start_with_tls() -> Cluster {
        Self::start_with(&PRIVATE_TLS)
    }

    fn start_with(settings: &Settings) -> Cluster {
        let instance = Instance::start(settings);
        let admin = instance.admin_url();
        run_async(async move {
            let client = connect(&admin).await;
            client
                .batch_execute("CREATE DATABASE boomerang")
                .await
                .unwrap_or_else(|e| panic!("cannot create a database on {admin}: {e}"));
        });
        let url = url_with_database(&instance.admin_url(), "boomerang");
        Cluster { instance, url }
    }

    /// The URL of the cluster's database `boomerang` (as its superuser): the same across
    /// stops and starts.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The PEM file of the certificate a [`Cluster::start_with_tls`] cluster presents, to
    /// trust it by (`PGSSLROOTCERT`).
    pub fn root_cert(&self) -> PathBuf {
        self.instance.data().join(CERT_FILE)
    }

    /// The loopback port it listens on, the same across stops and starts.
    pub fn port(&self) -> u16 {
        self.instance.port
    }

    /// Stops it with a fast shutdown (`pg_ctl stop -m fast`): open transactions are rolled
    /// back, connections closed, and a checkpoint written.
    pub fn stop_fast(&self) {
        self.instance.stop("fast");
    }

    /// Crashes it: SIGKILL to the postmaster and every process it started, at once (it is
    /// stopped first, so that it forks no new one meanwhile). No shutdown, no checkpoint:
    /// the next start recovers from the write-ahead log. Returns once they have all gone.
    pub fn kill(&self) {
        self.instance.kill();
    }

    /// Starts it again, on the same data directory and port, after [`Cluster::stop_fast`]
    /// or [`Cluster::kill`]; returns once it accepts connections (after a crash, once its
    /// recovery is done).
    pub fn start_again(&self) {
        self.instance.start_again();
    }

    /// [`Cluster::stop_fast`], then [`Cluster::start_again`].
    pub fn restart(&self) {
        self.stop_fast();
        self.start_again();
    }

    /// The server's log so far, for a failing test's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.instance.log_path()).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.instance.remove();
    }
}

/// What a cluster is configured with.
struct Settings {
    max_connections: u32,
    shared_buffers: &'static str,
    /// Its database `boomerang` only over TLS.
    tls: bool,
}

/// The test process's own shared cluster: many tests' pools at once.
const SHARED: Settings = Settings {
    max_connections: 500,
    shared_buffers: "128MB",
    tls: false,
};

/// A test's private cluster: small, to start fast.
const PRIVATE: Settings = Settings {
    max_connections: 200,
    shared_buffers: "16MB",
    tls: false,
};

/// A private cluster that takes its database `boomerang` only over TLS.
const PRIVATE_TLS: Settings = Settings {
    tls: true,
    ..PRIVATE
};

/// The server's certificate and key, in its data directory.
const CERT_FILE: &str = "server.crt";
const KEY_FILE: &str = "server.key";

/// One cluster: its directory, its port, and the watchdog that removes it if this process
/// goes first.
struct Instance {
    bin: PathBuf,
    /// The temporary directory: `data/`, `postgres.log`, the Unix socket.
    dir: PathBuf,
    /// Who runs the server, when this process is root's.
    owner: Option<String>,
    port: u16,
    /// The watchdog and the pipe it reads: a line on it means "done, nothing to do"; the
    /// end of it (this process gone) means "stop the cluster and remove its directory".
    watchdog: Option<(Child, ChildStdin)>,
}

impl Instance {
    fn start(settings: &Settings) -> Instance {
        let owner = is_root().then(unprivileged_user);
        let dir = temp_dir(owner.as_deref());
        let mut instance = Instance {
            bin: bin_dir(),
            dir,
            owner,
            port: 0,
            watchdog: None,
        };
        instance.watchdog = Some(instance.spawn_watchdog());
        instance.init(settings);
        // A free port may be taken between finding it and the server binding it: another.
        for attempt in 1.. {
            instance.port = free_port();
            let log_before = instance.log_len();
            let Err(e) = instance.try_start() else { break };
            let port_taken = instance.log_since(log_before).contains("could not bind");
            if !port_taken || attempt == 5 {
                panic!("PostgreSQL did not start: {e}\n{}", instance.log_tail());
            }
        }
        instance
    }

    /// The superuser's URL, on the `postgres` database.
    fn admin_url(&self) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/postgres", self.port)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("postgres.log")
    }

    /// A PostgreSQL program, run as the cluster's owner, from its directory (the test's own
    /// may be one the owner cannot read).
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = match &self.owner {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(path);
                command
            }
            None => Command::new(path),
        };
        command
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            // Only what the arguments say: no PGDATA, PGPORT and such from the environment.
            .env_remove("PGDATA")
            .env_remove("PGPORT")
            .env_remove("PGHOST")
            .env_remove("PGOPTIONS");
        command
    }

    fn init(&self, settings: &Settings) {
        // --no-sync: initdb's own files only; the server fsyncs as configured below.
        let output = self
            .command("initdb")
            .arg("-D")
            .arg(self.data())
            .args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .arg("--no-sync")
            .output()
            .unwrap_or_else(|e| panic!("cannot run initdb from {}: {e}", self.bin.display()));
        if !output.status.success() {
            panic!("initdb failed: {}", describe(&output));
        }
        let conf = format!(
            "\n# A throw-away test cluster (boomerang_postgres::testing).\n\
             listen_addresses = '127.0.0.1'\n\
             unix_socket_directories = '{dir}'\n\
             max_connections = {max_connections}\n\
             shared_buffers = {shared_buffers}\n\
             fsync = on\n\
             synchronous_commit = on\n\
             full_page_writes = on\n\
             # No parallel query: its shared memory is in /dev/shm, small in containers.\n\
             max_parallel_workers_per_gather = 0\n",
            dir = self.dir.display(),
            max_connections = settings.max_connections,
            shared_buffers = settings.shared_buffers,
        );
        OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))
            .and_then(|mut file| file.write_all(conf.as_bytes()))
            .expect("cannot write postgresql.conf");
        if settings.tls {
            self.require_tls();
        }
    }

    /// A certificate for loopback, TLS on, and `boomerang` refused without it.
    fn require_tls(&self) {
        let rcgen::CertifiedKey { cert, signing_key } =
            rcgen::generate_simple_self_signed(["127.0.0.1".to_string(), "localhost".into()])
                .expect("a self-signed certificate");
        self.write_private(CERT_FILE, cert.pem().as_bytes());
        self.write_private(KEY_FILE, signing_key.serialize_pem().as_bytes());
        let conf =
            format!("ssl = on\nssl_cert_file = '{CERT_FILE}'\nssl_key_file = '{KEY_FILE}'\n");
        OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))
            .and_then(|mut file| file.write_all(conf.as_bytes()))
            .expect("cannot write postgresql.conf");
        // The first matching line decides: these go before initdb's.
        let hba = self.data().join("pg_hba.conf");
        let initdb_lines = std::fs::read_to_string(&hba).expect("cannot read pg_hba.conf");
        let lines = format!(
            "hostssl boomerang all 127.0.0.1/32 trust\n\
             hostnossl boomerang all 127.0.0.1/32 reject\n\
             {initdb_lines}"
        );
        std::fs::write(&hba, lines).expect("cannot write pg_hba.conf");
    }

    /// A file in the data directory that only the cluster's owner reads (PostgreSQL
    /// refuses a key that others may read).
    fn write_private(&self, name: &str, contents: &[u8]) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.data().join(name);
        std::fs::write(&path, contents)
            .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)))
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        if let Some(user) = &self.owner {
            give_to(&path, user);
        }
    }

    /// `pg_ctl start` on `self.port`, waiting until it accepts connections.
    fn try_start(&self) -> Result<(), String> {
        let output = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.log_path())
            .args([
                "-o",
                &format!("-p {}", self.port),
                "-w",
                "-t",
                "120",
                "start",
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run pg_ctl: {e}"));
        if output.status.success() {
            Ok(())
        } else {
            Err(describe(&output))
        }
    }

    fn start_again(&self) {
        // After a crash, the killed processes' shared memory may take a moment to go.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log_before = self.log_len();
            match self.try_start() {
                Ok(()) => return,
                Err(e) => {
                    let log = self.log_since(log_before);
                    let transient = log.contains("shared memory block is still in use")
                        || log.contains("lock file") && log.contains("already exists");
                    if !transient || Instant::now() > deadline {
                        panic!(
                            "PostgreSQL did not start again on port {}: {e}\n{}",
                            self.port,
                            self.log_tail()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }

    fn stop(&self, mode: &str) {
        let output = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", mode, "-w", "-t", "120", "stop"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run pg_ctl: {e}"));
        if !output.status.success() {
            panic!(
                "pg_ctl stop -m {mode} failed: {}\n{}",
                describe(&output),
                self.log_tail()
            );
        }
    }

    /// The postmaster's pid, from its lock file, if it has one.
    fn postmaster_pid(&self) -> Option<u32> {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        pid_file.lines().next()?.trim().parse().ok()
    }

    fn kill(&self) {
        let pid = self
            .postmaster_pid()
            .expect("the cluster is not running (no postmaster.pid)");
        // Stopped first, it forks no new process while its children are listed.
        signal("STOP", &[pid]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while process_state(pid).is_some_and(|state| state != 'T') {
            assert!(
                Instant::now() < deadline,
                "the postmaster {pid} did not stop"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut all = children_of(pid);
        all.push(pid);
        signal("KILL", &all);
        // Zombies aside (an init that does not reap them), until none is left.
        let deadline = Instant::now() + Duration::from_secs(30);
        while all
            .iter()
            .any(|&p| process_state(p).is_some_and(|s| s != 'Z' && s != 'X'))
        {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL's processes outlive SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the server (immediate) if it runs, removes the directory, dismisses the watchdog.
    fn remove(&mut self) {
        if self.postmaster_pid().is_some() {
            let _ = self
                .command("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "-t", "60", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some((mut child, mut stdin)) = self.watchdog.take() {
            let _ = stdin.write_all(b"done\n");
            drop(stdin);
            let _ = child.wait();
        }
    }

    /// A process that, when this one ends without having dismissed it (its stdin closes
    /// without a line), stops the cluster (immediate) and removes its directory. Deaf to
    /// the terminal's signals (a Ctrl-C reaches the whole process group), so that it
    /// outlives the test process.
    fn spawn_watchdog(&self) -> (Child, ChildStdin) {
        let script = r#"dir=$1; shift
trap '' INT HUP QUIT TERM
if read -r _; then exit 0; fi
"$@" >/dev/null 2>&1
rm -rf "$dir""#;
        let pg_ctl = self.bin.join("pg_ctl");
        let mut command = Command::new("sh");
        command.arg("-c").arg(script).arg("sh").arg(&self.dir);
        if let Some(user) = &self.owner {
            command.args(["runuser", "-u", user, "--"]);
        }
        command
            .arg(pg_ctl)
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "-t", "60", "stop"])
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // The pipe's end kept here is close-on-exec: no other child holds it open.
        let mut child = command
            .spawn()
            .expect("cannot start the cluster's watchdog");
        let stdin = child.stdin.take().expect("the watchdog's stdin");
        (child, stdin)
    }

    fn log_len(&self) -> u64 {
        std::fs::metadata(self.log_path()).map_or(0, |m| m.len())
    }

    fn log_since(&self, offset: u64) -> String {
        let log = std::fs::read(self.log_path()).unwrap_or_default();
        let from = (offset as usize).min(log.len());
        String::from_utf8_lossy(&log[from..]).into_owned()
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!("server log ({}):\n{tail}", self.log_path().display())
    }
}

/// A table locked against every other session (`ACCESS EXCLUSIVE`, as a `VACUUM FULL` or
/// an `ALTER TABLE` takes it) until [`TableLock::release`]: what the server sees when an
/// operator's maintenance holds its table.
pub struct TableLock {
    client: tokio_postgres::Client,
}

impl TableLock {
    /// Takes the lock on `table` in the database at `url`; returns once it is held.
    pub async fn take(url: &str, table: &str) -> TableLock {
        let client = connect(url).await;
        client
            .batch_execute(&format!(
                "BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"
            ))
            .await
            .unwrap_or_else(|e| panic!("cannot lock {table} on {url}: {e}"));
        TableLock { client }
    }

    /// Ends the transaction that holds the lock.
    pub async fn release(self) {
        self.client
            .batch_execute("ROLLBACK")
            .await
            .expect("the lock's transaction rolled back");
    }
}

/// Runs `sql` (one or more statements) on the database at `url`, as an operator would.
pub async fn run_sql(url: &str, sql: &str) {
    connect(url)
        .await
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("cannot run {sql} on {url}: {e}"));
}

/// Creates `t_<ulid>` on the cluster `admin` is a superuser's URL of; its URL.
async fn create_database(admin: &str) -> String {
    let name = format!("t_{}", ulid::Ulid::new().to_string().to_lowercase());
    let client = connect(admin).await;
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap_or_else(|e| panic!("cannot create database {name} on {admin}: {e}"));
    url_with_database(admin, &name)
}

/// How old a test database must be before a later run drops it: older than any test.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// Drops, once per process, the test databases that earlier runs left on the shared
/// cluster at `admin` (named `t_<ulid>`, older than [`STALE_AFTER`] by their ulid). A
/// long-lived cluster at `BOOMERANG_TEST_DATABASE_URL` would otherwise gather hundreds,
/// and its autovacuum launcher visits each in turn: with 300, a worker starts every
/// 200 ms, and the database's CPU a delivery in a benchmark on that cluster doubled. A
/// database something is connected to is left alone (the drop fails, and is not
/// forced); the benchmarks' own are named `bench_<ulid>` and never dropped here. On a
/// cluster left to gather them, the first test of the next run waits for the drops.
async fn drop_stale_databases(admin: &str) {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let client = connect(admin).await;
    let Ok(rows) = client
        .query(
            "SELECT datname::text FROM pg_database WHERE datname LIKE 't\\_%'",
            &[],
        )
        .await
    else {
        return;
    };
    let cutoff = std::time::SystemTime::now() - STALE_AFTER;
    for row in rows {
        let name: String = row.get(0);
        let made = ulid::Ulid::from_string(&name[2..].to_uppercase()).map(|u| u.datetime());
        if made.is_ok_and(|made| made < cutoff) {
            let _ = client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
                .await;
        }
    }
}

/// A connection to `url`, tried again for up to 30 s (a cluster just started, or busy).
async fn connect(url: &str) -> tokio_postgres::Client {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match tokio_postgres::connect(url, NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                return client;
            }
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("cannot connect to the test cluster at {url}: {e}"),
        }
    }
}

/// `url` with its database (path) replaced by `database`, its query kept.
fn url_with_database(url: &str, database: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        panic!("{url:?} is not a postgres:// URL");
    };
    let (scheme, rest) = url.split_at(scheme_end);
    let query_start = rest.find('?').unwrap_or(rest.len());
    let authority_end = rest[..query_start].find('/').unwrap_or(query_start);
    format!(
        "{scheme}{}/{database}{}",
        &rest[..authority_end],
        &rest[query_start..]
    )
}

/// Runs `future` to completion on a runtime of its own, on a thread of its own (the caller
/// may be inside a runtime, which cannot block on another future).
fn run_async<F: std::future::Future<Output = ()> + Send + 'static>(future: F) {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(future)
    })
    .join()
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
}

/// `initdb`'s directory: `BOOMERANG_TEST_PG_BIN`, or the newest Debian PostgreSQL's.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(PG_BIN_VAR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .max_by_key(|bin| version_of(bin));
    newest.unwrap_or_else(|| {
        panic!(
            "no PostgreSQL server found: set {PG_BIN_VAR}, install Debian's `postgresql` \
             package (apt-get install --no-install-recommends postgresql), or source \
             scripts/postgres.sh, which does and sets {DATABASE_URL_VAR}"
        )
    })
}

/// `/usr/lib/postgresql/9.6/bin` → [9, 6].
fn version_of(bin: &Path) -> Vec<u32> {
    let name = bin
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

fn is_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| id(&["-u"]) == "0")
}

/// Who runs the clusters when the tests run as root: `postgres` (which Debian's package
/// makes), or `nobody`.
fn unprivileged_user() -> String {
    let has_postgres = Command::new("id")
        .args(["-u", "postgres"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if has_postgres { "postgres" } else { "nobody" }.to_string()
}

/// The output of `id ARGS`, trimmed.
fn id(args: &[&str]) -> String {
    let output = Command::new("id")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run id: {e}"));
    assert!(
        output.status.success(),
        "id {args:?}: {}",
        describe(&output)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A new directory for a cluster, `owner`'s if given, readable by it only. As root, under
/// /tmp, which the owner can reach (root's TMPDIR may be somewhere it cannot).
fn temp_dir(owner: Option<&str>) -> PathBuf {
    let parent = match owner {
        Some(_) => PathBuf::from("/tmp"),
        None => std::env::temp_dir(),
    };
    let dir = parent.join(format!(
        "boomerang-pg-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    ));
    std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    if let Some(user) = owner {
        give_to(&dir, user);
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .unwrap_or_else(|e| panic!("cannot set {}'s mode: {e}", dir.display()));
    dir
}

/// Makes `user` the owner of `path`.
fn give_to(path: &Path, user: &str) {
    let uid = id(&["-u", user]).parse().expect("a uid");
    let gid = id(&["-g", user]).parse().expect("a gid");
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .unwrap_or_else(|e| panic!("cannot give {} to {user}: {e}", path.display()));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Sends `signal` (`KILL`, `STOP`) to `pids` (the shell's `kill`: /bin/kill may be absent).
fn signal(signal: &str, pids: &[u32]) {
    // Its status is not looked at: a child may have gone by itself meanwhile.
    Command::new("sh")
        .arg("-c")
        .arg(r#"signal=$1; shift; kill -s "$signal" "$@""#)
        .arg("sh")
        .arg(signal)
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
}

/// A process's state letter (`R`, `S`, `T`, `Z`, ...), `None` if there is no such process.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&child| {
            std::fs::read_to_string(format!("/proc/{child}/stat"))
                .ok()
                .and_then(|stat| {
                    let fields = stat
                        .rsplit_once(')')?
                        .1
                        .split_whitespace()
                        .nth(1)?
                        .to_owned();
                    fields.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

fn describe(output: &Output) -> String {
    format!(
        "{}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A connection of its own listening on the owner notices' channel, and what it hears:
/// for tests that count the notices a change sends.
pub async fn owner_notices(
    url: &str,
) -> (
    tokio_postgres::Client,
    tokio::sync::mpsc::UnboundedReceiver<tokio_postgres::Notification>,
) {
    let (client, heard) = crate::connect::connect_one(&crate::PgSettings::new(url))
        .await
        .expect("a connection to listen on");
    let listen = format!("LISTEN {}", crate::store::OWNER_NOTICES);
    client.batch_execute(&listen).await.expect("listening");
    (client, heard)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn client(url: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
        tokio::spawn(connection);
        client
    }

    #[test]
    fn a_url_gets_another_database_and_keeps_its_query() {
        let cases = [
            (
                "postgres://u@127.0.0.1:5/postgres",
                "postgres://u@127.0.0.1:5/t_1",
            ),
            ("postgres://u@127.0.0.1:5", "postgres://u@127.0.0.1:5/t_1"),
            (
                "postgres://u@h:5/db?sslmode=disable",
                "postgres://u@h:5/t_1?sslmode=disable",
            ),
            (
                "postgresql://h?host=/tmp/x",
                "postgresql://h/t_1?host=/tmp/x",
            ),
        ];
        for (url, expected) in cases {
            assert_eq!(url_with_database(url, "t_1"), expected, "{url}");
        }
    }

    #[tokio::test]
    async fn two_fresh_databases_are_distinct_and_usable() {
        let (a, b) = (fresh_database().await, fresh_database().await);
        assert_ne!(a, b);
        let (a, b) = (client(&a).await, client(&b).await);
        let name = |row: tokio_postgres::Row| row.get::<_, String>(0);
        let a_name = name(a.query_one("SELECT current_database()", &[]).await.unwrap());
        let b_name = name(b.query_one("SELECT current_database()", &[]).await.unwrap());
        assert_ne!(a_name, b_name);
        assert!(a_name.starts_with("t_"), "{a_name}");
        // A table in one is not in the other.
        a.batch_execute("CREATE TABLE only_here (n int); INSERT INTO only_here VALUES (1)")
            .await
            .unwrap();
        let n: i32 = a
            .query_one("SELECT n FROM only_here", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 1);
        let missing = b
            .query_one("SELECT n FROM only_here", &[])
            .await
            .unwrap_err();
        assert_eq!(
            missing.code(),
            Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE),
            "{missing}"
        );
        let fsync: String = a.query_one("SHOW fsync", &[]).await.unwrap().get(0);
        assert_eq!(fsync, "on");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_killed_cluster_starts_again_with_what_was_committed() {
        let started = Instant::now();
        let cluster = Cluster::start();
        let start_took = started.elapsed();
        let port = cluster.port();
        let db = client(&cluster.url()).await;
        db.batch_execute(
            "CREATE TABLE survivors (n int); INSERT INTO survivors SELECT generate_series(1, 100)",
        )
        .await
        .unwrap();
        let fsync: String = db.query_one("SHOW fsync", &[]).await.unwrap().get(0);
        assert_eq!(fsync, "on");

        cluster.kill();
        // Its connections went with it.
        let err = db.query_one("SELECT 1", &[]).await.unwrap_err();
        assert!(err.is_closed() || err.code().is_none(), "{err}");
        assert!(
            tokio_postgres::connect(&cluster.url(), NoTls)
                .await
                .is_err(),
            "a killed cluster takes no connection"
        );

        cluster.start_again();
        assert_eq!(cluster.port(), port);
        let db = client(&cluster.url()).await;
        let n: i64 = db
            .query_one("SELECT count(*) FROM survivors", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 100, "the committed rows survive the crash");
        assert!(
            cluster.log().contains("database system was interrupted"),
            "it recovered from a crash:\n{}",
            cluster.log()
        );

        cluster.restart();
        let db = client(&cluster.url()).await;
        db.batch_execute("INSERT INTO survivors VALUES (101)")
            .await
            .unwrap();
        cluster.stop_fast();
        cluster.start_again();
        let db = client(&cluster.url()).await;
        let n: i64 = db
            .query_one("SELECT count(*) FROM survivors", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 101);

        let dir = cluster.instance.dir.clone();
        drop(cluster);
        assert!(!dir.exists(), "{} is removed", dir.display());
        eprintln!("Cluster::start took {start_took:?}");
    }
}
