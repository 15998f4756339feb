//! Registering a benchmark's tasks: many clients at once, all due on one second after.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use chrono::{DateTime, DurationRound, Utc};
use serde_json::Value;

use super::procs::Server;

/// Registers `count` tasks from `clients` concurrent keep-alive clients, over the servers
/// sharing one store (client `c` registers with server `c % servers.len()`); `task(i)` is
/// the i-th body. Returns when each registration finished, in order of `i`.
pub async fn register_spread(
    servers: &[Server],
    count: usize,
    clients: usize,
    task: impl Fn(usize) -> Value + Send + Sync + 'static,
) -> Result<Vec<Instant>> {
    anyhow::ensure!(!servers.is_empty(), "no server to register with");
    let task = std::sync::Arc::new(task);
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()?;
    let mut handles = Vec::new();
    for c in 0..clients {
        let (task, next, http) = (task.clone(), next.clone(), http.clone());
        let server = &servers[c % servers.len()];
        let (url, key) = (format!("{}/v1/tasks", server.base), server.api_key.clone());
        handles.push(tokio::spawn(async move {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= count {
                    return Ok::<_, anyhow::Error>(done);
                }
                let res = http
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&task(i))
                    .send()
                    .await?;
                if res.status().as_u16() != 201 {
                    bail!("registration {i} answered {}", res.status());
                }
                res.bytes().await?;
                done.push((i, Instant::now()));
            }
        }));
    }
    let mut finished = vec![Instant::now(); count];
    for h in handles {
        for (i, at) in h.await?? {
            finished[i] = at;
        }
    }
    Ok(finished)
}

/// A whole second far enough ahead for `tasks` registrations to finish before it.
pub fn due_after_registering(tasks: usize) -> Result<DateTime<Utc>> {
    let lead = Duration::from_secs(3) + Duration::from_millis(tasks as u64 / 2);
    Ok(
        (Utc::now() + lead).duration_trunc(chrono::Duration::seconds(1))?
            + chrono::Duration::seconds(1),
    )
}
