//! The schemas the derives cannot say by themselves: maps with bounds, and the domain's
//! enums as the API writes them.

use std::borrow::Cow;

use utoipa::openapi::schema::{Array, ArrayBuilder, Object, ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use boomerang_core::domain::limits::{
    MAX_HEADERS, MAX_METADATA_ENTRIES, MAX_METADATA_KEY, MAX_METADATA_VALUE, PERMANENT_STATUSES,
};

/// `headers` as the OpenAPI document shows it: at most [`MAX_HEADERS`] string values.
pub(crate) fn headers_schema() -> Object {
    string_map(MAX_HEADERS, None)
        .description(Some(format!(
            "Headers to send, at most {MAX_HEADERS}; values are never shown again"
        )))
        .build()
}

/// `metadata` as the OpenAPI document shows it.
pub(crate) fn metadata_schema() -> Object {
    string_map(MAX_METADATA_ENTRIES, Some(MAX_METADATA_KEY))
        .description(Some(format!(
            "Labels kept with the task and sent with its alerts (at most \
             {MAX_METADATA_ENTRIES}; keys 1–{MAX_METADATA_KEY} bytes, values up to {} KiB)",
            MAX_METADATA_VALUE / 1024
        )))
        .build()
}

/// `retry.permanent_statuses` as the OpenAPI document shows it.
pub(crate) fn permanent_statuses_schema() -> Array {
    let status = ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(*PERMANENT_STATUSES.start() as f64))
        .maximum(Some(*PERMANENT_STATUSES.end() as f64));
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(status)
        .description(Some(format!(
            "Response statuses ({}–{}) that fail the task at once, without retrying",
            PERMANENT_STATUSES.start(),
            PERMANENT_STATUSES.end()
        )))
        .examples([serde_json::json!([400, 401, 403, 404, 410])])
        .build()
}

/// An object of strings: at most `entries` of them, with names of at most `name_len`.
fn string_map(entries: usize, name_len: Option<usize>) -> ObjectBuilder {
    let mut names = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1));
    if let Some(len) = name_len {
        names = names.max_length(Some(len));
    }
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .additional_properties(Some(ObjectBuilder::new().schema_type(Type::String)))
        .max_properties(Some(entries))
        .property_names(Some(names))
}

/// A string schema with these values.
fn string_enum<'a>(values: impl IntoIterator<Item = &'a str>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values))
        .into()
}

/// The domain's enums as the API writes them, named as the domain names them; their
/// values come from the domain itself (through serde), so the document cannot name one the
/// API never sends. Fields of these types say `#[schema(value_type = enums::Status)]`.
pub mod enums {
    use super::*;

    macro_rules! enum_schemas {
        ($($name:ident: $ty:ty => $values:expr;)*) => {$(
            pub struct $name;
            impl PartialSchema for $name {
                fn schema() -> RefOr<Schema> {
                    let names: Vec<String> = $values
                        .into_iter()
                        .filter_map(|v: $ty| serde_json::to_value(v).ok())
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect();
                    string_enum(names.iter().map(String::as_str))
                }
            }
            impl ToSchema for $name {
                fn name() -> Cow<'static, str> {
                    Cow::Borrowed(stringify!($name))
                }
            }
        )*};
    }

    enum_schemas! {
        Status: boomerang_core::domain::Status => boomerang_core::domain::Status::ALL;
        Notify: boomerang_core::domain::Notify =>
            [boomerang_core::domain::Notify::Final, boomerang_core::domain::Notify::Every,
             boomerang_core::domain::Notify::Never];
        OnUnknown: boomerang_core::domain::OnUnknown =>
            [boomerang_core::domain::OnUnknown::Cancel, boomerang_core::domain::OnUnknown::Release];
        AttemptOutcome: boomerang_core::domain::AttemptOutcome => [
            boomerang_core::domain::AttemptOutcome::Succeeded,
            boomerang_core::domain::AttemptOutcome::Retrying,
            boomerang_core::domain::AttemptOutcome::Failed,
        ];
    }
}
