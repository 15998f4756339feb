//! End-to-end: `boomerang tasks …` against the real `boomerang serve`, as a newcomer uses
//! it on the machine running the server (the key comes from the data directory).

use std::time::Duration;

use boomerang_api::view::{
    BreakerView, BulkJobView, BulkJobsView, BulkPreviewView, KeyCancelView, PageView, TaskView,
    TemplateView,
};
use boomerang_core::domain::Status;
use boomerang_e2e::{
    callback, run_cli, Backend, Callback, CliRun, Receiver, Reply, Server, ServerOptions,
};
use serde::de::DeserializeOwned;

const WAIT: Duration = Duration::from_secs(40);

struct Cli<'a> {
    server: &'a Server,
    /// The command group: `tasks`, `templates`, `breakers`.
    group: &'static str,
}

impl<'a> Cli<'a> {
    fn new(server: &'a Server, group: &'static str) -> Self {
        Self { server, group }
    }

    /// `boomerang GROUP ARGS` pointed at the server by its URL and data directory only.
    fn run(&self, args: &[&str]) -> CliRun {
        let data_dir = self.server.data_dir.display().to_string();
        let mut all = vec![self.group];
        all.extend(args);
        run_cli(
            &all,
            &[
                ("BOOMERANG_URL", &self.server.base),
                ("BOOMERANG_DATA_DIR", &data_dir),
            ],
        )
    }

    /// Runs a command that must succeed; returns what it printed.
    fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        run.stdout
    }

    /// Runs a command with `--json`; reads what it printed as the API's `T`.
    fn json<T: DeserializeOwned>(&self, args: &[&str]) -> T {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("--json printed {out}: {e}"))
    }
}

fn server() -> Server {
    Server::start(ServerOptions {
        generated_credentials: true,
        ..ServerOptions::on(Backend::Embedded)
    })
}

#[tokio::test]
async fn a_newcomer_registers_watches_inspects_and_cancels_with_commands_only() {
    let rx = Receiver::start(|_, n| Reply::status(if n < 2 { 500 } else { 200 })).await;
    let server = server();
    let cli = Cli::new(&server, "tasks");
    let hook = rx.url("/hook");
    let task: TaskView = cli.json(&[
        "create",
        &hook,
        "--retry",
        "1s",
        "--max-attempts",
        "3",
        "--key",
        "order-1",
        "--metadata",
        "customer=c-9",
        "--body",
        r#"{"order": 1}"#,
        "--header",
        "X-Trace: t-1",
    ]);
    let id = task.id.to_string();
    assert_eq!(task.status, Status::Scheduled);
    assert_eq!(
        task.metadata.get("customer").map(String::as_str),
        Some("c-9")
    );
    assert!(task.header_names.contains(&"X-Trace".to_string()));

    // watch follows it through two failures to the end.
    let watched = tokio::task::spawn_blocking({
        let (base, dir) = (server.base.clone(), server.data_dir.display().to_string());
        let id = id.to_string();
        move || {
            run_cli(
                &["tasks", "watch", &id, "--every", "100ms"],
                &[("BOOMERANG_URL", &base), ("BOOMERANG_DATA_DIR", &dir)],
            )
        }
    })
    .await
    .unwrap();
    assert_eq!(watched.code, 0, "{watched:?}");
    let lines: Vec<&str> = watched
        .stdout
        .lines()
        .filter(|l| l.starts_with("attempt #"))
        .collect();
    assert_eq!(lines.len(), 3, "{}", watched.stdout);
    assert!(
        lines[0].contains("HTTP 500") && lines[0].contains("retrying"),
        "{}",
        lines[0]
    );
    assert!(
        lines[2].contains("HTTP 200") && lines[2].contains("succeeded"),
        "{}",
        lines[2]
    );
    assert!(
        watched.stdout.trim_end().ends_with("succeeded"),
        "{}",
        watched.stdout
    );
    assert_eq!(rx.count("/hook"), 3);

    // get shows the attempts with their lateness; list finds it by key.
    let shown = cli.ok(&["get", &id]);
    assert!(shown.starts_with(&format!("{id}  succeeded")), "{shown}");
    assert!(shown.contains(&format!("POST {hook}")));
    assert!(shown.contains("order-1"));
    assert_eq!(shown.matches(" late ").count(), 3, "{shown}");
    let listed = cli.ok(&["list", "--key", "order-1"]);
    assert!(listed.lines().nth(1).unwrap().starts_with(&id), "{listed}");

    // cancel, and a second cancel refused with the API's detail.
    let later: TaskView = cli.json(&["create", &hook, "--delay", "1h"]);
    let later_id = &later.id.to_string();
    assert!(cli
        .ok(&["cancel", later_id])
        .starts_with(&format!("{later_id}  canceled")));
    let again = cli.run(&["cancel", later_id]);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(
        again.stderr.contains("409") && again.stderr.contains("canceled"),
        "{again:?}"
    );
    assert_eq!(
        cli.run(&["retry", &id]).code,
        1,
        "a succeeded task is not retried"
    );
}

#[tokio::test]
async fn held_tasks_paging_and_failed_tasks_from_the_command_line() {
    let rx = Receiver::start(|path, n| match path {
        "/flaky" if n == 0 => Reply::status(503),
        _ => Reply::status(200),
    })
    .await;
    let server = server();
    let cli = Cli::new(&server, "tasks");

    let held: TaskView = cli.json(&["create", &rx.url("/held"), "--hold", "30s", "--key", "h-1"]);
    assert_eq!(held.status, Status::Held);
    let released = cli.ok(&["release", "--key", "h-1"]);
    assert!(released.starts_with("released 1"), "{released}");
    server.wait_status(&held.id, Status::Succeeded, WAIT).await;

    // A failed task retried by command; the idempotency key registers once.
    let args = [
        "create",
        &rx.url("/flaky"),
        "--max-attempts",
        "1",
        "--idempotency-key",
        "f-1",
    ];
    let failing: TaskView = cli.json(&args);
    let id = &failing.id;
    let repeat: TaskView = cli.json(&args);
    assert_eq!(&repeat.id, id, "a repeat answers the same task");
    server.wait_status(id, Status::Failed, WAIT).await;
    let retried: TaskView = cli.json(&["retry", &id.to_string()]);
    assert_eq!(retried.status, Status::Scheduled);
    server.wait_status(id, Status::Succeeded, WAIT).await;

    for _ in 0..3 {
        cli.json::<TaskView>(&[
            "create",
            &rx.url("/paged"),
            "--key",
            "page",
            "--delay",
            "1h",
        ]);
    }
    let one: PageView = cli.json(&["list", "--key", "page", "--limit", "1"]);
    assert_eq!(one.tasks.len(), 1);
    assert!(one.next_cursor.is_some());
    let all: PageView = cli.json(&["list", "--key", "page", "--limit", "1", "--all"]);
    assert_eq!(all.tasks.len(), 3, "--all follows the cursors");
    let canceled: KeyCancelView = cli.json(&["cancel", "--key", "page"]);
    assert_eq!(canceled.canceled.len(), 3);
    let scheduled: PageView = cli.json(&["list", "--status", "scheduled"]);
    assert!(scheduled.tasks.is_empty());
}

#[tokio::test]
async fn exit_codes_tell_usage_refusal_and_unreachable_apart() {
    let server = server();
    let cli = Cli::new(&server, "tasks");
    let usage = cli.run(&["create"]);
    assert_eq!(usage.code, 2, "{usage:?}");
    let bad_header = cli.run(&["create", "https://example.com/h", "--header", "no-colon"]);
    assert_eq!(bad_header.code, 2, "{bad_header:?}");
    let refused = cli.run(&["create", "https://example.com/h", "--delay", "soon"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("delay"),
        "the problem's detail: {refused:?}"
    );
    // An id is a task id, never a path: this one would otherwise reach the cancel by key.
    let keyed = server
        .register(&callback("https://example.com/h").delay("1h").key("k"))
        .await;
    let sneaky = cli.run(&["cancel", "x/../../tasks?key=k"]);
    assert_eq!(sneaky.code, 2, "{sneaky:?}");
    assert_eq!(server.task(&keyed.id).await.status, Status::Scheduled);
    let unknown = cli.run(&["get", "01JD0000000000000000000000"]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.stderr.contains("404"), "{unknown:?}");

    // A closed port: nothing listens on the one a just-dropped listener had.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = format!("http://127.0.0.1:{port}");
    let dir = server.data_dir.display().to_string();
    let unreachable = run_cli(
        &["tasks", "list"],
        &[("BOOMERANG_URL", &closed), ("BOOMERANG_DATA_DIR", &dir)],
    );
    assert_eq!(unreachable.code, 3, "{unreachable:?}");
    let keyless = run_cli(
        &["tasks", "list"],
        &[
            ("BOOMERANG_URL", &server.base),
            ("BOOMERANG_DATA_DIR", "/nonexistent"),
        ],
    );
    assert_eq!(keyless.code, 2, "{keyless:?}");
    assert!(keyless.stderr.contains("--api-key"), "{keyless:?}");
    let wrong_key = run_cli(
        &["tasks", "list", "--api-key", "bmr_wrong"],
        &[("BOOMERANG_URL", &server.base)],
    );
    assert_eq!(wrong_key.code, 1);
    assert!(wrong_key.stderr.contains("401"), "{wrong_key:?}");
}

#[tokio::test]
async fn templates_and_breakers_from_the_command_line() {
    let rx = Receiver::always(200).await;
    let server = server();
    let (tasks, templates, breakers) = (
        Cli::new(&server, "tasks"),
        Cli::new(&server, "templates"),
        Cli::new(&server, "breakers"),
    );
    let file = server.data_dir.join("billing.json");
    let template =
        serde_json::json!({"url_base": rx.url("/hooks"), "headers": {"x-team": "billing"}});
    std::fs::write(&file, template.to_string()).unwrap();
    let path = file.display().to_string();
    let stored: TemplateView = templates.json(&["put", "billing", &path]);
    assert_eq!(stored.header_names, ["x-team"]);
    let task: TaskView = tasks.json(&["create", "/a", "--template", "billing"]);
    assert_eq!(task.url, rx.url("/hooks/a"));
    server.wait_status(&task.id, Status::Succeeded, WAIT).await;
    assert!(templates.ok(&["list"]).contains("billing"));
    // A bad template is refused in the API's words before anything is sent.
    std::fs::write(&file, r#"{"timeout": "2m"}"#).unwrap();
    let refused = templates.run(&["put", "billing", &path]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("timeout"), "{refused:?}");

    let open: BreakerView = breakers.json(&["open", &rx.url("/")]);
    assert_eq!((open.state.as_str(), open.by_hand), ("open", true));
    let listed = breakers.ok(&["list"]);
    assert!(
        listed.contains(&open.destination) && listed.contains("by hand"),
        "{listed}"
    );
    let closed: BreakerView = breakers.json(&["close", &rx.url("/")]);
    assert_eq!(closed.state, "closed");
    let refused = breakers.run(&["settings", "--failures", "0"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("failures"), "{refused:?}");
    assert!(breakers
        .ok(&["settings", "--failures", "5"])
        .contains("after 5 failed calls"));
}

#[tokio::test]
async fn bulk_actions_from_the_command_line() {
    let rx = Receiver::always(500).await;
    let server = server();
    let (tasks, bulk) = (Cli::new(&server, "tasks"), Cli::new(&server, "bulk"));
    let mut ids = Vec::new();
    for i in 0..3 {
        let url = rx.url(&format!("/o/{i}"));
        let task: TaskView = tasks.json(&["create", &url, "--max-attempts", "1"]);
        ids.push(task.id);
    }
    for id in &ids {
        server.wait_status(id, Status::Failed, WAIT).await;
    }
    let prefix = rx.url("/o/");
    let preview: BulkPreviewView = bulk.json(&["retry", "--url-prefix", &prefix, "--dry-run"]);
    assert_eq!(preview.count, 3);
    let shown = bulk.ok(&["retry", "--url-prefix", &prefix, "--dry-run"]);
    assert!(shown.contains("retry would take 3 tasks"), "{shown}");
    // Waits for the job, printing its progress; the last line is its report.
    let report = bulk.ok(&["retry", "--url-prefix", &prefix, "--wait"]);
    let last = report.lines().last().unwrap_or_default();
    assert!(
        last.contains("finished") && last.contains("retry"),
        "{report}"
    );
    let jobs: BulkJobsView = bulk.json(&["jobs"]);
    assert_eq!(jobs.jobs.len(), 1);
    assert_eq!(jobs.jobs[0].progress.done, 3);
    let one: BulkJobView = bulk.json(&["job", &jobs.jobs[0].id.to_string()]);
    assert_eq!(one.state, "finished");
    for id in &ids {
        wait_attempts(&server, id, 2).await;
    }
    // A filter the API refuses is refused in its words; an empty one needs --all.
    let refused = bulk.run(&["cancel", "--error-class", "dns"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("filter.error_class"), "{refused:?}");
    let refused = bulk.run(&["cancel"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("filter") && refused.stderr.contains("\"all\": true"),
        "{refused:?}"
    );
}

/// Waits until the task has made `n` attempts.
async fn wait_attempts(server: &Server, id: &boomerang_core::domain::TaskId, n: usize) {
    boomerang_e2e::wait_for("the retry", WAIT, || async {
        let made = server.task(id).await.attempts.map_or(0, |a| a.len());
        (made >= n).then_some(())
    })
    .await
}

/// A reader that closes the pipe early (`boomerang openapi | head -1`) ends the command
/// quietly with success, as it ends any Unix tool: no panic on the closed pipe.
#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(boomerang_e2e::binary())
        .arg("openapi")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run boomerang openapi");
    let mut first = [0u8; 16];
    let mut stdout = child.stdout.take().expect("its stdout");
    stdout.read_exact(&mut first).expect("the document begins");
    // The document is far larger than a pipe's buffer: the rest meets a closed pipe.
    drop(stdout);
    let out = child.wait_with_output().expect("it ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `schedules create` takes the task's flags but none of a registration's (a time, a
/// hold, replace, an idempotency key): each occurrence gets its own.
#[test]
fn schedules_create_offers_no_flag_a_schedule_refuses() {
    let help = run_cli(&["schedules", "create", "--help"], &[]);
    assert_eq!(help.code, 0, "{help:?}");
    for flag in ["--every", "--body", "--retry", "--key", "--metadata"] {
        assert!(help.stdout.contains(flag), "{flag}: {}", help.stdout);
    }
    for flag in [
        "--delay",
        "--at ",
        "--hold",
        "--replace",
        "--max-delay",
        "--idempotency-key",
    ] {
        assert!(!help.stdout.contains(flag), "{flag}: {}", help.stdout);
    }
    let refused = run_cli(
        &[
            "schedules",
            "create",
            "https://example.com/h",
            "--every",
            "1h",
            "--delay",
            "5s",
        ],
        &[],
    );
    assert_eq!(refused.code, 2, "a usage error: {refused:?}");
}
