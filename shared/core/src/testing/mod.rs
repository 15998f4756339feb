//! Test doubles for the engine's ports (an in-memory store and dead letters, a recording
//! timer; the manual clock is in [`crate::clock`]) and the contracts every [`crate::ports::TaskStore`] and
//! [`crate::ports::Timer`] adapter must honour, as suites that each adapter's tests run.
//! Tenants are unique per run, so the suites can share a table with other tests.

mod due_suite;
mod fixtures;
pub mod flow_contract;
pub mod harness;
mod list_suite;
mod memory_dead_letters;
mod memory_destination_slots;
mod memory_slow_lane;
mod memory_store;
mod memory_tenants;
mod recording_timer;
pub mod schedules;
mod store_suite;
mod timer_suite;

pub use fixtures::{plain_spec, sample_task, unique_tenant, AlwaysReady, ContractStore};
pub use memory_dead_letters::MemoryDeadLetters;
pub use memory_destination_slots::MemoryDestinationSlots;
pub use memory_slow_lane::MemorySlowLane;
pub use memory_store::MemoryStore;
pub use memory_tenants::MemoryTenants;
pub use recording_timer::RecordingTimer;
pub use store_suite::{reads_are_snapshots, store_atomicity_contract, store_contract};
pub use timer_suite::{timer_contract, TimerProbe};
