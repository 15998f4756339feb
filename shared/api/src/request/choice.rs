//! `#[serde(with = "choice")]` for an optional choice: absent or `null` is `None`; any
//! other text than a choice's name is refused as [`Choice::must_be`] says.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::text::Choice;

pub fn serialize<C: Choice, S: Serializer>(value: &Option<C>, s: S) -> Result<S::Ok, S::Error> {
    value.map(C::name).serialize(s)
}

pub fn deserialize<'de, C: Choice, D: Deserializer<'de>>(de: D) -> Result<Option<C>, D::Error> {
    match Option::<String>::deserialize(de)? {
        None => Ok(None),
        Some(text) => C::parse(&text)
            .map(Some)
            .ok_or_else(|| D::Error::custom(C::must_be())),
    }
}
