//! Every key of the table, built here and only here from typed parts: the format is what
//! existing tables hold, so it is written down once, and no two kinds of item can be given
//! the same key by a stray `format!` elsewhere.
//!
//! Items, by partition key (`pk`) and sort key (`sk`):
//!
//! | item | `pk` | `sk` |
//! | --- | --- | --- |
//! | a task | `T#<tenant>#<shard, hex>` | `<task id>` |
//! | an attempt record past the embedded ones | its task's | `<task id>#A#<number, 10 digits>` |
//! | an idempotency key | `I#<tenant>#<key>` | `I` |
//! | a named retry policy | `P#<tenant>` | `<policy name>` |
//! | a named task template | `TM#<tenant>` | `<template name>` |
//! | a tenant's breaker settings | `BS#<tenant>` | `default` |
//! | a tenant's circuit breaker at a destination | `BR#<tenant>` | `<destination>` |
//! | a schedule | `S#<tenant>` | `<schedule id>` |
//! | a bulk job | `BJ#<tenant>` | `<job id>` |
//! | a running bulk job's marker (the sweeper's list) | `BULK` | `<job id>` |
//! | a key's newest task (`on_key: replace`) | `K#<tenant>#<key>` | `K` |
//! | an API key | `K#<sha256 hex of the key>` | `KEY` |
//! | a tenant | `N#<tenant>` | `TENANT` |
//! | a flow's rate window | `F#<tenant>#<flow key>` | `W#<window start, ms>` |
//! | a flow's parallelism slot | its flow's | `S#<index>` |
//! | a task waiting in a flow | its flow's | `Q#<task id>` |
//! | a flow a tenant used lately | `FL#<tenant>` | `K#<flow key>` |
//! | a paused flow | `FL#<tenant>` | `P#<flow key>` |
//! | a tenant's call slot at a destination (its own limit) | `D#<tenant>#<destination>` | `S#<index>` |
//! | the sweep's checkpoint | `SWEEP` | `SWEEP` |
//! | where `aws rearm` has read to, per unit (scan segment, index or tenant part) | `REARM` | `<segment>/<segments>`, `<place>/0` |
//! | a minute's bucket fire is done (naming the partitions it handed on) | `BUCKET` | `<minute, epoch ms>` |
//! | a handed-on partition's chain of a minute ended | `BUCKET` | `<minute, epoch ms>#<partition>` |
//! | the minutes the sweeper has checked for a fire | `BUCKET` | `CHECKED` |
//! | a minute's bucket schedule exists | `M#<minute, epoch ms>` | `SCHEDULED` |
//! | the readiness probe (never written) | `READY` | `PROBE` |
//!
//! `K#` begins three different keys: a replace key's partition (`K#<tenant>#<key>`, sort
//! key `K`), an API key's (`K#<digest>`, sort key `KEY`) and, under `FL#`, a flow's sort
//! key. They never name the same item: the first two differ in their sort keys, and the
//! third is only ever a sort key.
//!
//! The indexes' keys:
//! - `due`: `ds` is a sweep shard, `0`…`31` ([`sweep_shard`]), or a bucket partition,
//!   `b0`…`b15` ([`bucket_partition`]); `dm` is when the work is due (epoch ms), or for a
//!   bucket entry the due time and the attempt number in one number ([`bucket_sort_key`]);
//! - `by_key`: `bk` is `<tenant>#<business key>` ([`business_key`]).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::attr;
use boomerang_core::domain::{
    Attempt, BulkJobId, BusinessKey, DefinitionName, Destination, FlowKey, OrderKey, ScheduleId,
    TaskId, TenantId,
};
use boomerang_core::ports::DefinitionKind;

const TASK: &str = "T#";
const ATTEMPT: &str = "#A#";
const IDEMPOTENCY: &str = "I#";
const IDEMPOTENCY_SK: &str = "I";
const POLICY: &str = "P#";
const TEMPLATE: &str = "TM#";
const BREAKER_SETTINGS: &str = "BS#";
const BREAKER: &str = "BR#";
const SCHEDULE: &str = "S#";
const BULK_JOB: &str = "BJ#";
const BULK_RUNNING: &str = "BULK";
const ORDER_KEYS: &str = "OK#";
const ORDER_LINE: &str = "OL#";
const REPLACE: &str = "K#";
const REPLACE_SK: &str = "K";
const API_KEY: &str = "K#";
const API_KEY_SK: &str = "KEY";
const TENANT: &str = "N#";
const TENANT_SK: &str = "TENANT";
const FLOW: &str = "F#";
const DESTINATION: &str = "D#";
const TENANT_FLOWS: &str = "FL#";
const CHECKPOINT: &str = "SWEEP";
const REARM: &str = "REARM";
const BUCKET_FIRES: &str = "BUCKET";
/// A minute's own partition for the record that its schedule exists: every instance
/// arming into a new minute reads it, so minutes do not share a partition's reads.
const BUCKET_SCHEDULE: &str = "M#";
const BUCKET_SCHEDULE_SK: &str = "SCHEDULED";

/// The sort keys of a flow's slots begin with this.
pub const FLOW_SLOTS: &str = "S#";
/// The sort keys of the tasks waiting in a flow begin with this.
pub const FLOW_WAITING: &str = "Q#";
const FLOW_WINDOW: &str = "W#";
/// The sort keys of the flows a tenant used lately begin with this.
pub const FLOWS_SEEN: &str = "K#";
/// The sort keys of a tenant's paused flows begin with this.
pub const FLOWS_PAUSED: &str = "P#";

/// An item's primary key, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ItemKey {
    pub pk: String,
    pub sk: String,
}

impl ItemKey {
    fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
        }
    }

    /// The key as the SDK takes it: a get's, an update's or a delete's `Key`, or the
    /// first two attributes of an item to put.
    pub fn to_item(&self) -> HashMap<String, AttributeValue> {
        HashMap::from([
            (attr::PK.to_string(), AttributeValue::S(self.pk.clone())),
            (attr::SK.to_string(), AttributeValue::S(self.sk.clone())),
        ])
    }

    /// The key of an item, or of an index entry (which carries its item's key).
    pub fn of(item: &HashMap<String, AttributeValue>) -> Option<ItemKey> {
        let part = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
        Some(ItemKey::new(part(attr::PK)?, part(attr::SK)?))
    }
}

// Tasks and their attempt records.

/// A partition of a tenant's tasks: `T#<tenant>#<shard, hex>` (which shard: the tenant's
/// plan, [`crate::shards`]).
pub fn task_partition(tenant: &TenantId, shard: u32) -> String {
    format!("{TASK}{tenant}#{shard:x}")
}

/// A task item's sort key: its id, so that a partition read backwards lists newest first.
pub fn task_sk(id: &TaskId) -> String {
    id.to_string()
}

/// A task's item in its partition.
pub fn task(partition: impl Into<String>, id: &TaskId) -> ItemKey {
    ItemKey::new(partition, task_sk(id))
}

/// An attempt record's own item sorts right after its task: `<id>#A#<number>`.
pub fn attempt_sk(id: &TaskId, number: u32) -> String {
    format!("{id}{ATTEMPT}{number:010}")
}

/// An attempt record's own item in its task's partition.
pub fn attempt(partition: impl Into<String>, id: &TaskId, number: u32) -> ItemKey {
    ItemKey::new(partition, attempt_sk(id, number))
}

/// Whether a sort key in a task partition is an attempt record's.
pub fn is_attempt_sk(sk: &str) -> bool {
    sk.contains(ATTEMPT)
}

/// The tenant a task partition belongs to.
pub fn partition_tenant(pk: &str) -> Option<TenantId> {
    let (tenant, _shard) = pk.strip_prefix(TASK)?.rsplit_once('#')?;
    TenantId::parse(tenant).ok()
}

/// The task a task's (or an attempt record's) sort key names.
pub fn sk_task(sk: &str) -> Option<TaskId> {
    sk.split('#').next()?.parse().ok()
}

// Other items of a tenant.

/// An idempotency key's item: `I#<tenant>#<key>`, `I`.
pub fn idempotency(tenant: &TenantId, key: &str) -> ItemKey {
    ItemKey::new(format!("{IDEMPOTENCY}{tenant}#{key}"), IDEMPOTENCY_SK)
}

/// The partition of a tenant's definitions of one kind: `P#<tenant>` (policies),
/// `TM#<tenant>` (templates).
pub fn definition_partition(kind: DefinitionKind, tenant: &TenantId) -> String {
    let prefix = match kind {
        DefinitionKind::Policy => POLICY,
        DefinitionKind::Template => TEMPLATE,
        DefinitionKind::BreakerSettings => BREAKER_SETTINGS,
    };
    format!("{prefix}{tenant}")
}

/// A named definition's item: sorted by its name.
pub fn definition(kind: DefinitionKind, tenant: &TenantId, name: &DefinitionName) -> ItemKey {
    ItemKey::new(definition_partition(kind, tenant), name.as_str())
}

/// The partition of a tenant's circuit breakers: `BR#<tenant>`.
pub fn breaker_partition(tenant: &TenantId) -> String {
    format!("{BREAKER}{tenant}")
}

/// A tenant's circuit breaker at a destination: sorted by the destination.
pub fn breaker(tenant: &TenantId, destination: &Destination) -> ItemKey {
    ItemKey::new(breaker_partition(tenant), destination.as_str())
}

/// The partition of a tenant's bulk jobs: `BJ#<tenant>`.
pub fn bulk_job_partition(tenant: &TenantId) -> String {
    format!("{BULK_JOB}{tenant}")
}

/// A tenant's bulk job: sorted by its id, so newest last.
pub fn bulk_job(tenant: &TenantId, id: &BulkJobId) -> ItemKey {
    ItemKey::new(bulk_job_partition(tenant), id.to_string())
}

/// The partition of the markers of running bulk jobs, every tenant's: `BULK`.
pub fn running_jobs_partition() -> &'static str {
    BULK_RUNNING
}

/// A bulk job's marker, kept while it runs.
pub fn running_job(id: &BulkJobId) -> ItemKey {
    ItemKey::new(BULK_RUNNING, id.to_string())
}

/// The partition of a tenant's order keys: `OK#<tenant>`, one item per key (sorted by
/// key), holding the key's last place given.
pub fn order_keys_partition(tenant: &TenantId) -> String {
    format!("{ORDER_KEYS}{tenant}")
}

/// An order key's item in its tenant's partition.
pub fn order_key(tenant: &TenantId, key: &OrderKey) -> ItemKey {
    ItemKey::new(order_keys_partition(tenant), key.as_str())
}

/// The partition of an order key's places: `OL#<tenant>#<key>` (a tenant id has no `#`).
pub fn order_line_partition(tenant: &TenantId, key: &OrderKey) -> String {
    format!("{ORDER_LINE}{tenant}#{key}")
}

/// A place in an order key's line: sorted by its number (20 digits), so the head first.
pub fn order_place(tenant: &TenantId, key: &OrderKey, seq: u64) -> ItemKey {
    ItemKey::new(order_line_partition(tenant, key), format!("{seq:020}"))
}

/// The partition of a tenant's schedules: `S#<tenant>`.
pub fn schedule_partition(tenant: &TenantId) -> String {
    format!("{SCHEDULE}{tenant}")
}

/// A schedule's sort key: its id.
pub fn schedule_sk(id: &ScheduleId) -> String {
    id.to_string()
}

/// A schedule's item.
pub fn schedule(tenant: &TenantId, id: &ScheduleId) -> ItemKey {
    ItemKey::new(schedule_partition(tenant), schedule_sk(id))
}

/// The item naming a key's newest task registered with `on_key: replace`:
/// `K#<tenant>#<key>`, `K`.
pub fn replace_key(tenant: &TenantId, key: &BusinessKey) -> ItemKey {
    ItemKey::new(format!("{REPLACE}{tenant}#{key}"), REPLACE_SK)
}

/// An API key's item: `K#<sha256 hex of the key>`, `KEY` (the key itself is never stored).
pub fn api_key(api_key: &str) -> ItemKey {
    let digest = Sha256::digest(api_key.as_bytes());
    ItemKey::new(format!("{API_KEY}{digest:x}"), API_KEY_SK)
}

/// A tenant's item: `N#<tenant>`, `TENANT` (its secret, alert, limits and partition plan).
pub fn tenant(tenant: &TenantId) -> ItemKey {
    ItemKey::new(format!("{TENANT}{tenant}"), TENANT_SK)
}

// Flows.

/// A flow's partition: `F#<tenant>#<flow key>`.
pub fn flow_partition(tenant: &TenantId, key: &FlowKey) -> String {
    format!("{FLOW}{tenant}#{key}")
}

/// The partition of a tenant's call slots at a destination.
pub fn destination_partition(tenant: &TenantId, destination: &Destination) -> String {
    format!("{DESTINATION}{tenant}#{destination}")
}

/// A flow's rate window starting at `start`: `W#<start, ms>`.
pub fn flow_window(start: DateTime<Utc>) -> String {
    format!("{FLOW_WINDOW}{}", start.timestamp_millis())
}

/// A flow's parallelism slot: `S#<index>`.
pub fn flow_slot(index: u32) -> String {
    format!("{FLOW_SLOTS}{index}")
}

/// The index of a slot's sort key.
pub fn slot_index(sk: &str) -> Option<u32> {
    sk.strip_prefix(FLOW_SLOTS)?.parse().ok()
}

/// A task waiting in a flow: `Q#<task id>`.
pub fn flow_waiting(task: &TaskId) -> String {
    format!("{FLOW_WAITING}{task}")
}

/// The task a waiting item's sort key names.
pub fn waiting_task(sk: &str) -> Option<TaskId> {
    sk.strip_prefix(FLOW_WAITING)?.parse().ok()
}

/// The partition of a tenant's flows: `FL#<tenant>`.
pub fn tenant_flows_partition(tenant: &TenantId) -> String {
    format!("{TENANT_FLOWS}{tenant}")
}

/// A flow the tenant used lately, in its flows partition: `K#<flow key>`.
pub fn flow_seen(key: &FlowKey) -> String {
    format!("{FLOWS_SEEN}{key}")
}

/// The flow a used-lately sort key names.
pub fn seen_flow(sk: &str) -> Option<FlowKey> {
    FlowKey::parse(sk.strip_prefix(FLOWS_SEEN)?).ok()
}

/// A paused flow's item in the tenant's flows partition: `FL#<tenant>`, `P#<flow key>`.
pub fn flow_paused(tenant: &TenantId, key: &FlowKey) -> ItemKey {
    ItemKey::new(
        tenant_flows_partition(tenant),
        format!("{FLOWS_PAUSED}{key}"),
    )
}

/// The flow a paused flow's sort key names.
pub fn paused_flow(sk: &str) -> Option<FlowKey> {
    FlowKey::parse(sk.strip_prefix(FLOWS_PAUSED)?).ok()
}

// Items of the whole table.

/// Where the sweep has read the `due` index up to.
pub fn sweep_checkpoint() -> ItemKey {
    ItemKey::new(CHECKPOINT, CHECKPOINT)
}

/// Where `boomerang aws rearm`'s scan of segment `segment` of `segments` has read to.
pub fn rearm_position(segment: u32, segments: u32) -> ItemKey {
    ItemKey::new(REARM, format!("{segment}/{segments}"))
}

/// The record that a minute's bucket fire is done.
pub fn bucket_fired(minute: DateTime<Utc>) -> ItemKey {
    ItemKey::new(BUCKET_FIRES, minute.timestamp_millis().to_string())
}

/// The record that a minute's bucket schedule exists.
pub fn bucket_scheduled(minute: DateTime<Utc>) -> ItemKey {
    ItemKey::new(
        format!("{BUCKET_SCHEDULE}{}", minute.timestamp_millis()),
        BUCKET_SCHEDULE_SK,
    )
}

/// How far the sweeper has checked that each minute's bucket fired.
pub fn bucket_fires_checked() -> ItemKey {
    ItemKey::new(BUCKET_FIRES, "CHECKED")
}

/// The first part of every task partition's key: what a scan for tasks looks for.
pub(crate) fn task_partition_prefix() -> &'static str {
    TASK
}

/// An item that never exists: what the readiness check reads.
pub fn readiness_probe() -> ItemKey {
    ItemKey::new("READY", "PROBE")
}

// The indexes.

/// Sweep partitions of the `due` index: spreads sweeper reads and hot due-times. While the
/// timer queue refuses sends, every registration writes its unarmed work here: an index
/// partition takes 1,000 writes a second, so 32 take 32,000 (10,000 callbacks a second
/// with room). The count may grow (the sweeper reads every partition there is, and an
/// entry stays in the partition it was written to), never shrink.
pub const DUE_SHARDS: u32 = 32;
/// Entries one sweep pass reads at most from each sweep partition: 32 × 250 = 8,000 a pass.
pub const SWEEP_PAGE: usize = 250;
/// Bucket partitions of the `due` index: an index partition takes 1,000 writes a second,
/// so sixteen take about 16,000 far-future registrations a second (all tenants together).
/// The count may grow (a minute's fire reads every partition there is), never shrink.
pub const BUCKET_SHARDS: u32 = 16;

/// The sweep partition of the `due` index that holds a task's unarmed work: `0`…`31`.
pub fn sweep_shard(id: &TaskId) -> String {
    id.spread(DUE_SHARDS).to_string()
}

/// Every sweep partition of the `due` index.
pub fn sweep_shards() -> impl Iterator<Item = String> {
    (0..DUE_SHARDS).map(|shard| shard.to_string())
}

/// The bucket partition of the `due` index that holds a task's far-future attempts.
pub fn bucket_shard(id: &TaskId) -> u32 {
    id.spread(BUCKET_SHARDS)
}

/// A bucket partition's name: `b<shard>` (the sweep's are bare numbers, so it never reads
/// these).
pub fn bucket_partition(shard: u32) -> String {
    format!("b{shard}")
}

/// Attempt numbers a bucket entry's sort key has room for; the last means "read the task".
const ATTEMPT_SLOTS: i64 = 1 << 20;

/// A bucket entry's sort key: the due time (ms) and the attempt number in one number, so
/// that a bucket's fire learns both from the keys-only entry and need not read the task.
/// An attempt number too large for its slot (a task redriven a thousand times) is stored
/// as "read the task".
pub fn bucket_sort_key(due: DateTime<Utc>, attempt: Attempt) -> i64 {
    let slot = i64::from(attempt.number()).min(ATTEMPT_SLOTS - 1);
    bucket_sort_key_from(due).saturating_add(slot)
}

/// The first sort key of a bucket entry due at or after `t`.
pub fn bucket_sort_key_from(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis().saturating_mul(ATTEMPT_SLOTS)
}

/// The due time (ms) and attempt number a bucket entry's sort key holds; `None` for the
/// attempt when the task must be read for it.
pub fn bucket_entry(sort_key: i64) -> (i64, Option<Attempt>) {
    let (due, slot) = (
        sort_key.div_euclid(ATTEMPT_SLOTS),
        sort_key.rem_euclid(ATTEMPT_SLOTS),
    );
    let attempt = (slot < ATTEMPT_SLOTS - 1).then_some(Attempt::from(slot as u32));
    (due, attempt)
}

/// The `by_key` index's partition of a tenant's business key: `<tenant>#<key>`.
pub fn business_key(tenant: &TenantId, key: &BusinessKey) -> String {
    format!("{tenant}#{key}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn acme() -> TenantId {
        TenantId::parse("acme").unwrap()
    }

    const ID: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

    /// The strings existing tables hold: a change here would lose every stored item.
    #[test]
    fn keys_are_the_stored_format() {
        let id: TaskId = ID.parse().unwrap();
        let key = |k: ItemKey| (k.pk, k.sk);
        assert_eq!(task_partition(&acme(), 10), "T#acme#a");
        assert_eq!(task_partition(&acme(), 255), "T#acme#ff");
        assert_eq!(key(task("T#acme#a", &id)), ("T#acme#a".into(), ID.into()));
        assert_eq!(
            key(attempt("T#acme#a", &id, 11)),
            ("T#acme#a".into(), format!("{ID}#A#0000000011"))
        );
        assert_eq!(
            key(idempotency(&acme(), "order-42")),
            ("I#acme#order-42".into(), "I".into())
        );
        let name = DefinitionName::parse("default").unwrap();
        assert_eq!(
            key(definition(DefinitionKind::Policy, &acme(), &name)),
            ("P#acme".into(), "default".into())
        );
        assert_eq!(
            key(definition(DefinitionKind::Template, &acme(), &name)),
            ("TM#acme".into(), "default".into())
        );
        let schedule_id: ScheduleId = ScheduleId::new();
        assert_eq!(
            key(schedule(&acme(), &schedule_id)),
            ("S#acme".into(), schedule_id.to_string())
        );
        let business = BusinessKey::parse("order-42").unwrap();
        assert_eq!(
            key(replace_key(&acme(), &business)),
            ("K#acme#order-42".into(), "K".into())
        );
        assert_eq!(
            key(api_key("bk_secret")),
            (
                format!("K#{:x}", Sha256::digest(b"bk_secret")),
                "KEY".into()
            )
        );
        assert_eq!(key(tenant(&acme())), ("N#acme".into(), "TENANT".into()));
        let flow = FlowKey::parse("hooks.example.com").unwrap();
        assert_eq!(flow_partition(&acme(), &flow), "F#acme#hooks.example.com");
        let window = Utc.timestamp_millis_opt(1_700_000_000_123).unwrap();
        assert_eq!(flow_window(window), "W#1700000000123");
        assert_eq!(flow_slot(3), "S#3");
        assert_eq!(flow_waiting(&id), format!("Q#{ID}"));
        assert_eq!(tenant_flows_partition(&acme()), "FL#acme");
        assert_eq!(flow_seen(&flow), "K#hooks.example.com");
        assert_eq!(
            key(flow_paused(&acme(), &flow)),
            ("FL#acme".into(), "P#hooks.example.com".into())
        );
        assert_eq!(key(sweep_checkpoint()), ("SWEEP".into(), "SWEEP".into()));
        assert_eq!(key(readiness_probe()), ("READY".into(), "PROBE".into()));
        assert_eq!(sweep_shard(&id), id.spread(32).to_string());
        let shards: Vec<String> = sweep_shards().collect();
        assert_eq!(shards.len(), 32);
        assert_eq!((shards[0].as_str(), shards[31].as_str()), ("0", "31"));
        assert_eq!(bucket_partition(15), "b15");
        assert_eq!(business_key(&acme(), &business), "acme#order-42");
    }

    #[test]
    fn keys_read_back_to_their_parts() {
        let id: TaskId = ID.parse().unwrap();
        let tenant = acme();
        let pk = task_partition(&tenant, 7);
        assert_eq!(partition_tenant(&pk), Some(tenant));
        assert_eq!(sk_task(&task_sk(&id)), Some(id));
        assert_eq!(sk_task(&attempt_sk(&id, 12)), Some(id));
        assert!(is_attempt_sk(&attempt_sk(&id, 12)));
        assert!(!is_attempt_sk(&task_sk(&id)));
        assert_eq!(partition_tenant("N#acme"), None);
        assert_eq!(sk_task("K"), None);
        assert_eq!(slot_index(&flow_slot(41)), Some(41));
        assert_eq!(slot_index(&flow_waiting(&id)), None);
        assert_eq!(waiting_task(&flow_waiting(&id)), Some(id));
        let flow = FlowKey::parse("hooks.example.com").unwrap();
        assert_eq!(seen_flow(&flow_seen(&flow)), Some(flow.clone()));
        assert_eq!(paused_flow(&flow_paused(&acme(), &flow).sk), Some(flow));
        let key = idempotency(&acme(), "k");
        assert_eq!(ItemKey::of(&key.to_item()), Some(key));
    }

    #[test]
    fn a_bucket_sort_key_holds_the_due_time_and_the_attempt_in_order() {
        let due = Utc.with_ymd_and_hms(2031, 12, 31, 23, 59, 59).unwrap()
            + chrono::Duration::milliseconds(999);
        for number in [0, 1, 7, 999, 1000, (1 << 20) - 2] {
            let attempt = Attempt::from(number);
            let key = bucket_sort_key(due, attempt);
            assert_eq!(bucket_entry(key), (due.timestamp_millis(), Some(attempt)));
            assert!(key >= bucket_sort_key_from(due));
            assert!(key < bucket_sort_key_from(due + chrono::Duration::milliseconds(1)));
        }
        for too_many in [(1 << 20) - 1, 1 << 20, u32::MAX] {
            assert_eq!(
                bucket_entry(bucket_sort_key(due, Attempt::Delivery(too_many))),
                (due.timestamp_millis(), None),
                "read the task"
            );
        }
        let earlier = due - chrono::Duration::milliseconds(1);
        assert!(
            bucket_sort_key(earlier, Attempt::Delivery(u32::MAX))
                < bucket_sort_key(due, Attempt::Check)
        );
        // The stored number for one known instant and attempt.
        let at = Utc.timestamp_millis_opt(1_700_000_000_000).unwrap();
        assert_eq!(
            bucket_sort_key(at, Attempt::Delivery(3)),
            1_700_000_000_000 * (1 << 20) + 3
        );
    }
}
