//! The AWS backend: the engine's ports on DynamoDB, EventBridge Scheduler and SQS, and the
//! layer that drives the engine from Lambda events. The engine never sees any of these
//! types. Modules, bottom up (each uses only those above it in this list):
//!
//! - `attr`: the table's attribute names and layout (the stack builds the table from it);
//! - `settings`: where the resources are, from the environment;
//! - `sdk`: the SDK configuration and helpers shared by the adapters;
//! - the adapters, one per port: `store` (DynamoDB), `timer` (Scheduler + SQS),
//!   `dead_letters` (SQS), `tenants` (DynamoDB);
//! - `bootstrap`: creates the resources on an emulator; `capacity`: DynamoDB's unit
//!   arithmetic, for the cost meter;
//! - `backend`: the adapters wired to an engine;
//! - `lambda`: the functions' event handling and start-up; `system_failures` and
//!   `triggers` (the emulators' stand-in for Scheduler and the SQS event source mapping).

pub mod attr;
pub mod backend;
pub mod bootstrap;
pub mod buckets;
pub mod capacity;
pub mod dead_letters;
pub mod flows;
pub mod lambda;
pub mod readiness;
pub mod sdk;
pub mod settings;
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
