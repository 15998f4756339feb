//! End-to-end: the disk that holds the server's log fills up while registrations, retries
//! and deliveries go on. Log lines are dropped and counted; no request handler panics (a
//! retry's handler logs, so a failed write reported on stderr would fail it), every
//! request is answered as usual, and every task is delivered. Once space returns, the log
//! goes on.

use std::time::Duration;

use boomerang_core::domain::{Status, TaskId};
use boomerang_e2e::disk::{fill, SmallDisk};
use boomerang_e2e::{callback, wait_for, Backend, Receiver, Reply, Server, ServerOptions};
use reqwest::Method;

const TASKS: usize = 200;
/// Tasks that fail at once (410) before the disk fills, to be retried after.
const GONE: usize = 20;

/// The value of the counter `name` in the server's metrics.
async fn counter(server: &Server, name: &str) -> f64 {
    let text = (server
        .request(Method::GET, "/metrics")
        .send()
        .await
        .unwrap())
    .text()
    .await
    .unwrap();
    (text.lines())
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {name}"))
        .trim()
        .parse()
        .unwrap()
}

/// Registers `n` tasks calling `rx` at `prefix/0`, `prefix/1`, …; their ids.
async fn register_each(server: &Server, rx: &Receiver, prefix: &str, n: usize) -> Vec<TaskId> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let task = callback(rx.url(&format!("{prefix}/{i}")));
        ids.push(server.register(&task).await.id);
    }
    ids
}

#[tokio::test]
async fn a_full_log_disk_drops_log_lines_and_nothing_else() {
    let disk = SmallDisk::mount(4);
    let rx = Receiver::start(|path, n| match path {
        p if p.starts_with("/gone") && n == 0 => Reply::status(410),
        _ => Reply::status(200),
    })
    .await;
    let server = Server::start(ServerOptions {
        log_dir: Some(disk.0.clone()),
        ..ServerOptions::on(Backend::Embedded)
    });
    let dropped = "boomerang_log_writes_dropped_total";
    assert_eq!(counter(&server, dropped).await, 0.0);
    let gone = register_each(&server, &rx, "/gone", GONE).await;
    for id in &gone {
        server
            .wait_status(id, Status::Failed, Duration::from_secs(10))
            .await;
    }
    let ballast = disk.0.join("ballast");
    fill(&ballast);

    for id in &gone {
        let retried = server.api().retry(id).await;
        assert!(retried.is_ok(), "the retry failed: {retried:?}");
    }

    // Each registration and each attempt logs a line, into the full disk.
    let ids = register_each(&server, &rx, "/new", TASKS).await;
    wait_for("every call", Duration::from_secs(60), || async {
        (rx.received().len() >= TASKS + 2 * GONE).then_some(())
    })
    .await;
    for id in &ids {
        server
            .wait_status(id, Status::Succeeded, Duration::from_secs(10))
            .await;
    }
    let lost = counter(&server, dropped).await;
    assert!(lost >= TASKS as f64, "{lost} log writes dropped");
    assert!(!server.log().contains("panicked"), "a panic was logged");

    std::fs::remove_file(&ballast).unwrap();
    let after = server.register(&callback(rx.url("/after"))).await.id;
    wait_for("the log to go on", Duration::from_secs(10), || async {
        server.log().contains(&after.to_string()).then_some(())
    })
    .await;
}
