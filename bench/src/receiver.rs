//! The benchmark's receiver: records when each attempt arrived, answers 500 to the first
//! `fail_first` attempts of each task and 200 after, and reports what it saw.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::get;
use axum::{Json, Router};
use boomerang_webhook::client::HEADER_ATTEMPT;
use boomerang_webhook::signing::HEADER_ID;
use serde_json::{json, Value};

use super::procs::Arrival;

#[derive(Default)]
struct Seen {
    arrivals: Vec<(String, u32, i64)>,
    tasks: BTreeSet<String>,
}

pub async fn run(fail_first: u32, hang_first_ms: u64) -> Result<()> {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let (a, t, r) = (seen.clone(), seen.clone(), seen);
    let app = Router::new()
        .route(
            "/__arrivals",
            get(move || async move { Json(arrivals(&a)) }),
        )
        .route("/__tasks", get(move || async move { Json(tasks(&t)) }))
        .fallback(move |uri: Uri, headers: HeaderMap| async move {
            let header = |n: &str| {
                headers
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string()
            };
            let attempt: u32 = header(HEADER_ATTEMPT).parse().unwrap_or(0);
            let now = chrono::Utc::now().timestamp_millis();
            let first = {
                let mut seen = r.lock().expect("receiver lock");
                let path = uri.path().to_string();
                let first = hang_first_ms > 0 && !seen.arrivals.iter().any(|(p, _, _)| *p == path);
                seen.arrivals.push((path, attempt, now));
                seen.tasks.insert(header(HEADER_ID));
                first
            };
            if first && hang_first_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(hang_first_ms)).await;
            }
            if attempt <= fail_first {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::OK
            }
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("receiver on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

fn arrivals(seen: &Mutex<Seen>) -> Value {
    let seen = seen.lock().expect("receiver lock");
    let list: Vec<Value> = seen
        .arrivals
        .iter()
        .map(|(path, attempt, at_ms)| json!({"path": path, "attempt": attempt, "at_ms": at_ms}))
        .collect();
    Value::Array(list)
}

fn tasks(seen: &Mutex<Seen>) -> Value {
    json!(seen.lock().expect("receiver lock").tasks)
}

/// The gaps between consecutive attempts of each path, in milliseconds.
pub fn gaps(arrivals: &[Arrival]) -> Vec<i64> {
    let mut by_path: HashMap<&str, Vec<(u32, i64)>> = HashMap::new();
    for a in arrivals {
        by_path
            .entry(&a.path)
            .or_default()
            .push((a.attempt, a.at_ms));
    }
    by_path
        .values_mut()
        .flat_map(|v| {
            v.sort_unstable();
            v.windows(2).map(|w| w[1].1 - w[0].1).collect::<Vec<_>>()
        })
        .collect()
}
