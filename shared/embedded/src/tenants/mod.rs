//! The local binary's tenant directory: one API key and one tenant, kept in the data
//! directory.

pub mod credentials;
pub mod static_key;

pub use static_key::{SecretsKept, StaticTenants};
