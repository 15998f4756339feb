//! One process owns an embedded data directory: a second `serve` is refused, a crash
//! releases it, and because no other worker can exist, the attempt a crashed process had in
//! flight runs again as soon as the next one starts. A crash during a burst of
//! registrations loses nothing acknowledged and half-writes nothing.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use boomerang_api::request::TaskRequest;
use boomerang_client::{ClientError, ListParams};
use boomerang_core::domain::Status;
use boomerang_e2e::{callback, wait_for, Callback, Receiver, Reply, Server, ServerOptions};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_second_serve_on_the_same_data_dir_is_refused_until_the_first_is_gone() {
    let mut server = Server::start(ServerOptions::default());
    let second = std::process::Command::new(boomerang_e2e::binary())
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(&server.data_dir)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(
        stderr.contains("is in use by another boomerang (pid ")
            && stderr.contains(&server.pid().to_string()),
        "{stderr}"
    );
    // Even a kill -9 releases the directory: the next server starts.
    server.kill9_and_restart();
    let page = server.api().list(&ListParams::default()).await.unwrap();
    assert!(page.tasks.is_empty());
}

#[tokio::test]
async fn an_attempt_in_flight_at_a_crash_runs_again_as_soon_as_the_server_restarts() {
    // Its lease would be 60 s + 30 s: a re-run that waited for it would miss the deadline.
    let mut server = Server::start(ServerOptions {
        lease_margin: "30s",
        ..ServerOptions::default()
    });
    let rx = Receiver::start(|_, n| Reply {
        delay: if n == 0 {
            Duration::from_secs(60)
        } else {
            Duration::ZERO
        },
        ..Reply::status(200)
    })
    .await;
    let task = server
        .register(&callback(rx.url("/slow")).timeout("60s"))
        .await;
    wait_for("the call to be in flight", WAIT, || async {
        (rx.count("/slow") == 1).then_some(())
    })
    .await;
    server.kill9_and_restart();
    let done = server
        .wait_status(&task.id, Status::Succeeded, Duration::from_secs(15))
        .await;
    assert_eq!(rx.count("/slow"), 2, "the same attempt, run again");
    assert_eq!(done.attempts.as_deref().unwrap()[0].number, 1);
}

#[tokio::test]
async fn kill_9_during_a_burst_of_registrations_loses_no_acknowledged_task() {
    let mut server = Server::start(ServerOptions::default());
    let rx = Receiver::always(200).await;
    const TASKS: usize = 1000;
    let body = |i: usize| callback(rx.url(&format!("/t/{i}"))).delay("2s");
    let bodies: Arc<Vec<TaskRequest>> = Arc::new((0..TASKS).map(body).collect());
    let acked: Arc<Mutex<Vec<(usize, boomerang_core::domain::TaskId)>>> = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let (bodies, acked, next, api) =
                (bodies.clone(), acked.clone(), next.clone(), server.api());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= TASKS {
                        return;
                    }
                    match api.create(&bodies[i], Some(&format!("k-{i}"))).await {
                        Ok(answer) if answer.status == 201 => {
                            acked.lock().unwrap().push((i, answer.body.id));
                        }
                        // The server went away: this client stops, as a crashed caller.
                        Err(ClientError::Unreachable(_) | ClientError::Http(_)) => return,
                        _ => {}
                    }
                }
            })
        })
        .collect();
    wait_for("a third of the burst to be acknowledged", WAIT, || async {
        (acked.lock().unwrap().len() >= TASKS / 3).then_some(())
    })
    .await;
    server.kill9_and_restart();
    for c in clients {
        c.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() < TASKS, "the crash came during the burst");

    // Every acknowledged task is there and is delivered.
    let started = Instant::now();
    for (_, id) in &acked {
        let left = WAIT
            .saturating_sub(started.elapsed())
            .max(Duration::from_secs(1));
        server.wait_status(id, Status::Succeeded, left).await;
    }
    // A client that never got its answer resends with its key: one task, never two.
    let acked_index: HashSet<usize> = acked.iter().map(|(i, _)| *i).collect();
    let api = server.api();
    for i in (0..TASKS).filter(|i| !acked_index.contains(i)) {
        let resent = api
            .create(&bodies[i], Some(&format!("k-{i}")))
            .await
            .unwrap_or_else(|e| panic!("resend {i}: {e}"));
        assert!(
            matches!(resent.status, 200 | 201),
            "resend {i}: {}",
            resent.status
        );
    }
    let mut ids = HashSet::new();
    let mut params = ListParams {
        limit: Some(100),
        ..ListParams::default()
    };
    loop {
        let page = api.list(&params).await.unwrap();
        ids.extend(page.tasks.into_iter().map(|t| t.id));
        match page.next_cursor {
            Some(c) => params.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(
        ids.len(),
        TASKS,
        "one task per registration, none half-written"
    );
    wait_for("every callback", WAIT, || async {
        (0..TASKS)
            .all(|i| rx.count(&format!("/t/{i}")) >= 1)
            .then_some(())
    })
    .await;
}
