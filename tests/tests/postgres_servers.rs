//! End-to-end: three `serve --backend postgres` on one database, as a team without AWS
//! runs Boomerang: servers killed mid-burst, the work taken over, a cron that fires once
//! per occurrence, and a flow limit held across the servers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use boomerang_api::request::{FlowRequest, TaskRequest};
use boomerang_api::view::{ScheduleView, TaskView};
use boomerang_client::{ClientError, ListParams};
use boomerang_core::domain::{ScheduleId, Status, TaskId};
use boomerang_e2e::{
    callback, run_cli, wait_for, Backend, Callback, Receiver, Reply, Server, ServerOptions,
};

const WAIT: Duration = Duration::from_secs(120);

/// A server on a database of its own (the first) or on `first`'s, taking over a killed
/// server's work after a 3 s lease.
fn servers(n: usize) -> Vec<Server> {
    servers_with(n, ServerOptions::on(Backend::Postgres))
}

/// The same, with `options`.
fn servers_with(n: usize, mut options: ServerOptions) -> Vec<Server> {
    options
        .extra_args
        .extend(["--server-lease", "3s"].map(String::from));
    let first = Server::start(options);
    let mut all = vec![first];
    for _ in 1..n {
        let another = all[0].another_worker();
        all.push(another);
    }
    all
}

/// 5,000 callbacks registered across three servers while one of them is killed (-9) and
/// started again every 10 s; clients resend with their Idempotency-Key, to another
/// server, until acknowledged. Every callback is called; duplicates are counted.
#[tokio::test]
async fn kill_9_of_one_server_in_three_every_10_s_loses_no_acknowledged_callback() {
    const TASKS: usize = 5000;
    let rx = Receiver::always(200).await;
    let servers = Arc::new(Mutex::new(servers(3)));
    let apis: Vec<_> = servers.lock().unwrap().iter().map(|s| s.api()).collect();
    let apis = Arc::new(Mutex::new(apis));
    let body = |i: usize| callback(rx.url(&format!("/t/{i}"))).delay("3s");
    let bodies: Arc<Vec<TaskRequest>> = Arc::new((0..TASKS).map(body).collect());
    let acked: Arc<Mutex<HashMap<usize, TaskId>>> = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..24)
        .map(|c| {
            let (bodies, acked, next, apis) =
                (bodies.clone(), acked.clone(), next.clone(), apis.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= TASKS {
                        return;
                    }
                    // Resent, with its key, to the next server, until acknowledged.
                    for attempt in 0.. {
                        let api = {
                            let apis = apis.lock().unwrap();
                            apis[(c + i + attempt) % apis.len()].clone()
                        };
                        match api.create(&bodies[i], Some(&format!("k-{i}"))).await {
                            Ok(answer) if matches!(answer.status, 200 | 201) => {
                                acked.lock().unwrap().insert(i, answer.body.id);
                                break;
                            }
                            Ok(_)
                            | Err(
                                ClientError::Unreachable(_)
                                | ClientError::Http(_)
                                | ClientError::Refused { status: 503, .. },
                            ) => tokio::time::sleep(Duration::from_millis(50)).await,
                            Err(e) => panic!("registration {i}: {e}"),
                        }
                        assert!(attempt < 1000, "registration {i} never acknowledged");
                    }
                }
            })
        })
        .collect();
    // Kill one server every 10 s while the burst lasts (at least twice).
    let started = Instant::now();
    let mut kills = 0;
    while kills < 2 || next.load(Ordering::SeqCst) < TASKS {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let victim = kills % 3;
        let base = {
            let mut servers = servers.lock().unwrap();
            servers[victim].kill9_and_restart();
            servers[victim].base.clone()
        };
        apis.lock().unwrap()[victim] =
            boomerang_client::Client::new(&base, "bmr_e2e_test_key").expect("the server's URL");
        kills += 1;
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the burst never ended"
        );
    }
    for c in clients {
        c.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert_eq!(
        acked.len(),
        TASKS,
        "every registration acknowledged in the end"
    );
    wait_for("every callback", Duration::from_secs(180), || async {
        (0..TASKS)
            .all(|i| rx.count(&format!("/t/{i}")) >= 1)
            .then_some(())
    })
    .await;
    // One task per registration, however often it was resent.
    let distinct: HashSet<&TaskId> = acked.values().collect();
    assert_eq!(distinct.len(), TASKS, "a resend made a second task");
    let calls: usize = (0..TASKS).map(|i| rx.count(&format!("/t/{i}"))).sum();
    println!(
        "{TASKS} callbacks across 3 servers, {kills} kills: 0 lost, {} duplicate calls",
        calls - TASKS
    );
}

/// A killed server's due work is taken over by the others within its lease. The repair
/// pass runs every hour: the other server's loader leases the freed row, with no repair
/// pass to find it.
#[tokio::test]
async fn a_killed_servers_due_work_is_called_by_another_within_its_lease() {
    let rx = Receiver::always(200).await;
    let mut all = servers_with(
        2,
        ServerOptions {
            sweep_interval: "1h",
            ..ServerOptions::on(Backend::Postgres)
        },
    );
    // Registered on the first, due in 2 s: the first holds it in its timer.
    let task = all[0]
        .register(&callback(rx.url("/owned")).delay("2s"))
        .await;
    let killed = Instant::now();
    all[0].kill9_and_stay_down();
    let done = all[1].wait_status(&task.id, Status::Succeeded, WAIT).await;
    let took = killed.elapsed();
    assert_eq!(rx.count("/owned"), 1);
    assert!(
        took < Duration::from_secs(30),
        "taken over after {took:?} (lease 3 s)"
    );
    let worker = done.attempts.unwrap_or_default()[0].worker.clone();
    println!("taken over and called {took:?} after the kill, by {worker:?}");
}

/// A backlog found by a server running alone is held as a whole and read without a write
/// per row; a second server that starts during the drain makes the first let it go, and
/// the two share what is left. Every callback is called once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_held_alone_is_shared_once_a_second_server_starts() {
    const TASKS: usize = 3000;
    let rx = Receiver::always(200).await;
    let mut options = ServerOptions::on(Backend::Postgres);
    let small = ["--load-ahead", "1s", "--load-page", "200"];
    options.extra_args.extend(small.map(String::from));
    let mut all = servers_with(1, options);
    // All due on one millisecond 10 s from now, beyond what the loader looks ahead at (1 s)
    // until the stop: nobody holds them when they fall due.
    let due = chrono::Utc::now() + chrono::Duration::seconds(10);
    let seen: Arc<Mutex<HashMap<u16, usize>>> = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let (api, seen, next) = (all[0].api(), seen.clone(), next.clone());
            let (url, at) = (rx.url("/b/"), due.to_rfc3339());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= TASKS {
                        return;
                    }
                    let body = callback(format!("{url}{i}")).fire_at(&at);
                    register_until_acknowledged(&api, &body, &format!("b-{i}"), &seen).await;
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    let (status, _) = all[0].terminate(Duration::from_secs(30)).await;
    assert!(status.success(), "{status:?}");
    assert!(chrono::Utc::now() < due, "registration outlasted the lead");
    // The clock passing the due time, not a condition: the tasks are a backlog then.
    tokio::time::sleep((due - chrono::Utc::now()).to_std().unwrap_or_default()).await;
    all[0].restart();
    wait_for("the server holding the backlog", WAIT, || async {
        all[0]
            .log()
            .contains("holding the backlog alone")
            .then_some(())
    })
    .await;
    let second = all[0].another_worker();
    let api = all[0].api();
    wait_for("every task called", WAIT, || async {
        let pending = ListParams {
            status: Some(Status::Scheduled),
            limit: Some(1),
            ..Default::default()
        };
        let left = api.list(&pending).await.ok()?;
        (left.tasks.is_empty() && rx.received().len() >= TASKS).then_some(())
    })
    .await;
    let mut calls: HashMap<String, usize> = HashMap::new();
    for r in rx.received() {
        *calls.entry(r.path).or_default() += 1;
    }
    assert_eq!(calls.len(), TASKS, "every callback called");
    let twice: Vec<_> = calls.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "called more than once: {twice:?}");
    assert!(
        all[0].log().contains("let the backlog go"),
        "{}",
        all[0].log()
    );
    drop(second);
}

async fn occurrences(server: &Server, schedule: &ScheduleId) -> Vec<TaskView> {
    let params = ListParams {
        limit: Some(100),
        ..Default::default()
    };
    let page = server.api().list(&params).await.unwrap();
    page.tasks
        .into_iter()
        .filter(|t| t.schedule_id.as_ref() == Some(schedule))
        .collect()
}

/// A cron every second, on three servers: each occurrence is called once, by whichever
/// server holds it, never once per server.
#[tokio::test]
async fn a_cron_on_three_servers_fires_once_per_occurrence() {
    let rx = Receiver::always(200).await;
    let all = servers(3);
    let env = [
        ("BOOMERANG_URL", all[1].base.as_str()),
        ("BOOMERANG_API_KEY", all[1].api_key.as_str()),
    ];
    let created = run_cli(
        &[
            "schedules",
            "create",
            &rx.url("/tick"),
            "--cron",
            "* * * * * *",
            "--json",
        ],
        &env,
    );
    assert_eq!(created.code, 0, "{created:?}");
    let schedule: ScheduleView = serde_json::from_str(&created.stdout).unwrap();
    wait_for("eight calls", WAIT, || async {
        (rx.count("/tick") >= 8).then_some(())
    })
    .await;
    let deleted = run_cli(&["schedules", "delete", &schedule.id.to_string()], &env);
    assert_eq!(deleted.code, 0, "{deleted:?}");
    let settled = wait_for("nothing pending after delete", WAIT, || async {
        let all = occurrences(&all[2], &schedule.id).await;
        let pending = all
            .iter()
            .any(|t| matches!(t.status, Status::Scheduled | Status::Delivering));
        (!pending).then_some(all)
    })
    .await;
    let done: Vec<&TaskView> = settled
        .iter()
        .filter(|t| t.status == Status::Succeeded)
        .collect();
    // Each occurrence's task carries its occurrence's key: one task per occurrence.
    let keys: HashSet<Option<String>> = done.iter().map(|t| t.idempotency_key.clone()).collect();
    assert_eq!(keys.len(), done.len(), "an occurrence was made twice");
    assert!(
        done.iter().all(|t| t.attempt == 1),
        "an occurrence was called twice"
    );
    assert_eq!(rx.count("/tick"), done.len(), "one call per occurrence");
}

/// A flow of parallelism 5 across three servers: the receiver never has more than 5 of
/// its calls at once, though every server delivers some.
#[tokio::test]
async fn a_flow_limit_of_5_holds_across_three_servers() {
    let rx = Receiver::start(|_, _| Reply {
        delay: Duration::from_millis(200),
        ..Reply::status(200)
    })
    .await;
    let all = servers(3);
    let flow = || FlowRequest {
        key: Some("partner".into()),
        rate: None,
        period: None,
        parallelism: Some(5),
    };
    let mut ids = Vec::new();
    for n in 0..60 {
        let task = all[n % 3]
            .register(
                &callback(rx.url(&format!("/f/{n}")))
                    .delay("2s")
                    .flow(flow()),
            )
            .await;
        ids.push(task.id);
    }
    let mut workers = HashSet::new();
    for id in &ids {
        let task = all[0].wait_status(id, Status::Succeeded, WAIT).await;
        workers.extend(
            task.attempts
                .unwrap_or_default()
                .into_iter()
                .filter_map(|a| a.worker),
        );
    }
    assert!(
        rx.most_at_once() <= 5,
        "{} calls at once",
        rx.most_at_once()
    );
    assert!(rx.most_at_once() >= 2, "the flow ran one call at a time");
    assert!(
        workers.len() >= 2,
        "one server delivered everything: {workers:?}"
    );
}

/// What a registration answered, and the task if acknowledged.
async fn register_until_acknowledged(
    api: &boomerang_client::Client,
    body: &TaskRequest,
    key: &str,
    seen: &Mutex<HashMap<u16, usize>>,
) -> TaskId {
    for _ in 0..2000 {
        match api.create(body, Some(key)).await {
            Ok(answer) => {
                *seen.lock().unwrap().entry(answer.status).or_default() += 1;
                if matches!(answer.status, 200 | 201) {
                    return answer.body.id;
                }
            }
            Err(ClientError::Refused { status, .. }) => {
                *seen.lock().unwrap().entry(status).or_default() += 1;
            }
            Err(ClientError::Unreachable(_) | ClientError::Http(_)) => {}
            Err(e) => panic!("registration {key}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("registration {key} never acknowledged")
}

/// The database restarted in the middle of a burst of registrations: requests meanwhile
/// are answered 503 (never 500), clients resend, and every acknowledged callback is
/// called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_mid_burst_loses_no_acknowledged_callback() {
    const TASKS: usize = 1500;
    let cluster = Arc::new(
        tokio::task::spawn_blocking(boomerang_postgres::testing::Cluster::start)
            .await
            .unwrap(),
    );
    let rx = Receiver::always(200).await;
    let mut options = ServerOptions::on(Backend::Postgres);
    options.database_url = Some(cluster.url());
    let server = Server::start(options);
    let seen: Arc<Mutex<HashMap<u16, usize>>> = Arc::default();
    let acked: Arc<Mutex<Vec<TaskId>>> = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let (api, seen, acked, next) =
                (server.api(), seen.clone(), acked.clone(), next.clone());
            let url = rx.url("/t/");
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= TASKS {
                        return;
                    }
                    let body = callback(format!("{url}{i}")).delay("3s");
                    let id =
                        register_until_acknowledged(&api, &body, &format!("k-{i}"), &seen).await;
                    acked.lock().unwrap().push(id);
                }
            })
        })
        .collect();
    wait_for("a third of the burst acknowledged", WAIT, || async {
        (acked.lock().unwrap().len() >= TASKS / 3).then_some(())
    })
    .await;
    let restarting = cluster.clone();
    tokio::task::spawn_blocking(move || restarting.restart())
        .await
        .unwrap();
    for c in clients {
        c.await.unwrap();
    }
    wait_for("every callback", WAIT, || async {
        (0..TASKS)
            .all(|i| rx.count(&format!("/t/{i}")) >= 1)
            .then_some(())
    })
    .await;
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.keys().all(|s| matches!(s, 200 | 201 | 503)),
        "answers during the restart: {seen:?}"
    );
    let calls: usize = (0..TASKS).map(|i| rx.count(&format!("/t/{i}"))).sum();
    println!(
        "database restarted mid-burst: {TASKS} acknowledged, 0 lost, {} duplicate calls; answers {seen:?}",
        calls - TASKS
    );
}

async fn readyz(server: &Server) -> u16 {
    match server.request(reqwest::Method::GET, "/readyz").send().await {
        Ok(answer) => answer.status().as_u16(),
        Err(_) => 0,
    }
}

/// Waits until `/readyz` answers `status`; how long that took from `since`.
async fn wait_readyz(server: &Server, status: u16, what: &str, since: Instant) -> Duration {
    wait_for(what, WAIT, || async {
        (readyz(server).await == status).then_some(())
    })
    .await;
    since.elapsed()
}

/// The server's connections to the database dropped, and new ones refused, for 20 s (as
/// a failover or a network partition would): `/readyz` says 503 meanwhile, registrations
/// are answered 503 with Retry-After, and the server comes back by itself, its work
/// intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_database_connections_make_the_server_unready_until_they_come_back() {
    let direct = boomerang_e2e::fresh_database();
    let (head, rest) = direct.split_once('@').expect("a URL with a user");
    let (host_port, database) = rest.split_once('/').expect("a URL with a database");
    let target: std::net::SocketAddr = host_port.parse().expect("an address");
    let proxy = boomerang_e2e::tcp_proxy::TcpProxy::start(target);
    let mut options = ServerOptions::on(Backend::Postgres);
    options.database_url = Some(format!("{head}@{}/{database}", proxy.addr()));
    let server = Server::start(options);
    let rx = Receiver::always(200).await;
    wait_readyz(&server, 200, "ready", Instant::now()).await;
    let before = server
        .register(&callback(rx.url("/before")).delay("25s"))
        .await;

    proxy.cut();
    let cut = Instant::now();
    let unready_after = wait_readyz(&server, 503, "unready", cut).await;
    let refused = server
        .request(reqwest::Method::POST, "/v1/tasks")
        .json(&serde_json::json!({"url": rx.url("/during")}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        refused.status().as_u16(),
        503,
        "a registration while cut off"
    );
    assert!(
        refused.headers().contains_key("retry-after"),
        "503 without Retry-After"
    );
    tokio::time::sleep(Duration::from_secs(20).saturating_sub(cut.elapsed())).await;
    assert_eq!(readyz(&server).await, 503, "ready while still cut off");

    proxy.heal();
    let healed = Instant::now();
    let ready_after = wait_readyz(&server, 200, "ready again", healed).await;
    let after = server.register(&callback(rx.url("/after"))).await;
    server.wait_status(&after.id, Status::Succeeded, WAIT).await;
    server
        .wait_status(&before.id, Status::Succeeded, WAIT)
        .await;
    assert_eq!(
        (rx.count("/before"), rx.count("/after"), rx.count("/during")),
        (1, 1, 0)
    );
    println!(
        "connections cut: unready after {unready_after:?}; healed: ready after {ready_after:?}"
    );
}

/// The tasks table held locked for 8 s by another session (as a `VACUUM FULL` or an
/// `ALTER TABLE` holds it), the server on a pool of 3 and a 2 s statement timeout:
/// registrations meanwhile wait at most about that long and are answered 503 with
/// Retry-After, none half-written, their error logged at most once a second; `/readyz`
/// says 503 (its probe reads the table); once the lock goes, the server is ready again by
/// itself, its work intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_table_times_statements_out_into_503s_until_it_is_released() {
    let url = boomerang_e2e::fresh_database();
    let mut options = ServerOptions::on(Backend::Postgres);
    options.database_url = Some(url.clone());
    options.extra_args = ["--database-pool", "3", "--database-timeout", "2s"]
        .map(String::from)
        .into();
    let server = Server::start(options);
    let rx = Receiver::always(200).await;
    wait_readyz(&server, 200, "ready", Instant::now()).await;
    let before = server
        .register(&callback(rx.url("/before")).delay("15s"))
        .await;

    let lock = boomerang_postgres::testing::TableLock::take(&url, "tasks").await;
    let locked = Instant::now();
    // More registrations at once than the pool has connections.
    let answers = futures_util::future::join_all((0..12).map(|i| {
        server
            .request(reqwest::Method::POST, "/v1/tasks")
            .json(&serde_json::json!({"url": rx.url(&format!("/during/{i}"))}))
            .send()
    }))
    .await;
    let answered_within = locked.elapsed();
    for answer in answers {
        let answer = answer.expect("an answer, not a dropped connection");
        assert_eq!(answer.status().as_u16(), 503, "a registration while locked");
        assert!(
            answer.headers().contains_key("retry-after"),
            "503 without Retry-After"
        );
    }
    let unready_after = wait_readyz(&server, 503, "unready", locked).await;
    tokio::time::sleep(Duration::from_secs(8).saturating_sub(locked.elapsed())).await;

    lock.release().await;
    let released = Instant::now();
    let ready_after = wait_readyz(&server, 200, "ready again", released).await;
    let after = server.register(&callback(rx.url("/after"))).await;
    server.wait_status(&after.id, Status::Succeeded, WAIT).await;
    server
        .wait_status(&before.id, Status::Succeeded, WAIT)
        .await;
    // A refused registration would have been due at once, before both of these.
    let during = rx
        .received()
        .iter()
        .filter(|r| r.path.starts_with("/during"))
        .count();
    assert_eq!((rx.count("/before"), rx.count("/after"), during), (1, 1, 0));
    // The same failure, request after request, is logged at most once a second.
    let log = server.log();
    let logged = log.lines().filter(|l| l.contains("store error")).count();
    assert!(
        (1..=answered_within.as_secs() as usize + 2).contains(&logged),
        "{logged} lines for 12 failures answered within {answered_within:?}:\n{log}"
    );
    println!(
        "tasks locked: 12 registrations answered 503 within {answered_within:?} ({logged} lines logged), unready after {unready_after:?}; released: ready after {ready_after:?}"
    );
}

/// A database that takes the readiness probe's small update but refuses every new row and
/// result (as a full disk does, for writes that need a new page): registrations are
/// answered 503 with Retry-After, `/readyz` says 503 with the database's reason, and both
/// come back once the database takes rows again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_refuses_new_rows_makes_the_server_unready_until_it_takes_them_again() {
    let url = boomerang_e2e::fresh_database();
    let mut options = ServerOptions::on(Backend::Postgres);
    options.database_url = Some(url.clone());
    let server = Server::start(options);
    let rx = Receiver::always(200).await;
    wait_readyz(&server, 200, "ready", Instant::now()).await;

    boomerang_postgres::testing::run_sql(
        &url,
        "ALTER TABLE tasks ADD CONSTRAINT refuse_new_rows CHECK (false) NOT VALID",
    )
    .await;
    let refused = server
        .request(reqwest::Method::POST, "/v1/tasks")
        .json(&serde_json::json!({"url": rx.url("/refused")}))
        .send()
        .await
        .expect("an answer, not a dropped connection");
    assert_eq!(refused.status().as_u16(), 503, "a registration refused");
    assert!(refused.headers().contains_key("retry-after"));
    let unready_after = wait_readyz(&server, 503, "unready", Instant::now()).await;
    let why = server
        .request(reqwest::Method::GET, "/readyz")
        .send()
        .await
        .expect("readyz answers")
        .text()
        .await
        .expect("a body");
    // Which check and what it found, for anyone; the database's own words (here the
    // constraint's name) only in the server's log.
    assert!(
        why.contains("database: the last registrations or results failed"),
        "the failing check: {why}"
    );
    assert!(!why.contains("refuse_new_rows"), "no database error: {why}");
    assert!(
        (server.log().lines()).any(|l| l
            .contains("not ready: database: the last registrations or results failed")
            && l.contains("refuse_new_rows")),
        "readiness logs the database's reason"
    );

    boomerang_postgres::testing::run_sql(&url, "ALTER TABLE tasks DROP CONSTRAINT refuse_new_rows")
        .await;
    let taken = Instant::now();
    wait_for("a registration taken again", WAIT, || async {
        let answer = server
            .request(reqwest::Method::POST, "/v1/tasks")
            .json(&serde_json::json!({"url": rx.url("/after")}))
            .send()
            .await
            .ok()?;
        (answer.status().as_u16() == 201).then_some(())
    })
    .await;
    let ready_after = wait_readyz(&server, 200, "ready again", taken).await;
    wait_for("the callback registered after", WAIT, || async {
        (rx.count("/after") == 1).then_some(())
    })
    .await;
    assert_eq!(rx.count("/refused"), 0, "a refused registration was stored");
    println!(
        "rows refused: unready after {unready_after:?}; taken again: ready after {ready_after:?}"
    );
}

/// The database reached over TLS, its certificate checked: with `sslmode=verify-full` and
/// the certificate's root in `sslrootcert` (as libpq takes it) the server works (the database refuses plain
/// connections); without that root, or without TLS, it will not start, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_over_verified_tls() {
    let cluster = tokio::task::spawn_blocking(boomerang_postgres::testing::Cluster::start_with_tls)
        .await
        .unwrap();
    let root = cluster.root_cert().display().to_string();
    let rx = Receiver::always(200).await;
    let mut options = ServerOptions::on(Backend::Postgres);
    options.database_url = Some(format!(
        "{}?sslmode=verify-full&sslrootcert={root}",
        cluster.url()
    ));
    let server = Server::start(options);
    let task = server.register(&callback(rx.url("/tls"))).await;
    server.wait_status(&task.id, Status::Succeeded, WAIT).await;
    assert_eq!(readyz(&server).await, 200);

    let unverified = tokio::task::spawn_blocking({
        let url = format!("{}?sslmode=verify-full", cluster.url());
        move || start_refused(&url)
    });
    let plain = tokio::task::spawn_blocking({
        let url = format!("{}?sslmode=disable", cluster.url());
        move || start_refused(&url)
    });
    let (unverified, plain) = (unverified.await.unwrap(), plain.await.unwrap());
    assert_ne!(unverified.code, 0, "{unverified:?}");
    assert!(
        unverified.stderr.to_lowercase().contains("certificate"),
        "{unverified:?}"
    );
    assert_ne!(plain.code, 0, "{plain:?}");
    assert!(plain.stderr.contains("no encryption"), "{plain:?}");
}

/// `serve` on the database at `url`, trusting the platform's roots only (the test
/// cluster's own certificate is not among them): what it printed when it stopped.
fn start_refused(url: &str) -> boomerang_e2e::CliRun {
    let args = [
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--backend",
        "postgres",
        "--database-url",
        url,
        "--api-key",
        "a-key-for-a-server-that-never-starts",
    ];
    run_cli(&args, &[("PGSSLROOTCERT", "")])
}
