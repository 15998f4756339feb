//! `boomerang aws rearm`: arms again the pending work of every unfinished task in the
//! table, for when the timers that held it are gone (a deleted or purged timer queue or
//! schedule group, a table restored from a backup). Arming what a timer still holds is
//! harmless: the attempt is claimed once, whoever fires it.
//!
//! What it reads, in units read side by side, each page's work armed together (ten to a
//! queue request) before the unit's position is saved, so that a run that stops, or meets
//! a failure, is resumed by running it again (within a day: positions expire, and a later
//! run reads again from the start):
//!
//! 1. The `due` index, every partition (the sweep's and the buckets'), and the tasks its
//!    entries name. An entry is left in place when its task moves on, so the index names
//!    every task that ever had work no durable timer held, or a wait long enough for a
//!    minute's bucket: all far-future work (what a lost schedule group loses), all unarmed
//!    work, and every task that came back from a bucket or the sweep to the timer queue.
//! 2. Tasks that never had an entry: every wait they had went through the timer queue
//!    (each under 14 minutes). No index names them, so they are read from the tasks
//!    themselves, skipping every task the index part read: either a parallel scan of the
//!    table (the default), or, for the tenants named, their task partitions by key range
//!    from a time on (a task's sort key is its id, which begins with its creation time):
//!    an index entry per task would cost a write unit per registration, a sixth of a
//!    callback's price.
//!
//! `since` leaves out index entries due before it (their tasks are armed by the second
//! part instead, if it reads them) and, in the tenants' partitions, tasks created before
//! it. With a tenant's range, a task is then missed only if it was created before `since`
//! and every wait it has had since then went through the timer queue; the scan misses
//! nothing.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};

use crate::attr;
use crate::backend::AwsBackend;
use crate::keys::{self, ItemKey};
use crate::sdk::items::{get_item, get_n, n, s, Item};
use crate::sdk::sdk_failure;
use crate::store::item::task_from;
use boomerang_core::domain::{PendingWork, TenantId};
use boomerang_core::engine::{EngineError, SweepReport};
use boomerang_core::ports::StoreError;

/// How long a unit's saved position is kept.
const POSITION_KEPT: chrono::Duration = chrono::Duration::hours(24);
/// The `segments` part of the position key of the index's and the tenants' units: a scan
/// never runs in zero segments, so the two kinds of position never share a key.
const UNIT_POSITIONS: u32 = 0;
/// What the `due` index's bucket partitions begin with ([`keys::bucket_partition`]; the
/// sweep's are bare numbers).
const BUCKET_PARTITIONS: &str = "b";

/// How a run reads the table.
#[derive(Clone, Debug)]
pub struct RearmSettings {
    /// Units (index partitions, tenant partitions, scan segments) read side by side
    /// (1–1,000); also the scan's segment count (its saved positions belong to this count:
    /// a run with another count scans again from the start).
    pub segments: u32,
    /// Entries or items one read of a unit takes (1–1,000).
    pub page: i32,
    /// Forget the saved positions and read everything again.
    pub restart: bool,
    /// Leave out index entries due, and tasks created, before this.
    pub since: Option<DateTime<Utc>>,
    /// How tasks that never had an index entry are found.
    pub queue_held: QueueHeld,
}

/// How tasks whose every wait went through the timer queue are found.
#[derive(Clone, Debug)]
pub enum QueueHeld {
    /// A parallel scan of the whole table: complete, and as long as the table is large.
    Scan,
    /// These tenants' task partitions, from `since` on: only their tasks.
    Tenants(Vec<TenantId>),
    /// Not at all (the timer queue is intact: only the schedules, or the sweep's, are lost).
    Skip,
}

/// What one page of a unit did.
#[derive(Clone, Debug)]
pub struct PageDone {
    /// The unit: `due 3`, `due b7` (an index partition), `T#acme#a` (a tenant partition),
    /// `scan 2/8` (a scan segment).
    pub unit: String,
    /// Index entries or items read.
    pub read: usize,
    /// Task items that could not be read, passed over (and logged).
    pub unreadable: usize,
    pub report: SweepReport,
    /// The unit has been read to its end.
    pub finished: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RearmError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Some work of a page could not be armed: its position was not saved, so running
    /// again arms that page again.
    #[error("{unit}: some work could not be armed; run again to resume")]
    NotArmed { unit: String },
}

impl From<StoreError> for RearmError {
    fn from(e: StoreError) -> Self {
        RearmError::Engine(EngineError::from(e))
    }
}

/// One thing a run reads to its end.
#[derive(Clone, Debug)]
enum Unit {
    /// A partition of the `due` index (`ds`).
    Index(String),
    /// A tenant's task partition (`pk`).
    Tenant(String),
    /// A segment of the table scan.
    Scan { segment: u32, segments: u32 },
}

impl Unit {
    fn name(&self) -> String {
        match self {
            Unit::Index(ds) => format!("due {ds}"),
            Unit::Tenant(pk) => pk.clone(),
            Unit::Scan { segment, segments } => format!("scan {segment}/{segments}"),
        }
    }

    /// Where the unit's position is kept: index and tenant units by their place in the
    /// run's list (the unit's name is kept with it, and checked), scan segments by their
    /// number and count.
    fn position_key(&self, place: u32) -> ItemKey {
        match self {
            Unit::Scan { segment, segments } => keys::rearm_position(*segment, *segments),
            _ => keys::rearm_position(place, UNIT_POSITIONS),
        }
    }
}

/// Where a unit is.
#[derive(Clone, Debug, PartialEq)]
enum Position {
    /// From the unit's start, or after this key (a read's exclusive start key).
    From(Option<Item>),
    Done,
}

/// Runs every unit to its end (or to its first failure), telling `done` of each page.
/// `client` reads the table the backend's store writes.
pub async fn rearm(
    backend: &AwsBackend,
    client: &Client,
    settings: RearmSettings,
    done: &(dyn Fn(PageDone) + Sync),
) -> Result<SweepReport, RearmError> {
    // The schedules may be gone with the timers: each minute's is made again.
    backend.timer.ignore_schedule_records();
    let reader = Reader {
        backend,
        client,
        table: &backend.settings.table,
        settings: &settings,
    };
    let units = reader.units().await?;
    if settings.restart {
        for (place, unit) in units.iter().enumerate() {
            reader.forget(&unit.position_key(place as u32)).await?;
        }
    }
    let runs =
        (units.iter().enumerate()).map(|(place, unit)| reader.run_unit(place as u32, unit, done));
    let mut total = SweepReport::default();
    let mut results = stream::iter(runs).buffer_unordered(settings.segments.max(1) as usize);
    let mut first_error = None;
    while let Some(result) = results.next().await {
        match result {
            Ok(report) => total += report,
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(total),
    }
}

struct Reader<'a> {
    backend: &'a AwsBackend,
    client: &'a Client,
    table: &'a str,
    settings: &'a RearmSettings,
}

/// One page of a unit: the pending work of the unfinished tasks on it.
struct Page {
    work: Vec<PendingWork>,
    read: usize,
    unreadable: usize,
    next: Position,
}

impl Reader<'_> {
    /// The index's partitions first (the far-future and unarmed work), then what finds the
    /// queue-held tasks.
    async fn units(&self) -> Result<Vec<Unit>, RearmError> {
        let mut units: Vec<Unit> = (keys::sweep_shards())
            .chain((0..keys::BUCKET_SHARDS).map(keys::bucket_partition))
            .map(Unit::Index)
            .collect();
        match &self.settings.queue_held {
            QueueHeld::Scan => {
                units.extend((0..self.settings.segments).map(|segment| Unit::Scan {
                    segment,
                    segments: self.settings.segments,
                }))
            }
            QueueHeld::Tenants(tenants) => {
                for tenant in tenants {
                    let plan = self.backend.store.shard_plan(tenant).await?;
                    units.extend(
                        (0..plan.partitions())
                            .map(|shard| Unit::Tenant(keys::task_partition(tenant, shard))),
                    );
                }
            }
            QueueHeld::Skip => {}
        }
        Ok(units)
    }

    async fn run_unit(
        &self,
        place: u32,
        unit: &Unit,
        done: &(dyn Fn(PageDone) + Sync),
    ) -> Result<SweepReport, RearmError> {
        let key = unit.position_key(place);
        let mut total = SweepReport::default();
        loop {
            let Position::From(after) = self.position(&key, unit).await? else {
                return Ok(total);
            };
            let page = match unit {
                Unit::Index(ds) => self.index_page(ds, after).await?,
                Unit::Tenant(pk) => self.tenant_page(pk, after).await?,
                Unit::Scan { segment, segments } => {
                    self.scan_page(*segment, *segments, after).await?
                }
            };
            let (report, all_armed) = self.backend.engine.repair(page.work).await?;
            if !all_armed {
                return Err(RearmError::NotArmed { unit: unit.name() });
            }
            self.save(&key, unit, &page.next).await?;
            total += report;
            done(PageDone {
                unit: unit.name(),
                read: page.read,
                unreadable: page.unreadable,
                report,
                finished: page.next == Position::Done,
            });
        }
    }

    /// A page of index entries from `after`, and the unfinished tasks they name.
    async fn index_page(&self, ds: &str, after: Option<Item>) -> Result<Page, RearmError> {
        let mut query = (self.client.query())
            .table_name(self.table)
            .index_name(attr::DUE_INDEX)
            .expression_attribute_values(":p", s(ds))
            .set_exclusive_start_key(after)
            .limit(self.settings.page);
        // A bucket entry's sort key holds its attempt number below the due time.
        let from = self
            .settings
            .since
            .map(|t| match ds.starts_with(BUCKET_PARTITIONS) {
                true => keys::bucket_sort_key_from(t),
                false => t.timestamp_millis(),
            });
        query = match from {
            Some(from) => query
                .key_condition_expression(format!(
                    "{} = :p AND {} >= :f",
                    attr::DUE_SHARD,
                    attr::DUE_AT
                ))
                .expression_attribute_values(":f", n(from)),
            None => query.key_condition_expression(format!("{} = :p", attr::DUE_SHARD)),
        };
        let out = query.send().await.map_err(unavailable)?;
        let keys: Vec<ItemKey> = out.items().iter().filter_map(ItemKey::of).collect();
        // Eventually consistent, as the sweep reads them: a task armed on a state a
        // moment old is armed harmlessly.
        let items = self.backend.store.batch_items(keys).await?;
        let (work, unreadable) = unfinished(items.iter().filter(|i| !finished(i)));
        Ok(Page {
            work,
            read: out.items().len(),
            unreadable,
            next: next(out.last_evaluated_key),
        })
    }

    /// What the tenants' ranges and the scan arm: unfinished tasks that the index part
    /// did not read, those with no entry, or (with `since`) with an entry due before it.
    /// Its names and values go with it.
    fn not_in_index<B: FilterNames>(&self, mut read: B, filter: String) -> B {
        read = read
            .names("#st", attr::STATUS)
            .names("#x", attr::EXPIRES)
            .names("#ds", attr::DUE_SHARD);
        let not_read = match self.settings.since {
            None => "attribute_not_exists(#ds)".to_string(),
            Some(since) => {
                read = read
                    .names("#dm", attr::DUE_AT)
                    .values(":b", s(BUCKET_PARTITIONS))
                    .values(":bf", n(keys::bucket_sort_key_from(since)))
                    .values(":sf", n(since.timestamp_millis()));
                "(attribute_not_exists(#ds) OR (begins_with(#ds, :b) AND #dm < :bf) \
                 OR (NOT begins_with(#ds, :b) AND #dm < :sf))"
                    .to_string()
            }
        };
        read.filter(format!("{filter}{UNFINISHED_FILTER} AND {not_read}"))
    }

    /// A page of a tenant partition's unfinished tasks (created since `since`) that the
    /// index part did not read.
    async fn tenant_page(&self, pk: &str, after: Option<Item>) -> Result<Page, RearmError> {
        let query = (self.client.query())
            .table_name(self.table)
            .expression_attribute_values(":p", s(pk))
            .set_exclusive_start_key(after)
            .limit(self.settings.page);
        let mut query = self.not_in_index(query, String::new());
        query = match self.settings.since {
            Some(since) => query
                .key_condition_expression(format!("{} = :p AND {} >= :f", attr::PK, attr::SK))
                .expression_attribute_values(":f", s(first_id_from(since))),
            None => query.key_condition_expression(format!("{} = :p", attr::PK)),
        };
        let out = query.send().await.map_err(unavailable)?;
        let (work, unreadable) = unfinished(out.items().iter());
        Ok(Page {
            work,
            read: out.scanned_count() as usize,
            unreadable,
            next: next(out.last_evaluated_key),
        })
    }

    /// A page of a scan segment: unfinished tasks the index part did not read.
    async fn scan_page(
        &self,
        segment: u32,
        segments: u32,
        after: Option<Item>,
    ) -> Result<Page, RearmError> {
        let scan = (self.client.scan())
            .table_name(self.table)
            .segment(segment as i32)
            .total_segments(segments as i32)
            .limit(self.settings.page)
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_values(":t", s(keys::task_partition_prefix()))
            .set_exclusive_start_key(after);
        let scan = self.not_in_index(scan, "begins_with(#pk, :t) AND ".to_string());
        let out = scan.send().await.map_err(unavailable)?;
        let (work, unreadable) = unfinished(out.items().iter());
        Ok(Page {
            work,
            read: out.scanned_count() as usize,
            unreadable,
            next: next(out.last_evaluated_key),
        })
    }

    /// A unit's saved position (its start if none is saved, or if the position saved
    /// there belongs to another unit: a run over other tenants).
    async fn position(&self, key: &ItemKey, unit: &Unit) -> Result<Position, RearmError> {
        let item = get_item(self.client, self.table, key, true)
            .await
            .map_err(StoreError::Unavailable)?;
        // DynamoDB removes expired items late: an expired position is no position.
        let live =
            |item: &Item| get_n(item, attr::EXPIRES).map_or(true, |x| x > Utc::now().timestamp());
        let Some(item) = item.filter(live) else {
            return Ok(Position::From(None));
        };
        let part = |name| item.get(name).and_then(|v| v.as_s().ok());
        if part(attr::rearm::AFTER_PK).map(String::as_str) != Some(unit.name().as_str()) {
            return Ok(Position::From(None));
        }
        if item.contains_key(attr::rearm::DONE) {
            return Ok(Position::Done);
        }
        Ok(Position::From(
            part(attr::rearm::AFTER_SK).and_then(|k| start_key_from(k)),
        ))
    }

    /// Saves a unit's position (after the page its work was armed from).
    async fn save(
        &self,
        key: &ItemKey,
        unit: &Unit,
        position: &Position,
    ) -> Result<(), RearmError> {
        let expires = (Utc::now() + POSITION_KEPT).timestamp();
        let mut put = (self.client.put_item())
            .table_name(self.table)
            .set_item(Some(key.to_item()))
            .item(attr::EXPIRES, n(expires))
            .item(attr::rearm::AFTER_PK, s(unit.name()));
        match position {
            Position::Done => put = put.item(attr::rearm::DONE, AttributeValue::Bool(true)),
            Position::From(Some(after)) => {
                put = put.item(attr::rearm::AFTER_SK, s(start_key_text(after)))
            }
            Position::From(None) => {}
        }
        put.send().await.map_err(unavailable)?;
        Ok(())
    }

    async fn forget(&self, key: &ItemKey) -> Result<(), RearmError> {
        (self.client.delete_item())
            .table_name(self.table)
            .set_key(Some(key.to_item()))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}

/// Task items (not attempt records or other items), unfinished (a finished task has an
/// expiry).
const UNFINISHED_FILTER: &str = "attribute_exists(#st) AND attribute_not_exists(#x)";

/// A query's or a scan's filter, with the names and values it uses.
trait FilterNames: Sized {
    fn names(self, name: &str, attribute: &str) -> Self;
    fn values(self, name: &str, value: AttributeValue) -> Self;
    fn filter(self, expression: String) -> Self;
}

macro_rules! filter_names {
    ($builder:ty) => {
        impl FilterNames for $builder {
            fn names(self, name: &str, attribute: &str) -> Self {
                self.expression_attribute_names(name, attribute)
            }
            fn values(self, name: &str, value: AttributeValue) -> Self {
                self.expression_attribute_values(name, value)
            }
            fn filter(self, expression: String) -> Self {
                self.filter_expression(expression)
            }
        }
    };
}

filter_names!(aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder);
filter_names!(aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder);

fn unavailable<E: std::error::Error + Send + Sync + 'static>(e: E) -> RearmError {
    StoreError::Unavailable(sdk_failure(e)).into()
}

/// Whether a task item is finished: it has an expiry.
fn finished(item: &Item) -> bool {
    item.contains_key(attr::EXPIRES)
}

/// The pending work of these task items, and how many could not be read.
fn unfinished<'a>(items: impl Iterator<Item = &'a Item>) -> (Vec<PendingWork>, usize) {
    let (mut work, mut unreadable) = (Vec::new(), 0);
    for item in items {
        match task_from(item) {
            Ok(task) => work.extend(task.pending_work()),
            Err(e) => {
                // One bad item must not stop the unit for good: it is left for an
                // operator, and the rest is armed.
                tracing::warn!(key = ?ItemKey::of(item), error = %e, "unreadable task item passed over");
                unreadable += 1;
            }
        }
    }
    (work, unreadable)
}

fn next(last: Option<Item>) -> Position {
    match last {
        Some(key) => Position::From(Some(key)),
        None => Position::Done,
    }
}

/// The smallest task id (a ULID: 48 bits of milliseconds, then 80 random bits, in
/// Crockford's base 32) made at or after `t`: where a partition's tasks created since
/// `t` begin, in sort-key order.
fn first_id_from(t: DateTime<Utc>) -> String {
    const DIGITS: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let ms = t.timestamp_millis().clamp(0, (1 << 48) - 1) as u64;
    let time: String = (0..10)
        .rev()
        .map(|i| DIGITS[((ms >> (5 * i)) & 31) as usize] as char)
        .collect();
    format!("{time}{}", "0".repeat(16))
}

/// A read's exclusive start key as the text a position keeps: its string and number
/// attributes (every key attribute of the table and its indexes is one or the other).
fn start_key_text(key: &Item) -> String {
    let parts: HashMap<&str, (&str, &str)> = (key.iter())
        .filter_map(|(name, value)| match value {
            AttributeValue::S(v) => Some((name.as_str(), ("S", v.as_str()))),
            AttributeValue::N(v) => Some((name.as_str(), ("N", v.as_str()))),
            _ => None,
        })
        .collect();
    serde_json::to_string(&parts).unwrap_or_default()
}

fn start_key_from(text: &str) -> Option<Item> {
    let parts: HashMap<String, (String, String)> = serde_json::from_str(text).ok()?;
    (parts.into_iter())
        .map(|(name, (kind, value))| match kind.as_str() {
            "S" => Some((name, AttributeValue::S(value))),
            "N" => Some((name, AttributeValue::N(value))),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use boomerang_core::domain::TaskId;

    #[test]
    fn the_first_id_from_an_instant_sorts_before_every_id_made_from_it_and_after_earlier_ones() {
        let at = Utc::now();
        let from = first_id_from(at);
        let id = TaskId::new();
        assert!(id.created_at() >= at - chrono::Duration::milliseconds(1));
        let earlier = first_id_from(at - chrono::Duration::milliseconds(2));
        assert!(earlier < from);
        assert!(keys::task_sk(&id) >= first_id_from(id.created_at()));
        assert!(
            keys::task_sk(&id) < first_id_from(id.created_at() + chrono::Duration::milliseconds(1))
        );
        assert_eq!(from.len(), 26);
    }

    #[test]
    fn bucket_partitions_and_only_they_begin_with_the_prefix() {
        assert!((0..keys::BUCKET_SHARDS)
            .all(|shard| keys::bucket_partition(shard).starts_with(BUCKET_PARTITIONS)));
        assert!(keys::sweep_shards().all(|shard| !shard.starts_with(BUCKET_PARTITIONS)));
    }

    #[test]
    fn a_start_key_reads_back_as_it_was() {
        let key = Item::from([
            (attr::DUE_SHARD.to_string(), s("b3")),
            (attr::DUE_AT.to_string(), n(1_700_000_000_000i64 << 20)),
            (attr::PK.to_string(), s("T#acme#a")),
            (attr::SK.to_string(), s("01ARZ3NDEKTSV4RRFFQ69G5FAV")),
        ]);
        assert_eq!(start_key_from(&start_key_text(&key)), Some(key));
    }
}
