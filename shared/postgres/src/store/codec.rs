//! How the store keeps documents: JSON text, with failures as store errors.

use boomerang_core::ports::StoreError;

pub(crate) fn encode<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.into()))
}

pub(crate) fn decode<T: serde::de::DeserializeOwned>(doc: &str) -> Result<T, StoreError> {
    serde_json::from_str(doc).map_err(|e| StoreError::Corrupt(e.into()))
}
