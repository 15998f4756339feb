//! Reading a body as JSON into a request type: a value of the wrong shape is refused at its
//! path (`retry.bogus`, `tasks[3].delay`), JSON that does not parse as malformed.

use boomerang_core::domain::FieldPath;
use serde::de::DeserializeOwned;

use super::refused::Refused;

/// The whole body as one `T`; anything but whitespace after the JSON value is refused.
/// Every body the API takes is a JSON object: serde would read a struct from an array
/// too (`[null, null]` as its first two fields), so anything else is refused first.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, Refused> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        return match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(_) => Err(Refused::invalid("body", "must be a JSON object")),
            Err(e) => Err(Refused::Malformed(e.to_string())),
        };
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        // serde_json reports some shape errors in well-formed JSON as syntax errors: an
        // object field sent as a longer array ends in "trailing characters". Only JSON
        // that does not parse is malformed (400); the rest names its field (422).
        let well_formed = || serde_json::from_slice::<serde_json::Value>(body).is_ok();
        if (inner.is_syntax() || inner.is_eof()) && !well_formed() {
            return Refused::Malformed(inner.to_string());
        }
        let field = match field_path(e.path()) {
            path if path.is_root() => FieldPath::from("body"),
            path => path,
        };
        refusal(field, inner)
    })?;
    de.end()
        .map_err(|e| Refused::Malformed(format!("unexpected data after the JSON value: {e}")))?;
    Ok(value)
}

/// A part of a body already parsed, as a `T`; a refusal names its field under `under`
/// (the part itself when the part as a whole has the wrong shape).
pub fn from_value<T: DeserializeOwned>(
    value: serde_json::Value,
    under: FieldPath,
) -> Result<T, Refused> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = match field_path(e.path()) {
            path if !path.is_root() => path.under(under),
            _ if under.is_root() => FieldPath::from("body"),
            _ => under,
        };
        refusal(field, e.inner())
    })
}

/// The refusal of `field`, in serde's words.
fn refusal(field: FieldPath, e: &serde_json::Error) -> Refused {
    Refused::invalid(field, without_position(e))
}

/// serde's path as the API's: `retry.schedule[2]` (the unknown field's own name included).
fn field_path(path: &serde_path_to_error::Path) -> FieldPath {
    use serde_path_to_error::Segment;
    path.iter()
        .fold(FieldPath::root(), |field, segment| match segment {
            Segment::Seq { index } => field.index(*index),
            Segment::Map { key } => field.name(key.as_str()),
            Segment::Enum { variant } => field.name(variant.as_str()),
            Segment::Unknown => field,
        })
}

/// serde_json appends " at line 1 column 42" when it read text; the field name says more.
/// An error from a value already parsed has no position (and its message may quote the
/// client's own text, which is kept whole).
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    match message.strip_suffix(&position) {
        Some(message) if e.line() != 0 => message.to_string(),
        _ => message,
    }
}
