//! The DynamoDB task store: one table, every state change a conditional write, every item
//! laid out so that a write costs as few units as it can ([`item`]). The items' keys are
//! [`crate::keys`]'s; what the items hold is [`crate::attr`]'s.
//!
//! - a task and its attempt records ([`tasks`]) live in one of the tenant's task
//!   partitions (16 unless its plan says otherwise: [`crate::shards`]), so the id and its
//!   tenant find the task, and a tenant's tasks are listed from its partitions, newest
//!   first, without an index ([`list`]); a later attempt record sorts right after its task,
//!   so one query reads both;
//! - an idempotency key's item names its task and holds a copy of it ([`idempotency`]);
//! - named policies and templates ([`definitions`]), schedules and the newest task of each replace key
//!   ([`schedules`]);
//! - bulk jobs, and a marker for each running one ([`bulk_jobs`]);
//! - order keys: each key's last place given, and its places held ([`order_keys`]);
//! - the sweep's checkpoint ([`sweep`]), and which minutes' bucket fires are done
//!   ([`minutes`]); `aws rearm` keeps its own positions (`crate::rearm`).
//!
//! Indexes, both keys only and sparse:
//! - `due` (sharded): `ds` + `dm`, set while the task has work no durable timer holds (the
//!   sweep reads it from a checkpoint), or an attempt left to its minute's bucket (the
//!   bucket's fire reads that minute: [`buckets`]);
//! - `by_key`: `bk` (tenant and business key) + `sk` (the task id, so newest first), set
//!   only on tasks that have a key.
//!
//! Finished tasks get `x` (TTL). DynamoDB deletes expired items only eventually, so every
//! read also ignores them ([`table`]).
//!
//! The submodules use one another and [`table`], never this module: it only gathers them.

mod breakers;
mod buckets;
mod bulk_jobs;
mod definitions;
mod due_entry;
mod idempotency;
pub mod item;
mod list;
mod minutes;
mod order_keys;
mod schedules;
mod sweep;
mod table;
mod tasks;

pub use buckets::BucketPage;
pub use idempotency::IDEMPOTENCY_WINDOW;
pub use table::DynamoStore;
