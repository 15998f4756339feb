//! A task as a DynamoDB item, laid out by the write budget: DynamoDB bills a write by the
//! whole item (the larger of old and new, per started KiB), so the item is kept small.
//!
//! - The request (URL, headers, body, policy, metadata), fixed at registration, is one
//!   deflate-compressed attribute `rq`, written once: a 1 KiB JSON body stays under one
//!   write unit with everything else.
//! - The state is short attributes, absent when empty, changed with `UpdateItem`.
//! - The first [`EMBEDDED_ATTEMPTS`] attempt records are a list `h` inside the item (the
//!   write that finishes an attempt appends its record); later ones are items of their own.
//! - `ds`/`dm` key the sparse `due` index only while the task has pending work that no
//!   durable timer holds ([`Task::timer_armed`]).
//! - The keys name the tenant and the task ([`task_pk`], [`task_sk`]): a tenant's tasks are
//!   listed from the table itself, without an index (whose entry would cost a write unit
//!   per task).
//! - `bk` (tenant and business key) keys the sparse `by_key` index, for tasks that have a
//!   key only; it never changes, so the entry is written once.

use std::io::{Read, Write};

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use crate::sdk::items::{corrupt, get_n, get_s, n, s, Item};
use boomerang_core::domain::time::checked_add;
use boomerang_core::domain::{
    AttemptOutcome, AttemptRecord, BusinessKey, PendingWork, Status, Task, TaskId, TaskSpec,
    TenantId,
};
use boomerang_core::ports::StoreError;

/// Attempt records kept inside the task item; later attempts get items of their own, so
/// the item (and so every write of it) stays bounded.
pub const EMBEDDED_ATTEMPTS: u32 = 10;
/// Partitions of the `due` index: spreads sweeper reads and hot due-times.
pub const DUE_SHARDS: u32 = 8;
/// Partitions of one tenant's tasks: a partition key takes at most 1,000 write units a
/// second, so a tenant may write 16,000 (about 5,000 callbacks a second).
pub const TENANT_SHARDS: u32 = 16;

/// The partition of a tenant's task: `T#<tenant>#<shard, hex>`.
pub fn task_pk(tenant: &TenantId, id: &TaskId) -> String {
    shard_pk(tenant, id.spread(TENANT_SHARDS))
}

pub fn shard_pk(tenant: &TenantId, shard: u32) -> String {
    format!("T#{tenant}#{shard:x}")
}

/// The task item's sort key: its id (so a partition lists newest first, backwards).
pub fn task_sk(id: &TaskId) -> String {
    id.to_string()
}

/// The `by_key` index's partition of a tenant's business key: `<tenant>#<key>`.
pub fn key_partition(tenant: &TenantId, key: &BusinessKey) -> String {
    format!("{tenant}#{key}")
}

/// An attempt record's own item sorts right after its task: `<id>#A#<number>`.
pub fn attempt_sk(id: &TaskId, number: u32) -> String {
    format!("{id}#A#{number:010}")
}

fn due_shard(id: &TaskId) -> String {
    id.spread(DUE_SHARDS).to_string()
}

/// The tenant and the task an item's keys name.
pub fn key_of(item: &Item) -> Result<(TenantId, TaskId), StoreError> {
    let tenant = get_s(item, "pk")?
        .strip_prefix("T#")
        .and_then(|rest| rest.rsplit_once('#'))
        .and_then(|(tenant, _)| TenantId::parse(tenant).ok())
        .ok_or_else(|| corrupt("pk"))?;
    let id = get_s(item, "sk")?
        .split('#')
        .next()
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| corrupt("sk"))?;
    Ok((tenant, id))
}

fn ms(t: DateTime<Utc>) -> AttributeValue {
    n(t.timestamp_millis())
}

fn time(item: &Item, key: &'static str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_millis(get_n(item, key)?).ok_or_else(|| corrupt(key))
}

fn opt_time(item: &Item, key: &'static str) -> Result<Option<DateTime<Utc>>, StoreError> {
    match item.get(key) {
        None => Ok(None),
        Some(_) => time(item, key).map(Some),
    }
}

fn flag(item: &Item, key: &str) -> bool {
    matches!(item.get(key), Some(AttributeValue::Bool(true)))
}

/// The whole item of a new task: request, state and index keys.
pub fn new_item(task: &Task, retention: std::time::Duration) -> Result<Item, StoreError> {
    let mut item = Item::new();
    item.insert("pk".into(), s(task_pk(&task.tenant, &task.id)));
    item.insert("sk".into(), s(task_sk(&task.id)));
    if let Some(key) = &task.spec.key {
        item.insert("bk".into(), s(key_partition(&task.tenant, key)));
    }
    item.insert("ca".into(), ms(task.created_at));
    item.insert(
        "rq".into(),
        AttributeValue::B(Blob::new(compress(&task.spec)?)),
    );
    // The request digest is only ever compared for a repeat with the same key.
    if let Some(key) = &task.idempotency_key {
        item.insert("ik".into(), s(key));
        item.insert("rh".into(), s(&task.request_hash));
    }
    for (name, value) in state(task, retention).set {
        item.insert(name.into(), value);
    }
    Ok(item)
}

/// The state attributes a write sets and removes.
pub struct State {
    pub set: Vec<(&'static str, AttributeValue)>,
    pub remove: Vec<&'static str>,
}

/// The task's state as attributes (everything but the request and the attempt records).
pub fn state(task: &Task, retention: std::time::Duration) -> State {
    let mut set = vec![
        ("st", s(task.status.as_str())),
        ("v", n(task.version)),
        ("a", n(task.attempt)),
        ("rs", n(task.round_start)),
        ("rt", ms(task.round_started_at)),
        ("ua", ms(task.updated_at)),
    ];
    let mut remove = Vec::new();
    let mut optional = |name: &'static str, value: Option<AttributeValue>| match value {
        Some(v) => set.push((name, v)),
        None => remove.push(name),
    };
    optional("na", task.next_attempt_at.map(ms));
    optional("lu", task.lease_until.map(ms));
    optional("le", task.last_error.clone().map(s));
    optional(
        "dl",
        task.dead_letter_pending
            .then_some(AttributeValue::Bool(true)),
    );
    optional("ta", task.timer_armed.then_some(AttributeValue::Bool(true)));
    optional(
        "ap",
        task.alert_pending.then_some(AttributeValue::Bool(true)),
    );
    optional(
        "al",
        (!task.alerts.is_empty())
            .then(|| AttributeValue::L(task.alerts.iter().map(|id| s(id.to_string())).collect())),
    );
    optional("kt", task.check_at.map(ms));
    // A held task's checks (at most a hundred small records), as JSON.
    optional(
        "ck",
        (!task.checks.is_empty())
            .then(|| serde_json::to_string(&task.checks).ok().map(s))
            .flatten(),
    );
    optional("x", expiry(task, retention).map(n));
    // Only work no durable timer holds goes where the sweep looks. The entry is left as it
    // is otherwise: the sweep reads past it once (removing it would cost an index write).
    if let Some(work) = task.pending_work().filter(|_| !task.timer_armed) {
        set.push(("ds", s(due_shard(&task.id))));
        set.push(("dm", ms(work.due_at)));
    }
    State { set, remove }
}

/// When a finished task expires (epoch seconds): `retention` after it ended, once nothing
/// is left to do (a dead letter to send, an alert to raise).
pub fn expiry(task: &Task, retention: std::time::Duration) -> Option<i64> {
    task.is_settled().then(|| {
        // The retention is bounded where it is configured; the sum is checked anyway.
        let at = checked_add(task.updated_at, retention).unwrap_or(DateTime::<Utc>::MAX_UTC);
        at.timestamp()
    })
}

/// The task an item holds.
pub fn task_from(item: &Item) -> Result<Task, StoreError> {
    let (tenant, id) = key_of(item)?;
    let spec: TaskSpec = match item.get("rq") {
        Some(AttributeValue::B(blob)) => decompress(blob.as_ref())?,
        _ => return Err(corrupt("rq")),
    };
    let number = |key: &'static str| -> Result<u32, StoreError> {
        u32::try_from(get_n(item, key)?).map_err(|_| corrupt(key))
    };
    Ok(Task {
        id,
        tenant,
        spec,
        idempotency_key: item.get("ik").and_then(|v| v.as_s().ok()).cloned(),
        request_hash: item
            .get("rh")
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default(),
        status: Status::parse(get_s(item, "st")?).ok_or_else(|| corrupt("st"))?,
        attempt: number("a")?,
        round_start: number("rs")?,
        round_started_at: time(item, "rt")?,
        next_attempt_at: opt_time(item, "na")?,
        lease_until: opt_time(item, "lu")?,
        version: u64::try_from(get_n(item, "v")?).map_err(|_| corrupt("v"))?,
        created_at: time(item, "ca")?,
        updated_at: time(item, "ua")?,
        last_error: item.get("le").and_then(|v| v.as_s().ok()).cloned(),
        dead_letter_pending: flag(item, "dl"),
        timer_armed: flag(item, "ta"),
        alert_pending: flag(item, "ap"),
        alerts: alerts(item)?,
        check_at: opt_time(item, "kt")?,
        checks: match item.get("ck") {
            Some(v) => serde_json::from_str(v.as_s().map_err(|_| corrupt("ck"))?)
                .map_err(|_| corrupt("ck"))?,
            None => Vec::new(),
        },
    })
}

/// The alerts raised about a task (attribute `al`, a list of ids).
fn alerts(item: &Item) -> Result<Vec<TaskId>, StoreError> {
    let Some(value) = item.get("al") else {
        return Ok(Vec::new());
    };
    let list = value.as_l().map_err(|_| corrupt("al"))?;
    list.iter()
        .map(|v| {
            v.as_s()
                .ok()
                .and_then(|id| id.parse().ok())
                .ok_or_else(|| corrupt("al"))
        })
        .collect()
}

/// The pending work an item's task has, as the sweep needs it.
pub fn pending_work(item: &Item) -> Result<Option<PendingWork>, StoreError> {
    let task = task_from(item)?;
    Ok(task.pending_work().filter(|_| !task.timer_armed))
}

/// An attempt record as a compact map (one letter per field, absent when empty).
pub fn record_value(r: &AttemptRecord) -> AttributeValue {
    let mut m = Item::new();
    m.insert("n".into(), n(r.number));
    m.insert("s".into(), ms(r.scheduled_at));
    m.insert("t".into(), ms(r.started_at));
    m.insert("d".into(), n(r.duration_ms));
    if let Some(code) = r.status_code {
        m.insert("c".into(), n(code));
    }
    if let Some(e) = &r.error {
        m.insert("e".into(), s(e));
    }
    if let Some(x) = &r.response_excerpt {
        m.insert("r".into(), s(x));
    }
    if let Some(w) = &r.worker {
        m.insert("w".into(), s(w));
    }
    let outcome = match r.outcome {
        AttemptOutcome::Succeeded => "s",
        AttemptOutcome::Retrying => "r",
        AttemptOutcome::Failed => "f",
    };
    m.insert("o".into(), s(outcome));
    AttributeValue::M(m)
}

pub fn record_from(task_id: TaskId, value: &AttributeValue) -> Result<AttemptRecord, StoreError> {
    let m = value.as_m().map_err(|_| corrupt("h"))?;
    let scheduled_at = time(m, "s")?;
    let started_at = time(m, "t")?;
    Ok(AttemptRecord {
        task_id,
        number: u32::try_from(get_n(m, "n")?).map_err(|_| corrupt("n"))?,
        scheduled_at,
        started_at,
        lateness_ms: (started_at - scheduled_at).num_milliseconds().max(0),
        duration_ms: u64::try_from(get_n(m, "d")?).map_err(|_| corrupt("d"))?,
        status_code: m
            .get("c")
            .map(|_| get_n(m, "c").and_then(|c| u16::try_from(c).map_err(|_| corrupt("c"))))
            .transpose()?,
        error: m.get("e").and_then(|v| v.as_s().ok()).cloned(),
        response_excerpt: m.get("r").and_then(|v| v.as_s().ok()).cloned(),
        worker: m.get("w").and_then(|v| v.as_s().ok()).cloned(),
        outcome: match get_s(m, "o")? {
            "s" => AttemptOutcome::Succeeded,
            "r" => AttemptOutcome::Retrying,
            "f" => AttemptOutcome::Failed,
            _ => return Err(corrupt("o")),
        },
    })
}

fn compress<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    let json = serde_json::to_vec(value).map_err(|e| StoreError::Corrupt(e.into()))?;
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    encoder
        .write_all(&json)
        .and_then(|()| encoder.finish())
        .map_err(|e| StoreError::Corrupt(e.into()))
}

fn decompress<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    let mut json = Vec::new();
    flate2::read::DeflateDecoder::new(bytes)
        .read_to_end(&mut json)
        .map_err(|e| StoreError::Corrupt(e.into()))?;
    serde_json::from_slice(&json).map_err(|e| StoreError::Corrupt(e.into()))
}
