//! A task as a DynamoDB item, laid out by the write budget: DynamoDB bills a write by the
//! whole item (the larger of old and new, per started KiB), so the item is kept small.
//!
//! - The request (URL, headers, body, policy, metadata), fixed at registration, is one
//!   deflate-compressed attribute `rq`, written once: a 1 KiB JSON body stays under one
//!   write unit with everything else.
//! - The state is short attributes, absent when empty, changed with `UpdateItem`.
//! - The first [`EMBEDDED_ATTEMPTS`] attempt records are a list `h` inside the item (the
//!   write that finishes an attempt appends its record); later ones are items of their own.
//! - `ds`/`dm` key the sparse `due` index: in a sweep partition (`0`…`7`) while the task
//!   has pending work that no durable timer holds ([`Task::timer_armed`]); in a bucket
//!   partition (`b0`…`b15`) while its next attempt is due far enough ahead that the timer
//!   leaves it to its minute's bucket ([`held_by_bucket`]); there `dm` holds the attempt
//!   number too ([`keys::bucket_sort_key`]).
//! - The keys name the tenant and the task ([`keys::task_partition`], [`keys::task_sk`]): a
//!   tenant's tasks are listed from the table itself, without an index (whose entry would
//!   cost a write unit per task).
//! - `bk` (tenant and business key) keys the sparse `by_key` index, for tasks that have a
//!   key only; it never changes, so the entry is written once.

use std::io::{Read, Write};

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use crate::attr::{self, record};
use crate::keys;
use crate::plan::held_by_bucket;
use crate::sdk::items::{corrupt, get_n, get_s, n, s, Item};
use boomerang_core::domain::time::checked_add;
use boomerang_core::domain::{
    AttemptOutcome, AttemptRecord, PendingWork, Status, Task, TaskId, TaskSpec, TenantId,
};
use boomerang_core::ports::StoreError;

/// Attempt records kept inside the task item; later attempts get items of their own, so
/// the item (and so every write of it) stays bounded.
pub const EMBEDDED_ATTEMPTS: u32 = 10;

/// The tenant and the task an item's keys name.
pub fn key_of(item: &Item) -> Result<(TenantId, TaskId), StoreError> {
    let tenant = keys::partition_tenant(get_s(item, attr::PK)?).ok_or_else(|| corrupt(attr::PK))?;
    let id = keys::sk_task(get_s(item, attr::SK)?).ok_or_else(|| corrupt(attr::SK))?;
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
pub fn new_item(
    task: &Task,
    pk: String,
    retention: std::time::Duration,
) -> Result<Item, StoreError> {
    let mut item = keys::task(pk, &task.id).to_item();
    if let Some(key) = &task.spec.key {
        item.insert(
            attr::BUSINESS_KEY.into(),
            s(keys::business_key(&task.tenant, key)),
        );
    }
    item.insert(attr::CREATED_AT.into(), ms(task.created_at));
    item.insert(
        attr::REQUEST.into(),
        AttributeValue::B(Blob::new(compress(&task.spec)?)),
    );
    // The request digest is only ever compared for a repeat with the same key.
    if let Some(key) = &task.idempotency_key {
        item.insert(attr::IDEMPOTENCY_KEY.into(), s(key));
        item.insert(attr::REQUEST_HASH.into(), s(&task.request_hash));
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
        (attr::STATUS, s(task.status.as_str())),
        (attr::VERSION, n(task.version)),
        (attr::ATTEMPT, n(task.attempt)),
        (attr::ROUND_START, n(task.round_start)),
        (attr::ROUND_STARTED_AT, ms(task.round_started_at)),
        (attr::UPDATED_AT, ms(task.updated_at)),
    ];
    let mut remove = Vec::new();
    let mut optional = |name: &'static str, value: Option<AttributeValue>| match value {
        Some(v) => set.push((name, v)),
        None => remove.push(name),
    };
    optional(attr::NEXT_ATTEMPT_AT, task.next_attempt_at.map(ms));
    optional(attr::LEASE_UNTIL, task.lease_until.map(ms));
    optional(attr::LAST_ERROR, task.last_error.clone().map(s));
    optional(
        attr::DEAD_LETTER_PENDING,
        task.dead_letter_pending
            .then_some(AttributeValue::Bool(true)),
    );
    optional(
        attr::TIMER_ARMED,
        task.timer_armed.then_some(AttributeValue::Bool(true)),
    );
    optional(
        attr::ALERT_PENDING,
        task.alert_pending.then_some(AttributeValue::Bool(true)),
    );
    optional(
        attr::ALERTS,
        (!task.alerts.is_empty())
            .then(|| AttributeValue::L(task.alerts.iter().map(|id| s(id.to_string())).collect())),
    );
    optional(attr::CHECK_AT, task.check_at.map(ms));
    optional(
        attr::ORDER_PLACE,
        task.spec.order.as_ref().map(|o| n(o.seq)),
    );
    // A held task's checks (at most a hundred small records), as JSON.
    optional(
        attr::CHECKS,
        (!task.checks.is_empty())
            .then(|| serde_json::to_string(&task.checks).ok().map(s))
            .flatten(),
    );
    optional(attr::EXPIRES, expiry(task, retention).map(n));
    // Only work no durable timer holds goes where the sweep looks, and only far-future
    // attempts into their bucket. The entry is left as it is otherwise: the sweep reads past
    // it once, a bucket's fire skips it (removing it would cost an index write).
    match task.pending_work() {
        Some(work) if !task.timer_armed => {
            set.push((attr::DUE_SHARD, s(keys::sweep_shard(&task.id))));
            set.push((attr::DUE_AT, ms(work.due_at)));
        }
        Some(work) if work.kind.is_timed() && held_by_bucket(work.due_at, task.updated_at) => {
            let partition = keys::bucket_partition(keys::bucket_shard(&task.id));
            set.push((attr::DUE_SHARD, s(partition)));
            set.push((
                attr::DUE_AT,
                n(keys::bucket_sort_key(work.due_at, work.attempt.attempt)),
            ));
        }
        _ => {}
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
    let mut spec: TaskSpec = match item.get(attr::REQUEST) {
        Some(AttributeValue::B(blob)) => decompress(blob.as_ref())?,
        _ => return Err(corrupt(attr::REQUEST)),
    };
    if let (Some(order), Ok(place)) = (spec.order.as_mut(), get_n(item, attr::ORDER_PLACE)) {
        order.seq = u64::try_from(place).map_err(|_| corrupt(attr::ORDER_PLACE))?;
    }
    let number = |key: &'static str| -> Result<u32, StoreError> {
        u32::try_from(get_n(item, key)?).map_err(|_| corrupt(key))
    };
    Ok(Task {
        id,
        tenant,
        spec,
        idempotency_key: item
            .get(attr::IDEMPOTENCY_KEY)
            .and_then(|v| v.as_s().ok())
            .cloned(),
        request_hash: item
            .get(attr::REQUEST_HASH)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default(),
        status: Status::parse(get_s(item, attr::STATUS)?).ok_or_else(|| corrupt(attr::STATUS))?,
        attempt: number(attr::ATTEMPT)?,
        round_start: number(attr::ROUND_START)?,
        round_started_at: time(item, attr::ROUND_STARTED_AT)?,
        next_attempt_at: opt_time(item, attr::NEXT_ATTEMPT_AT)?,
        lease_until: opt_time(item, attr::LEASE_UNTIL)?,
        version: u64::try_from(get_n(item, attr::VERSION)?).map_err(|_| corrupt(attr::VERSION))?,
        created_at: time(item, attr::CREATED_AT)?,
        updated_at: time(item, attr::UPDATED_AT)?,
        last_error: item
            .get(attr::LAST_ERROR)
            .and_then(|v| v.as_s().ok())
            .cloned(),
        dead_letter_pending: flag(item, attr::DEAD_LETTER_PENDING),
        timer_armed: flag(item, attr::TIMER_ARMED),
        alert_pending: flag(item, attr::ALERT_PENDING),
        alerts: alerts(item)?,
        check_at: opt_time(item, attr::CHECK_AT)?,
        checks: match item.get(attr::CHECKS) {
            Some(v) => serde_json::from_str(v.as_s().map_err(|_| corrupt(attr::CHECKS))?)
                .map_err(|_| corrupt(attr::CHECKS))?,
            None => Vec::new(),
        },
    })
}

/// The alerts raised about a task (attribute `al`, a list of ids).
fn alerts(item: &Item) -> Result<Vec<TaskId>, StoreError> {
    let Some(value) = item.get(attr::ALERTS) else {
        return Ok(Vec::new());
    };
    let list = value.as_l().map_err(|_| corrupt(attr::ALERTS))?;
    list.iter()
        .map(|v| {
            v.as_s()
                .ok()
                .and_then(|id| id.parse().ok())
                .ok_or_else(|| corrupt(attr::ALERTS))
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
    m.insert(record::NUMBER.into(), n(r.number));
    m.insert(record::SCHEDULED_AT.into(), ms(r.scheduled_at));
    m.insert(record::STARTED_AT.into(), ms(r.started_at));
    m.insert(record::DURATION_MS.into(), n(r.duration_ms));
    if let Some(code) = r.status_code {
        m.insert(record::STATUS_CODE.into(), n(code));
    }
    if let Some(e) = &r.error {
        m.insert(record::ERROR.into(), s(e));
    }
    if let Some(x) = &r.response_excerpt {
        m.insert(record::RESPONSE_EXCERPT.into(), s(x));
    }
    if let Some(w) = &r.worker {
        m.insert(record::WORKER.into(), s(w));
    }
    let outcome = match r.outcome {
        AttemptOutcome::Succeeded => "s",
        AttemptOutcome::Retrying => "r",
        AttemptOutcome::Failed => "f",
    };
    m.insert(record::OUTCOME.into(), s(outcome));
    AttributeValue::M(m)
}

pub fn record_from(task_id: TaskId, value: &AttributeValue) -> Result<AttemptRecord, StoreError> {
    let m = value.as_m().map_err(|_| corrupt(attr::HISTORY))?;
    let scheduled_at = time(m, record::SCHEDULED_AT)?;
    let started_at = time(m, record::STARTED_AT)?;
    Ok(AttemptRecord {
        task_id,
        number: u32::try_from(get_n(m, record::NUMBER)?).map_err(|_| corrupt(record::NUMBER))?,
        scheduled_at,
        started_at,
        lateness_ms: (started_at - scheduled_at).num_milliseconds().max(0),
        duration_ms: u64::try_from(get_n(m, record::DURATION_MS)?)
            .map_err(|_| corrupt(record::DURATION_MS))?,
        status_code: m
            .get(record::STATUS_CODE)
            .map(|_| {
                get_n(m, record::STATUS_CODE)
                    .and_then(|c| u16::try_from(c).map_err(|_| corrupt(record::STATUS_CODE)))
            })
            .transpose()?,
        error: m.get(record::ERROR).and_then(|v| v.as_s().ok()).cloned(),
        response_excerpt: m
            .get(record::RESPONSE_EXCERPT)
            .and_then(|v| v.as_s().ok())
            .cloned(),
        worker: m.get(record::WORKER).and_then(|v| v.as_s().ok()).cloned(),
        outcome: match get_s(m, record::OUTCOME)? {
            "s" => AttemptOutcome::Succeeded,
            "r" => AttemptOutcome::Retrying,
            "f" => AttemptOutcome::Failed,
            _ => return Err(corrupt(record::OUTCOME)),
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
