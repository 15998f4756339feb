//! The engine's ports: what it needs from the outside world, as traits, one small trait
//! per capability. None has a method that silently does nothing: a capability an adapter
//! lacks is absent from its type, and the engine takes such a capability as an `Option`.
//!
//! Each has an embedded adapter (local binary, tests) and an AWS adapter; the engine cannot
//! tell them apart.

mod breakers;
mod bulk_jobs;
mod cause;
mod dead_letters;
mod definitions;
mod destination_slots;
mod flows;
mod order_keys;
mod process_flows;
mod readiness;
mod schedules;
mod slow_lane;
mod spans;
mod store;
mod tenants;
mod timer;
mod webhooks;

pub use breakers::{Breakers, StoredBreaker};
pub use bulk_jobs::{BulkJobs, JOBS_LISTED};
pub use cause::Cause;
pub use dead_letters::{DeadLetterError, DeadLetters};
pub use definitions::{Definition, DefinitionKind, Definitions};
pub use destination_slots::DestinationSlots;
pub use flows::{FlowCounters, FlowFigures, FlowPauses, FlowPorts, SlotHolder};
pub use order_keys::{OrderKeyState, OrderKeys, ORDER_KEYS_LISTED};
pub use process_flows::ProcessFlowCounters;
pub use readiness::{Failing, Readiness, RecentAnswer};
pub use schedules::{KeyedTasks, SchedulePage, ScheduleStore};
pub use slow_lane::SlowLane;
pub use spans::SpanExport;
pub use store::{
    CreateOutcome, DueWork, ListQuery, Page, Retention, StatusCounts, StoreError, SweepIndex,
    SweepMark, TaskStore,
};
pub use tenants::{ReplaceSecretsError, SigningKeys, Tenants, TenantsError};
pub use timer::{Timer, TimerError};
pub use webhooks::{WebhookCall, WebhookError, WebhookResult, Webhooks};
