//! End-to-end: ordered delivery per key, on both backends (on AWS with two workers
//! delivering from the same queues). 1,000 tasks over 10 order keys, registered with
//! random delays and a receiver failing at random, arrive in registration order per key,
//! with no two calls of one key overlapping (checked at the receiver). A key blocked by a
//! task that failed for good goes on when it is retried or canceled; one that asked to be
//! skipped lets its key go on. Keys are listed with their head and backlog; bad order
//! settings are refused naming the field.

use std::collections::BTreeMap;
use std::time::Duration;

use boomerang_api::request::{BatchRequest, TaskRequest};
use boomerang_api::view::TaskView;
use boomerang_core::domain::{OnHeadFailure, Status, TaskId};
use boomerang_e2e::{
    callback, on_every_backend, schedule_max, wait_for, Backend, Callback, Received, Receiver,
    Reply, Server, ServerOptions,
};
use reqwest::Method;
use serde_json::json;

on_every_backend!(
    tasks_over_ten_keys_arrive_in_order_one_at_a_time,
    a_blocked_key_goes_on_when_its_head_is_retried_or_canceled_and_a_skipped_head_lets_it_go,
);

const KEYS: usize = 10;

/// Tasks over the keys, on both backends.
const TASKS: usize = 1_000;
/// How long the receiver takes to answer each call.
const ANSWER: Duration = Duration::from_millis(20);
const WAIT: Duration = Duration::from_secs(300);

/// Whether call number `before` of `path` fails: about one in five, from a hash of both
/// (the same run after run), and never a task's fourth call or later.
fn fails(path: &str, before: usize) -> bool {
    let hash = path
        .bytes()
        .chain((before as u64).to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    before < 3 && hash % 5 == 0
}

fn path(key: usize, index: usize) -> String {
    format!("/k{key}/{index}")
}

/// The (key, index) a call's path names.
fn parse(path: &str) -> (usize, usize) {
    let (key, index) = path.trim_start_matches("/k").split_once('/').unwrap();
    (key.parse().unwrap(), index.parse().unwrap())
}

fn ordered(url: String, key: &str) -> TaskRequest {
    TaskRequest {
        order_key: Some(key.to_string()),
        ..callback(url).retry(schedule_max(&["1s"], 10))
    }
}

async fn tasks_over_ten_keys_arrive_in_order_one_at_a_time(backend: Backend) {
    let rx = Receiver::start(|path, before| Reply {
        delay: ANSWER,
        ..Reply::status(if fails(path, before) { 500 } else { 200 })
    })
    .await;
    let server = Server::start(ServerOptions::on(backend));
    // Where servers can share the work, two do.
    let _second = (backend != Backend::Embedded).then(|| server.another_worker());
    // Task i is the (i / KEYS)-th of key i % KEYS, due as events of a key come, a key's
    // next every 150 ms or so, with up to a second of jitter: a younger task is often due
    // before its elder.
    let mut rng = 17u64;
    for chunk in (0..TASKS).collect::<Vec<_>>().chunks(100) {
        let tasks = (chunk.iter())
            .map(|&i| {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let delay = format!("{}ms", (i / KEYS) * 150 + ((rng >> 33) % 1_000) as usize);
                ordered(
                    rx.url(&path(i % KEYS, i / KEYS)),
                    &format!("key-{}", i % KEYS),
                )
                .delay(&delay)
            })
            .collect();
        let batch = server
            .api()
            .create_batch(&BatchRequest { tasks })
            .await
            .unwrap();
        assert!(batch.tasks.iter().all(|t| t.status == 201));
    }

    let calls = wait_for("every task succeeded", WAIT, || async {
        let calls = rx.received();
        let succeeded = (calls.iter())
            .filter(|c| !fails(&c.path, count_before(&calls, c)))
            .count();
        (succeeded >= TASKS).then_some(calls)
    })
    .await;
    let mut by_key: BTreeMap<usize, Vec<&Received>> = BTreeMap::new();
    for call in &calls {
        by_key.entry(parse(&call.path).0).or_default().push(call);
    }
    assert_eq!(by_key.len(), KEYS);
    for (key, mut calls) in by_key {
        calls.sort_by_key(|c| c.at);
        // One at a time: each call arrives after the one before it was answered.
        for pair in calls.windows(2) {
            let gap = pair[1].at.duration_since(pair[0].at);
            assert!(
                gap >= ANSWER,
                "key {key}: {} and {} overlap ({gap:?} apart)",
                pair[0].path,
                pair[1].path
            );
        }
        // In registration order: a task is called only once its elder has succeeded.
        let indexes: Vec<usize> = calls.iter().map(|c| parse(&c.path).1).collect();
        assert!(
            indexes.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1),
            "key {key} out of order: {indexes:?}"
        );
        assert_eq!(indexes.first(), Some(&0));
        assert_eq!(indexes.last(), Some(&(TASKS / KEYS - 1)));
    }
    // Every place given up once its task's success is written.
    wait_for("every key's line empty", WAIT, || async {
        let keys = server.api().order_keys(None, Some(100)).await.ok()?;
        let empty = keys.keys.iter().all(|k| k.backlog == 0 && k.head.is_none());
        (keys.keys.len() == KEYS && empty).then_some(())
    })
    .await;
}

/// How many calls of `call`'s path came before it.
fn count_before(calls: &[Received], call: &Received) -> usize {
    (calls.iter())
        .filter(|c| c.path == call.path && c.at < call.at)
        .count()
}

async fn register(server: &Server, task: TaskRequest) -> TaskView {
    server.api().create(&task, None).await.unwrap().body
}

async fn wait_status(server: &Server, id: &TaskId, status: Status) {
    wait_for(
        &format!("{id} {status:?}"),
        Duration::from_secs(60),
        || async {
            let task = server.api().get(id).await.ok()?;
            (task.status == status).then_some(())
        },
    )
    .await
}

async fn a_blocked_key_goes_on_when_its_head_is_retried_or_canceled_and_a_skipped_head_lets_it_go(
    backend: Backend,
) {
    // `/gone…` answers 410 (fails at once) until a call of it has failed; then 200.
    let rx = Receiver::start(|path, before| {
        Reply::status(if path.starts_with("/gone") && before == 0 {
            410
        } else {
            200
        })
    })
    .await;
    let server = Server::start(ServerOptions::on(backend));

    // Retried: the head fails, its younger waits; the retried head goes, then the younger.
    let head = register(&server, ordered(rx.url("/gone/retried"), "retried")).await;
    let younger = register(&server, ordered(rx.url("/after/retried"), "retried")).await;
    wait_status(&server, &head.id, Status::Failed).await;
    let key = server.api().order_key("retried").await.unwrap();
    let blocking = key.head.as_ref().unwrap();
    assert_eq!(
        (blocking.task_id, blocking.blocked, key.backlog),
        (head.id, true, 2)
    );
    assert_eq!(
        rx.count("/after/retried"),
        0,
        "blocked behind its failed elder"
    );
    server.api().retry(&head.id).await.unwrap();
    wait_status(&server, &younger.id, Status::Succeeded).await;
    let order: Vec<String> = (rx.received().into_iter())
        .filter(|c| c.path.ends_with("/retried"))
        .map(|c| c.path)
        .collect();
    assert_eq!(order, ["/gone/retried", "/gone/retried", "/after/retried"]);

    // Canceled: the failed head is canceled, and its younger goes.
    let head = register(&server, ordered(rx.url("/gone/canceled"), "canceled")).await;
    let younger = register(&server, ordered(rx.url("/after/canceled"), "canceled")).await;
    wait_status(&server, &head.id, Status::Failed).await;
    assert_eq!(rx.count("/after/canceled"), 0);
    let canceled = server.api().cancel(&head.id).await.unwrap();
    assert_eq!(canceled.status, Status::Canceled);
    wait_status(&server, &younger.id, Status::Succeeded).await;

    // Skipped: a head that asked to be skipped fails, and the key goes on by itself.
    let skipped = TaskRequest {
        order_on_failure: Some(OnHeadFailure::Skip),
        ..ordered(rx.url("/gone/skipped"), "skipped")
    };
    let head = register(&server, skipped).await;
    let younger = register(&server, ordered(rx.url("/after/skipped"), "skipped")).await;
    wait_status(&server, &younger.id, Status::Succeeded).await;
    assert_eq!(
        server.api().get(&head.id).await.unwrap().status,
        Status::Failed
    );

    // Bad order settings, named.
    server
        .refuses_naming(
            Method::POST,
            "/v1/tasks",
            &[
                (
                    json!({"url": rx.url("/x"), "order_key": "k".repeat(256)}),
                    "order_key",
                ),
                (json!({"url": rx.url("/x"), "order_key": ""}), "order_key"),
                (
                    json!({"url": rx.url("/x"), "order_on_failure": "skip"}),
                    "order_on_failure",
                ),
                (
                    json!({"url": rx.url("/x"), "order_key": "k", "order_on_failure": "later"}),
                    "order_on_failure",
                ),
            ],
        )
        .await;
    let (status, problem) = server
        .send_raw(Method::GET, "/v1/order-keys?limit=0", &json!(null))
        .await;
    assert_eq!(status, 422, "{problem:?}");
}
