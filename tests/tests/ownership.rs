//! One process owns an embedded data directory: a second `serve` is refused, a crash
//! releases it, and because no other worker can exist, the attempt a crashed process had in
//! flight runs again as soon as the next one starts. A crash during a burst of
//! registrations loses nothing acknowledged and half-writes nothing.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use boomerang_e2e::{wait_for, Receiver, Reply, Server, ServerOptions};
use serde_json::{json, Value};

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
    let (status, _) = server.get_json("/v1/tasks").await;
    assert_eq!(status, 200);
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
    let (status, task) = server
        .register(json!({"url": rx.url("/slow"), "timeout": "60s"}))
        .await;
    assert_eq!(status, 201, "{task}");
    wait_for("the call to be in flight", WAIT, || async {
        (rx.count("/slow") == 1).then_some(())
    })
    .await;
    server.kill9_and_restart();
    let id = task["id"].as_str().unwrap();
    let done = server
        .wait_status(id, "succeeded", Duration::from_secs(15))
        .await;
    assert_eq!(rx.count("/slow"), 2, "the same attempt, run again");
    assert_eq!(done["attempts"][0]["number"], 1);
}

#[tokio::test]
async fn kill_9_during_a_burst_of_registrations_loses_no_acknowledged_task() {
    let mut server = Server::start(ServerOptions::default());
    let rx = Receiver::always(200).await;
    const TASKS: usize = 1000;
    let body = |i: usize| json!({"url": rx.url(&format!("/t/{i}")), "delay": "2s"});
    let bodies: Arc<Vec<Value>> = Arc::new((0..TASKS).map(body).collect());
    let acked: Arc<Mutex<Vec<(usize, String)>>> = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let http = reqwest::Client::new();
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let (bodies, acked, next, http) =
                (bodies.clone(), acked.clone(), next.clone(), http.clone());
            let (url, key) = (format!("{}/v1/tasks", server.base), server.api_key.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= TASKS {
                        return;
                    }
                    let sent = http
                        .post(&url)
                        .bearer_auth(&key)
                        .header("Idempotency-Key", format!("k-{i}"))
                        .json(&bodies[i])
                        .send()
                        .await;
                    let Ok(res) = sent else { return };
                    if res.status() == 201 {
                        if let Ok(task) = res.json::<Value>().await {
                            let id = task["id"].as_str().unwrap_or_default().to_string();
                            acked.lock().unwrap().push((i, id));
                        }
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
        server.wait_status(id, "succeeded", left).await;
    }
    // A client that never got its answer resends with its key: one task, never two.
    let acked_index: HashSet<usize> = acked.iter().map(|(i, _)| *i).collect();
    for i in (0..TASKS).filter(|i| !acked_index.contains(i)) {
        let res = server
            .request(reqwest::Method::POST, "/v1/tasks")
            .header("Idempotency-Key", format!("k-{i}"))
            .json(&bodies[i])
            .send()
            .await
            .unwrap();
        assert!(
            matches!(res.status().as_u16(), 200 | 201),
            "resend {i}: {}",
            res.status()
        );
    }
    let mut ids = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/tasks?limit=100&cursor={c}"),
            None => "/v1/tasks?limit=100".to_string(),
        };
        let (_, page) = server.get_json(&path).await;
        for t in page["tasks"].as_array().unwrap() {
            ids.insert(t["id"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
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
