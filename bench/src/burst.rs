//! Callbacks that fall due together: registered just before their second (fresh) or long
//! before it (stored), on one second or spread over a window (`burst`, `retry`), and a
//! backlog that fell due while the server was stopped (`backlog`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use chrono::{DateTime, DurationRound, Utc};
use serde_json::{json, Value};

use super::backend::{BackendArgs, Snapshot};
use super::capacity::{ServerFigures, SETTLE};
use super::measure::percentiles;
use super::procs::{ReceiverProcess, Server};
use super::receiver::{self, Arrival};
use super::register::{due_after_registering, register_spread};

/// Concurrent keep-alive clients registering, by default.
const CLIENTS: usize = 32;
/// The server's open-file limit, by default.
const OPEN_FILES: u64 = 1024;
/// Callbacks registered a second during a backlog's drain, by default.
const FRESH_RATE: u32 = 20;

#[derive(clap::Args)]
pub struct BurstArgs {
    /// How many tasks.
    #[arg(long, default_value_t = 2000)]
    tasks: usize,
    /// Concurrent keep-alive clients registering them.
    #[arg(long, default_value_t = CLIENTS)]
    clients: usize,
    /// How far ahead of the registration's start the tasks fall due (rounded up to a whole
    /// second). Work due further ahead than the server's `--load-ahead` is stored and
    /// loaded back before its time. Default: 3 s plus 0.5 ms per task.
    #[arg(long, value_parser = humantime::parse_duration)]
    ahead: Option<Duration>,
    /// Spreads the due times evenly over this window, from the due second on (default: all
    /// on one second).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    spread: Duration,
    /// The server's open-file limit (soft and hard).
    #[arg(long, default_value_t = OPEN_FILES)]
    open_files: u64,
    #[command(flatten)]
    backend: BackendArgs,
}

#[derive(clap::Args)]
pub struct BacklogArgs {
    /// How many tasks fall due while the server is stopped.
    #[arg(long, default_value_t = 100_000)]
    tasks: usize,
    #[arg(long, default_value_t = CLIENTS)]
    clients: usize,
    /// How long the server stays stopped; the tasks fall due evenly over this time.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    down: Duration,
    /// Callbacks with no delay registered per second after the restart, while the
    /// backlog drains.
    #[arg(long, default_value_t = FRESH_RATE)]
    fresh_rate: u32,
    /// The server's open-file limit (soft and hard).
    #[arg(long, default_value_t = OPEN_FILES)]
    open_files: u64,
    #[command(flatten)]
    backend: BackendArgs,
}

/// When task `i` of `n` falls due: `first`, plus its share of `spread`.
fn due_of(first: DateTime<Utc>, spread: Duration, i: usize, n: usize) -> DateTime<Utc> {
    let offset_ms = spread.as_millis() as u64 * i as u64 / n.max(1) as u64;
    first + chrono::Duration::milliseconds(offset_ms as i64)
}

/// The index `i` of an arrival at `/{prefix}/{i}`.
fn index_of(arrival: &Arrival, prefix: &str) -> Option<usize> {
    arrival.path.strip_prefix(prefix)?.parse().ok()
}

/// The first whole second at least `ahead` from now.
fn whole_second_after(ahead: Duration) -> Result<DateTime<Utc>> {
    let at = Utc::now() + chrono::Duration::from_std(ahead)?;
    Ok(at.duration_trunc(chrono::Duration::seconds(1))? + chrono::Duration::seconds(1))
}

impl BurstArgs {
    /// 20,000 tasks registered a minute ahead, due on one second: the stored burst.
    pub fn stored(backend: BackendArgs) -> BurstArgs {
        BurstArgs {
            tasks: 20_000,
            clients: CLIENTS,
            ahead: Some(Duration::from_secs(60)),
            spread: Duration::ZERO,
            open_files: OPEN_FILES,
            backend,
        }
    }
}

impl BacklogArgs {
    /// 100,000 tasks falling due over 60 s of downtime.
    pub fn after_downtime(backend: BackendArgs) -> BacklogArgs {
        BacklogArgs {
            tasks: 100_000,
            clients: CLIENTS,
            down: Duration::from_secs(60),
            fresh_rate: FRESH_RATE,
            open_files: OPEN_FILES,
            backend,
        }
    }
}

/// Runs the burst and prints its figures; the deliveries a second over its busy window.
pub async fn burst(args: BurstArgs, fail_first: u32) -> Result<f64> {
    let receiver = ReceiverProcess::start(&receiver::ReceiverArgs {
        fail_first,
        ..Default::default()
    })?;
    let deployment = args.backend.start(&[], Some(args.open_files)).await?;
    let servers = &deployment.servers;
    let before = deployment.snapshot()?;
    let first_due = match args.ahead {
        Some(ahead) => whole_second_after(ahead)?,
        None => due_after_registering(args.tasks)?,
    };
    let (n, spread) = (args.tasks, args.spread);
    let retry = json!({"schedule": ["1s"], "max_attempts": fail_first + 1});
    let url = receiver.url.clone();
    let started = Instant::now();
    let finished = register_spread(servers, n, args.clients, move |i| {
        let due = due_of(first_due, spread, i, n);
        json!({"url": format!("{url}/t/{i}"), "fire_at": due.to_rfc3339(), "retry": retry})
    })
    .await?;
    let took = finished.iter().max().copied().unwrap_or(started) - started;
    // Work due beyond the load-ahead is leased after this: what follows is delivery's.
    let registered = deployment.snapshot()?;
    if Utc::now() > first_due {
        println!("warning: registration outlasted the lead; lateness includes the overrun");
    }
    // Just before the due second, with the work leased and loaded: what follows is the
    // burst's own, as the backlog's drain is from its restart.
    let armed = match (first_due - Utc::now() - chrono::Duration::milliseconds(300)).to_std() {
        Ok(wait) if args.ahead.is_some() => {
            tokio::time::sleep(wait).await;
            Some(deployment.snapshot()?)
        }
        _ => None,
    };
    let want = n * (fail_first as usize + 1);
    let patience = Duration::from_secs(120) + spread + Duration::from_millis(n as u64 / 2);
    let arrivals = receiver.wait_for(want, patience).await?;
    let after = deployment.snapshot()?;
    let figures = ServerFigures::settled(servers, n, SETTLE).await?;

    let firsts: Vec<(usize, i64)> = arrivals
        .iter()
        .filter(|a| a.attempt == 1)
        .filter_map(|a| Some((index_of(a, "/t/")?, a.at_ms)))
        .collect();
    let lateness: Vec<i64> = firsts
        .iter()
        .map(|(i, at)| at - due_of(first_due, spread, *i, n).timestamp_millis())
        .collect();
    let times = firsts.iter().map(|(_, at)| *at);
    let window = (times.clone().max().unwrap_or(0) - times.min().unwrap_or(0)).max(1);
    println!(
        "mode:              {}",
        if fail_first > 0 { "retry" } else { "burst" }
    );
    deployment.print_header();
    let due_when = match args.ahead {
        Some(ahead) => format!("due {} ahead", humantime::format_duration(ahead)),
        None => "due a few seconds ahead".to_string(),
    };
    let spread_over = match spread.is_zero() {
        true => "on one second".to_string(),
        false => format!("spread over {}", humantime::format_duration(spread)),
    };
    println!(
        "tasks:             {n} {due_when}, {spread_over} ({} clients, keep-alive; open-file limit {})",
        args.clients, args.open_files
    );
    println!(
        "registration:      {:.0}/s ({:.2} s)",
        n as f64 / took.as_secs_f64(),
        took.as_secs_f64()
    );
    let rate = firsts.len() as f64 * 1000.0 / window as f64;
    println!("deliveries:        {rate:.0}/s over the busy window of {window} ms");
    println!("lateness (ms):     {}", percentiles(&lateness));
    if fail_first > 0 {
        let gaps = receiver::gaps(&arrivals);
        println!("retry gap (ms):    {}", percentiles(&gaps));
        let finals = final_lateness(&servers[0], &receiver, fail_first + 1).await?;
        println!("final success lateness (ms): {}", percentiles(&finals));
    }
    deployment.print_usage(&before, &after);
    if args.ahead.is_some() {
        deployment.print_cpu_per_delivery("CPU a delivery", &registered, &after, arrivals.len());
    }
    match &armed {
        Some(armed) => {
            let label = "  from due second";
            deployment.print_cpu_per_delivery(label, armed, &after, arrivals.len());
        }
        None if args.ahead.is_some() => {
            println!("  from due second: not measured (registration outlasted the lead)")
        }
        None => {}
    }
    figures.print(arrivals.len());
    Ok(rate)
}

/// Runs the backlog and prints its figures; the drain a second over its busy window.
pub async fn backlog(args: BacklogArgs) -> Result<f64> {
    let receiver = ReceiverProcess::start(&receiver::ReceiverArgs::default())?;
    let mut deployment = args.backend.start(&[], Some(args.open_files)).await?;
    // Registration must end before the first task falls due (0.2 ms a task is 5,000/s).
    let lead = Duration::from_secs(3) + Duration::from_micros(args.tasks as u64 * 200);
    let first_due = whole_second_after(lead)?;
    let (n, spread) = (args.tasks, args.down);
    let url = receiver.url.clone();
    register_spread(&deployment.servers, n, args.clients, move |i| {
        let due = due_of(first_due, spread, i, n);
        json!({"url": format!("{url}/t/{i}"), "fire_at": due.to_rfc3339()})
    })
    .await?;
    deployment.stop_all()?;
    let early = receiver.count().await?;
    if early > 0 {
        println!("warning: {early} tasks were delivered before the server stopped");
    }
    let back_at = first_due + chrono::Duration::from_std(spread)?;
    if let Ok(wait) = (back_at - Utc::now()).to_std() {
        tokio::time::sleep(wait).await;
    }
    let database_before = deployment.database_cpu();
    let restarted = Instant::now();
    let restarted_ms = Utc::now().timestamp_millis();
    let ready = deployment.start_all_again()?;
    // The servers are new processes: their CPU counts from their start.
    let before = Snapshot::at_start(deployment.servers.len(), database_before);
    let servers = &deployment.servers;

    let fresh = FreshCallbacks::start(servers, &receiver.url, args.fresh_rate);
    let patience = Duration::from_secs(120) + Duration::from_millis(n as u64);
    let deadline = Instant::now() + patience;
    while receiver.count().await? < n + fresh.registered() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the backlog did not drain in {patience:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let sent = fresh.stop().await?;
    let arrivals = receiver.wait_for(n + sent.len(), patience).await?;
    let drained = restarted.elapsed();
    let after = deployment.snapshot()?;
    let figures = ServerFigures::settled(servers, n + sent.len(), SETTLE).await?;

    let mut backlog: Vec<(usize, i64)> = arrivals
        .iter()
        .filter_map(|a| Some((index_of(a, "/t/")?, a.at_ms)))
        .collect();
    backlog.sort_by_key(|(_, at)| *at);
    let due_ms = |i: usize| due_of(first_due, spread, i, n).timestamp_millis();
    let (first, last) = (backlog[0].1, backlog[backlog.len() - 1].1);
    let window = (last - first).max(1);
    // How far behind a task already delivered each task's due time was: 0 throughout
    // when the backlog went out strictly oldest first.
    let mut newest_seen = i64::MIN;
    let inversions: Vec<i64> = backlog
        .iter()
        .map(|(i, _)| {
            newest_seen = newest_seen.max(due_ms(*i));
            newest_seen - due_ms(*i)
        })
        .collect();
    let fresh_lateness: Vec<i64> = arrivals
        .iter()
        .filter_map(|a| Some((index_of(a, "/f/")?, a.at_ms)))
        .filter_map(|(j, at)| Some(at - sent.get(j)?))
        .collect();

    println!("mode:              backlog");
    deployment.print_header();
    println!(
        "tasks:             {n} fell due evenly over the {} the server was stopped (open-file limit {})",
        humantime::format_duration(spread),
        args.open_files
    );
    let ready_ms: Vec<String> = ready.iter().map(|r| r.as_millis().to_string()).collect();
    println!(
        "restart ready in:  {} ms{}",
        ready_ms.join(" + "),
        match ready.len() {
            1 => String::new(),
            _ => " (one server after the other)".to_string(),
        }
    );
    let rate = n as f64 * 1000.0 / window as f64;
    println!(
        "drain:             {rate:.0}/s over the busy window of {window} ms; first callback {} ms \
         after the restart began, last {} ms",
        first - restarted_ms,
        last - restarted_ms
    );
    println!(
        "drain by tenth:    {} /s",
        by_tenth(&backlog, first, window)
    );
    println!(
        "order:             a task went out at most {} ms of due time behind one due later \
         (p99 {} ms)",
        inversions.iter().max().unwrap_or(&0),
        nth_percentile(&inversions, 0.99)
    );
    println!(
        "new callbacks:     {} registered with no delay during the drain ({}/s); lateness (ms): {}",
        sent.len(),
        args.fresh_rate,
        percentiles(&fresh_lateness)
    );
    println!(
        "server:            everything delivered {:.1} s after the restart began; since the \
         restart:",
        drained.as_secs_f64()
    );
    deployment.print_usage(&before, &after);
    deployment.print_cpu_per_delivery("CPU a delivery", &before, &after, arrivals.len());
    figures.print(arrivals.len());
    Ok(rate)
}

/// The delivery rate in each tenth of the busy window from `first`: a slow start or a
/// long tail shows here, where the window's average hides it.
fn by_tenth(arrivals: &[(usize, i64)], first: i64, window: i64) -> String {
    let mut counts = [0usize; 10];
    for (_, at) in arrivals {
        counts[(((at - first) * 10 / window) as usize).min(9)] += 1;
    }
    let tenth_s = window as f64 / 10_000.0;
    let rates: Vec<String> = counts
        .iter()
        .map(|c| format!("{:.0}", *c as f64 / tenth_s))
        .collect();
    rates.join(" ")
}

fn nth_percentile(values: &[i64], p: f64) -> i64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.get(((v.len().max(1) - 1) as f64 * p).round() as usize)
        .copied()
        .unwrap_or(0)
}

/// Registers a callback with no delay to `/f/{j}` `rate` times a second, until stopped;
/// keeps when each registration was sent.
struct FreshCallbacks {
    sent: Arc<Mutex<Vec<i64>>>,
    count: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Result<()>>,
}

impl FreshCallbacks {
    /// Registration `j` goes to server `j % servers.len()`.
    fn start(servers: &[Server], receiver: &str, rate: u32) -> Self {
        let sent: Arc<Mutex<Vec<i64>>> = Arc::default();
        let (count, stop): (Arc<AtomicUsize>, Arc<AtomicBool>) = (Arc::default(), Arc::default());
        let (s, c, halt) = (Arc::clone(&sent), Arc::clone(&count), Arc::clone(&stop));
        let urls: Vec<String> = servers
            .iter()
            .map(|s| format!("{}/v1/tasks", s.base))
            .collect();
        let key = servers[0].api_key.clone();
        let receiver = receiver.to_string();
        let period = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
        let task = tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut ticks = tokio::time::interval(period);
            for j in 0.. {
                ticks.tick().await;
                if halt.load(Ordering::SeqCst) {
                    return Ok(());
                }
                let at = Utc::now().timestamp_millis();
                let body = json!({"url": format!("{receiver}/f/{j}")});
                let url = &urls[j % urls.len()];
                let res = http.post(url).bearer_auth(&key).json(&body).send().await?;
                anyhow::ensure!(
                    res.status().as_u16() == 201,
                    "fresh registration answered {}",
                    res.status()
                );
                s.lock().expect("fresh lock").push(at);
                c.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        });
        Self {
            sent,
            count,
            stop,
            task,
        }
    }

    fn registered(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Stops registering; when each registration was sent (ms), by `j`.
    async fn stop(self) -> Result<Vec<i64>> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await??;
        let sent = self.sent.lock().expect("fresh lock").clone();
        Ok(sent)
    }
}

/// The recorded lateness of each task's final attempt, from the task's attempt log.
async fn final_lateness(
    server: &Server,
    receiver: &ReceiverProcess,
    attempt: u32,
) -> Result<Vec<i64>> {
    let http = reqwest::Client::new();
    let mut out = Vec::new();
    for id in receiver.task_ids().await? {
        let task: Value = http
            .get(format!("{}/v1/tasks/{id}", server.base))
            .bearer_auth(&server.api_key)
            .send()
            .await?
            .json()
            .await?;
        let last = task["attempts"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["number"] == attempt));
        if let Some(ms) = last.and_then(|a| a["lateness_ms"].as_i64()) {
            out.push(ms);
        }
    }
    Ok(out)
}
