//! The task-store contract against the DynamoDB adapter, on moto and on dynalite. The races
//! (20 concurrent creates, 20 concurrent claims: exactly one winner each) run on dynalite,
//! whose conditional writes are atomic under concurrency as DynamoDB's are.

use std::sync::Arc;
use std::time::Duration;

use boomerang_aws::attr;
use boomerang_aws::keys::DUE_SHARDS;
use boomerang_aws::DynamoStore;
use boomerang_core::domain::{Attempt, Task};
use boomerang_core::ports::{ListQuery, SweepIndex, TaskStore};
use boomerang_core::testing::{
    sample_task, store_atomicity_contract, store_contract, unique_tenant,
};
use boomerang_e2e::aws::{dynalite, fresh_dynalite_table, fresh_moto_resources, moto};

const RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

async fn moto_store() -> Arc<DynamoStore> {
    let settings = fresh_moto_resources("contract").await;
    let client = aws_sdk_dynamodb::Client::new(&moto());
    Arc::new(DynamoStore::new(client, settings.table, RETENTION))
}

#[tokio::test]
async fn dynamodb_store_honours_the_contract_on_moto() {
    store_contract(moto_store().await).await;
}

#[tokio::test]
async fn dynamodb_store_honours_the_contract_and_is_atomic_on_dynalite() {
    let table = fresh_dynalite_table("contract").await;
    let client = aws_sdk_dynamodb::Client::new(&dynalite());
    let store = Arc::new(DynamoStore::new(client, table, RETENTION));
    store_contract(store.clone()).await;
    store_atomicity_contract(store).await;
}

/// Emulators (and DynamoDB itself, for up to days) keep expired items: reads must not.
#[tokio::test]
async fn finished_tasks_past_retention_are_invisible() {
    let store = moto_store().await;
    let tenant = unique_tenant("ttl");
    let long_ago = chrono::Utc::now() - chrono::Duration::days(8);
    let mut old = sample_task(&tenant, None, long_ago);
    let recent = sample_task(&tenant, None, chrono::Utc::now());
    store.create(&old).await.unwrap();
    store.create(&recent).await.unwrap();
    let done = old.cancel(long_ago).unwrap();
    store.update(&done, old.version).await.unwrap();
    old = done;

    assert_eq!(store.get(&old.tenant, &old.id).await.unwrap(), None);
    assert!(store
        .get(&recent.tenant, &recent.id)
        .await
        .unwrap()
        .is_some());
    let page = store
        .list(
            &tenant,
            &ListQuery {
                limit: 10,
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        page.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![recent.id]
    );
}

/// Attempt records past the ten a task item embeds are items of their own: they take the
/// task's expiry when it finishes, and lose it when a redrive gives it a new round.
#[tokio::test]
async fn attempt_items_expire_with_their_task() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use boomerang_aws::keys::{attempt_sk, task_sk};
    let settings = fresh_moto_resources("expiry").await;
    let client = aws_sdk_dynamodb::Client::new(&moto());
    let store = DynamoStore::new(client.clone(), settings.table.clone(), RETENTION);
    let mut task = sample_task(&unique_tenant("expiry"), None, chrono::Utc::now());
    task.spec.retry = task.spec.retry.clone().with_max_attempts(12).unwrap();
    store.create(&task).await.unwrap();
    let (task, _, now) = fail_attempts(&store, task, 12).await;
    assert_eq!(task.status, boomerang_core::domain::Status::Failed);
    let pk = store.task_pk(&task.tenant, &task.id).await.unwrap();
    let expiry_of = |sk: String| {
        let (client, table, pk) = (client.clone(), settings.table.clone(), pk.clone());
        async move {
            let item = client
                .get_item()
                .table_name(table)
                .key(attr::PK, AttributeValue::S(pk))
                .key(attr::SK, AttributeValue::S(sk))
                .send()
                .await
                .unwrap()
                .item
                .expect("the item");
            item.get(attr::EXPIRES).map(|x| x.as_n().unwrap().clone())
        }
    };
    // Failed with its dead letter pending and its alert owed: nothing expires yet.
    assert_eq!(expiry_of(attempt_sk(&task.id, 11)).await, None);
    let letter_sent = task.dead_letter_sent(now).unwrap();
    store.update(&letter_sent, task.version).await.unwrap();
    assert_eq!(
        expiry_of(task_sk(&task.id)).await,
        None,
        "the alert is owed"
    );
    let sent = letter_sent.alert_settled(None, now).unwrap();
    store.update(&sent, letter_sent.version).await.unwrap();
    let task_expiry = expiry_of(task_sk(&task.id)).await;
    assert!(task_expiry.is_some());
    for n in [11, 12] {
        assert_eq!(expiry_of(attempt_sk(&task.id, n)).await, task_expiry);
    }
    let redriven = sent.redrive(now).unwrap();
    store.update(&redriven, sent.version).await.unwrap();
    for sk in [
        task_sk(&task.id),
        attempt_sk(&task.id, 11),
        attempt_sk(&task.id, 12),
    ] {
        assert_eq!(expiry_of(sk).await, None, "a new round keeps its history");
    }
}

/// Past the tenth, an attempt's record is an item of its own, written before the task's
/// next state: a read between the two finds the record beside the task still delivering
/// that attempt. Details show the state that was, without the record.
#[tokio::test]
async fn a_record_written_before_its_task_is_not_shown_beside_the_attempt_under_way() {
    use boomerang_core::domain::Status;
    let store = moto_store().await;
    let mut task = sample_task(&unique_tenant("between"), None, chrono::Utc::now());
    task.spec.retry = task.spec.retry.clone().with_max_attempts(12).unwrap();
    store.create(&task).await.unwrap();
    let (task, claimed, _) = fail_attempts(&store, task, 11).await;
    let (_, records) = store
        .details(&task.tenant, &task.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        records.len(),
        11,
        "scheduled for the 12th, beside 11 records"
    );
    // The task's item as it was between the 11th record's write and its own.
    let between = Task {
        version: task.version + 1,
        ..claimed.clone()
    };
    store.update(&between, task.version).await.unwrap();
    let (read, records) = store
        .details(&task.tenant, &task.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((read.status, read.attempt), (Status::Delivering, 11));
    let numbers: Vec<u32> = records.iter().map(|r| r.number).collect();
    assert_eq!(numbers, (1..=10).collect::<Vec<_>>());
}

/// Runs `task` through its attempts 1 to `n`, each answered 503 and written as the
/// engine writes it: the task after the last, the last attempt as it was claimed, and
/// when that attempt was made.
async fn fail_attempts(
    store: &DynamoStore,
    mut task: Task,
    n: u32,
) -> (Task, Task, chrono::DateTime<chrono::Utc>) {
    use boomerang_core::domain::Verdict;
    let verdict = Verdict::Retry {
        error: "HTTP 503".into(),
        retry_after: None,
    };
    let mut now = task.next_attempt_at.unwrap_or_else(chrono::Utc::now);
    let (mut claimed, mut made) = (task.clone(), now);
    for n in 1..=n {
        made = now;
        claimed = task
            .claim(Attempt::Delivery(n), now, Duration::from_secs(40))
            .unwrap();
        store.claim(&claimed, task.version).await.unwrap();
        let next = claimed.after_attempt(&verdict, now, 0.5).unwrap();
        let record = claimed.attempt_record(&next, now, now, Some(503), None);
        store
            .finish_attempt(&record, &next, claimed.version)
            .await
            .unwrap();
        now = next.next_attempt_at.unwrap_or(now);
        task = next;
    }
    (task, claimed, made)
}

/// A JSON body of about 1 KiB, as an order webhook carries.
fn order_event() -> String {
    let items: Vec<serde_json::Value> = (0..10)
        .map(|n| {
            serde_json::json!({"sku": format!("SKU-{:05}", 131 * n), "qty": 1 + n % 4,
                "unit_price_cents": 199 + 53 * n, "title": format!("Item {n} of order 0, blue")})
        })
        .collect();
    serde_json::json!({
        "event": "order.paid", "order_id": "ord_00040000",
        "customer": {"id": "cus_001000", "email": "buyer0@example.com", "country": "DE"},
        "items": items, "currency": "EUR", "paid_at": "2026-11-22T10:00:00Z",
    })
    .to_string()
}

/// DynamoDB bills a write by the whole item, per started KiB: a task with a 1 KiB JSON body
/// stays under one unit at registration and after its attempt (state and record included).
#[test]
fn a_task_with_a_1_kib_json_body_is_written_in_one_unit() {
    use boomerang_aws::capacity::{item_size, write_units};
    use boomerang_aws::keys::task_partition;
    use boomerang_aws::store::item::{new_item, record_value};
    let body = order_event();
    assert!(body.len() >= 1000, "{}", body.len());
    let now = chrono::Utc::now();
    let mut task = sample_task(&unique_tenant("size"), None, now);
    task.spec.request.url = "https://hooks.example.com/orders/paid".into();
    task.spec.request.headers = vec![("X-Api-Version".into(), "2024-06-01".into())];
    task.spec.request.body = body;
    // The longest partition key a tenant's plan allows.
    let pk = task_partition(&task.tenant, 255);
    let registered = new_item(&task, pk.clone(), RETENTION).unwrap();
    let claimed = task
        .claim(Attempt::Delivery(1), now, Duration::from_secs(40))
        .unwrap();
    let verdict = boomerang_core::domain::Verdict::Retry {
        error: "HTTP 503".into(),
        retry_after: None,
    };
    let next = claimed.after_attempt(&verdict, now, 0.5).unwrap();
    let mut record = claimed.attempt_record(&next, now, now, Some(503), Some("busy".into()));
    // A Lambda request id names the worker.
    record.worker = Some("3f8e2a1c-9b7d-4e6f-a5c4-1d2e3f4a5b6c".into());
    let mut finished = new_item(&next, pk, RETENTION).unwrap();
    finished.insert(
        attr::HISTORY.into(),
        aws_sdk_dynamodb::types::AttributeValue::L(vec![record_value(&record)]),
    );
    for item in [&registered, &finished] {
        assert_eq!(
            write_units(item_size(item)),
            1.0,
            "{} bytes",
            item_size(item)
        );
    }
}

/// A task a durable timer holds is not where the sweep looks; one without is, and once the
/// sweep has armed it, the next sweep reads past it.
#[tokio::test]
async fn the_sweep_sees_only_unarmed_work_and_reads_past_its_checkpoint() {
    let store = moto_store().await;
    let tenant = unique_tenant("custody");
    let now = chrono::Utc::now();
    let minute = chrono::Duration::minutes(1);
    let mut armed = sample_task(&tenant, None, now - minute);
    armed.timer_armed = true;
    let unarmed = sample_task(&tenant, None, now - minute);
    store.create(&armed).await.unwrap();
    store.create(&unarmed).await.unwrap();

    let due = store.due(now, 100).await.unwrap();
    let ids: Vec<_> = due.work.iter().map(|w| w.attempt.task_id).collect();
    assert_eq!(ids, vec![unarmed.id]);
    assert_eq!(
        store.due(now, 100).await.unwrap().work.len(),
        1,
        "until the sweep says it armed them, the same work is found again"
    );
    store.swept(due.mark.as_ref().unwrap()).await.unwrap();
    assert!(store.due(now, 100).await.unwrap().work.is_empty());

    let later = sample_task(&tenant, None, now + minute);
    store.create(&later).await.unwrap();
    let due = store.due(now + minute * 2, 100).await.unwrap();
    let ids: Vec<_> = due.work.iter().map(|w| w.attempt.task_id).collect();
    assert_eq!(
        ids,
        vec![later.id],
        "work written after the checkpoint is found"
    );
}

/// The sweep reads its shards side by side, at most its limit from each, and the tasks they
/// name a hundred to a request, several requests at once: a backlog comes back in the
/// index's order, each task once, and one larger than a read over several sweeps.
#[tokio::test]
async fn a_backlog_comes_back_in_index_order_each_task_once() {
    let store = moto_store().await;
    let tenant = unique_tenant("backlog");
    let now = chrono::Utc::now();
    let tasks: Vec<_> = (0..300)
        .map(|i| sample_task(&tenant, None, now - chrono::Duration::seconds(600 - i)))
        .collect();
    for chunk in tasks.chunks(25) {
        let writes = chunk.iter().map(|t| store.create(t));
        for created in futures_util::future::join_all(writes).await {
            created.unwrap();
        }
    }
    let due_of: std::collections::HashMap<_, _> =
        tasks.iter().map(|t| (t.id, t.next_attempt_at)).collect();

    // One read takes them all: three requests' worth of tasks, put back in index order
    // (shard by shard, each by due time).
    let all = store.due(now, 1000).await.unwrap();
    let order: Vec<_> = (all.work.iter())
        .map(|w| {
            (
                w.attempt.task_id.spread(DUE_SHARDS),
                due_of[&w.attempt.task_id],
            )
        })
        .collect();
    assert_eq!(order.len(), tasks.len());
    assert!(order.windows(2).all(|p| p[0] <= p[1]), "{order:?}");

    // Twenty a shard at a time: each sweep reads past the last, until none is left.
    let limit = 20;
    let mut seen = std::collections::BTreeSet::new();
    for sweep in 0.. {
        assert!(sweep < 10, "the backlog never ran out");
        let due = store.due(now, limit).await.unwrap();
        if due.work.is_empty() {
            break;
        }
        assert!(due.work.len() <= limit * DUE_SHARDS as usize);
        for w in &due.work {
            assert!(
                seen.insert(w.attempt.task_id),
                "read twice: {}",
                w.attempt.task_id
            );
        }
        store.swept(due.mark.as_ref().unwrap()).await.unwrap();
    }
    assert_eq!(seen.len(), tasks.len());
}

/// A warm Lambda keeps what it read of keys and secrets for a minute; unknown keys are
/// looked up every time, so a new key works at once.
#[tokio::test]
async fn tenant_lookups_are_cached_but_unknown_keys_are_not() {
    use boomerang_aws::DynamoTenants;
    use boomerang_core::ports::Tenants;
    let settings = fresh_moto_resources("tenants").await;
    let client = aws_sdk_dynamodb::Client::new(&moto());
    let tenants = DynamoTenants::new(client.clone(), &settings.table);
    let stranger = "bk_not_yet_minted";
    assert_eq!(tenants.authenticate(stranger).await.unwrap(), None);
    let minted = tenants.mint_key(&unique_tenant("cache")).await.unwrap();
    assert_eq!(
        tenants.authenticate(&minted.api_key).await.unwrap(),
        Some(minted.tenant.clone())
    );
    // Gone from the table (revoked), still known to this warm instance for a while.
    let scan = client
        .scan()
        .table_name(&settings.table)
        .send()
        .await
        .unwrap();
    for item in scan.items() {
        if item
            .get(attr::SK)
            .and_then(|v| v.as_s().ok())
            .is_some_and(|s| s == "KEY")
        {
            client
                .delete_item()
                .table_name(&settings.table)
                .key(attr::PK, item[attr::PK].clone())
                .key(attr::SK, item[attr::SK].clone())
                .send()
                .await
                .unwrap();
        }
    }
    assert_eq!(
        tenants.authenticate(&minted.api_key).await.unwrap(),
        Some(minted.tenant.clone())
    );
    let cold = DynamoTenants::new(client, &settings.table);
    assert_eq!(cold.authenticate(&minted.api_key).await.unwrap(), None);
}

/// Flow counters in the table: a window's rate and a flow's slots hold under concurrent
/// callers (on dynalite, whose conditional writes are atomic as DynamoDB's are); waiting
/// notes are counted and taken; pauses are kept.
#[tokio::test]
async fn flow_counters_honour_the_contract_on_dynalite() {
    use boomerang_aws::flows::DynamoFlowCounters;
    use boomerang_core::testing::flow_contract::check_flow_counters;
    let table = fresh_dynalite_table("flows").await;
    let client = aws_sdk_dynamodb::Client::new(&dynalite());
    let flows = Arc::new(DynamoFlowCounters::new(client, table));
    check_flow_counters(flows.clone(), "dynalite").await;
    boomerang_core::testing::flow_contract::check_flow_pauses(flows, "dynalite").await;
}

/// A tenant's tasks spread over more partitions from a change on: a task keeps the
/// partition of the count in force when its id was made, so tasks from before and after
/// the change are all found and all listed.
#[tokio::test]
async fn a_tenant_grown_to_more_partitions_finds_and_lists_every_task() {
    use boomerang_aws::shards::{DEFAULT_TENANT_SHARDS, SHARD_CHANGE_DELAY};
    use boomerang_aws::DynamoTenants;
    use boomerang_core::domain::TaskId;
    let settings = fresh_moto_resources("shards").await;
    let client = aws_sdk_dynamodb::Client::new(&moto());
    let tenant = unique_tenant("grown");
    let tenants = DynamoTenants::new(client.clone(), &settings.table);
    tenants.mint_key(&tenant).await.unwrap();
    let now = chrono::Utc::now();
    let store = || DynamoStore::new(client.clone(), settings.table.clone(), RETENTION);

    // Made an hour ago, before the change: the default count placed them.
    let old: Vec<_> = (0..20)
        .map(|i| {
            let made = (now - chrono::Duration::hours(1)).timestamp_millis() as u64 + i;
            let id: TaskId = ulid::Ulid::from_parts(made, rand_bits(i))
                .to_string()
                .parse()
                .unwrap();
            let mut task = sample_task(&tenant, None, now);
            task.id = id;
            task
        })
        .collect();
    for task in &old {
        store().create(task).await.unwrap();
    }
    // The change was made long enough ago to be in force now.
    let plan = tenants
        .set_shards(
            &tenant,
            64,
            now - SHARD_CHANGE_DELAY - chrono::Duration::minutes(1),
        )
        .await
        .unwrap();
    assert_eq!(plan.shards_at(now), 64);
    let grown = store();
    let new: Vec<_> = (0..100).map(|_| sample_task(&tenant, None, now)).collect();
    for task in &new {
        grown.create(task).await.unwrap();
    }
    let mut beyond_default = 0;
    for task in &new {
        let pk = grown.task_pk(&tenant, &task.id).await.unwrap();
        let shard = u32::from_str_radix(pk.rsplit('#').next().unwrap(), 16).unwrap();
        assert!(shard < 64);
        beyond_default += usize::from(shard >= DEFAULT_TENANT_SHARDS);
    }
    assert!(beyond_default > 0, "new tasks use the new partitions");
    for task in old.iter().chain(&new) {
        let found = grown.get(&tenant, &task.id).await.unwrap();
        assert_eq!(found.map(|t| t.id), Some(task.id), "every task is found");
    }
    let mut listed = 0;
    let mut cursor = None;
    loop {
        let page = grown
            .list(
                &tenant,
                &ListQuery {
                    limit: 50,
                    cursor: cursor.take(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        listed += page.tasks.len();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(listed, old.len() + new.len(), "every task is listed");

    // The operator's command: a later change, which lists still cover.
    let endpoint = boomerang_e2e::aws::moto_endpoint();
    let env = [
        ("BOOMERANG_TABLE", settings.table.as_str()),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
    ];
    let set = |n: &str| {
        let args = [
            "tenants",
            "shards",
            "--tenant",
            tenant.as_str(),
            "--shards",
            n,
        ];
        boomerang_e2e::run_cli(&args, &env)
    };
    let out = set("32");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("32 partitions from"), "{out:?}");
    assert!(out.stdout.contains("lists read 64"), "{out:?}");
    let out = set("0");
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("--shards"), "{out:?}");

    // Out of range, or no such tenant: refused.
    assert!(tenants.set_shards(&tenant, 0, now).await.is_err());
    assert!(tenants.set_shards(&tenant, 257, now).await.is_err());
    assert!(tenants
        .set_shards(&unique_tenant("nobody"), 32, now)
        .await
        .is_err());
}

fn rand_bits(i: u64) -> u128 {
    // Any spread of the random part: the default count places by its low bits.
    u128::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)
}
