//! Tenant directories: who an API key belongs to, and each tenant's signing secret. The
//! local binary has one key and one tenant (kept in the data directory); on AWS tenants
//! and hashed keys live in the table.

pub mod credentials;
pub mod dynamodb;
pub mod static_key;

pub use dynamodb::DynamoTenants;
pub use static_key::StaticTenants;
