//! The AWS backend: the engine's ports on DynamoDB, EventBridge Scheduler and SQS, and the
//! layer that drives the engine from Lambda events. The engine never sees any of these
//! types.
//!
//! Modules, bottom up, in layers: a module uses only modules of the layers before its own
//! (and, within a layer, none of its neighbours unless said). A module with submodules only
//! gathers them: its submodules use one another, never it.
//!
//! 1. What the table, the environment and the messages are, as data:
//!    - `attr`: the table's attribute names and layout (the stack builds the table from
//!      it); `capacity`: DynamoDB's unit arithmetic, for the cost meter; `settings`: where
//!      the resources are, from the environment; `plan`: how a wait is carried (the
//!      queue, or a minute's bucket);
//!    - `keys`: every item's and index entry's key, from typed parts (uses `attr`);
//!    - `messages`: what the timer queue and a bucket's schedule carry (uses `keys`);
//!    - `metric_lines`: the engine's events as the lines the stack's metric filters read.
//! 2. `sdk`: the SDK configuration and the helpers the adapters share (`sdk::items` reads
//!    and writes items by their `keys`); then `shards`: a tenant's partition plan, kept on
//!    its tenant item.
//! 3. The adapters, one per port, none using another: `store` (DynamoDB), `timer`
//!    (Scheduler + SQS), `dead_letters` (SQS), `tenants` (DynamoDB), `flows` (DynamoDB),
//!    `readiness` (DynamoDB).
//! 4. What works across adapters: `buckets` (a bucket's fire: the store's entries armed
//!    through the timer), `system_failures` (the sweeper's redrive into the timer queue).
//! 5. `lambda`: the functions' event handling (`lambda::events`: the delivery event, read
//!    once into types).
//! 6. `backend`: the adapters wired to an engine, and the delivery handler on them; then
//!    `rearm`: every unfinished task's work armed again from the table (uses `backend`).
//! 7. What starts a backend: `lambda::start` (a function's start-up), `triggers` (the
//!    emulators' stand-in for Scheduler and the SQS event source mapping), `bootstrap`
//!    (creates the resources on an emulator).
//!
//! `scripts/module-cycles.py` checks that no module imports one that imports it back.

pub mod attr;
pub mod backend;
pub mod bootstrap;
pub mod bucket_schedules;
pub mod buckets;
pub mod capacity;
pub mod dead_letters;
pub mod flows;
pub mod keys;
pub mod lambda;
pub mod messages;
pub mod metric_lines;
pub mod plan;
pub mod readiness;
pub mod rearm;
pub mod sdk;
pub mod settings;
pub mod shards;
pub mod slow_lane;
pub mod store;
pub mod system_failures;
pub mod tenants;
pub mod timer;
pub mod triggers;

pub use aws_config::SdkConfig;
pub use aws_sdk_dynamodb::Client as DynamoClient;
pub use backend::{AwsBackend, AwsBackendConfig, AwsClients};
pub use dead_letters::SqsDeadLetters;
pub use sdk::{emulator_config, is_loopback_endpoint, sdk_config};
pub use settings::{AwsSettings, SettingsError};
pub use store::DynamoStore;
pub use tenants::DynamoTenants;
pub use timer::AwsTimer;
