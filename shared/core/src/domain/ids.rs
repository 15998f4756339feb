//! Typed identifiers, so a tenant id can never be passed where a task id is expected, and
//! each is valid from the moment it exists.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use ulid::Ulid;

use super::limits::{MAX_BUSINESS_KEY, MAX_DEFINITION_NAME, MAX_TENANT_ID};

/// Declares an id that is a ULID: made new (`new`, `Default`), written and read as its
/// 26 characters (`Display`, `FromStr`, serde as a string), so ids sort by creation time.
/// Each kind of id is its own type: a schedule's id can never be passed for a task's.
macro_rules! ulid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(Ulid);

        impl $name {
            pub fn new() -> Self {
                Self(Ulid::new())
            }

            /// When the id was made (a ULID carries its creation time, to the millisecond).
            pub fn created_at(&self) -> chrono::DateTime<chrono::Utc> {
                let ms = i64::try_from(self.0.timestamp_ms()).unwrap_or(i64::MAX);
                chrono::DateTime::from_timestamp_millis(ms)
                    .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = ulid::DecodeError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ulid::from_string(s).map(Self)
            }
        }

        impl TryFrom<String> for $name {
            type Error = ulid::DecodeError;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                s.parse()
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.to_string()
            }
        }
    };
}

ulid_id!(
    /// A task's id: a ULID, so ids sort by creation time (lists are newest first).
    TaskId
);

ulid_id!(
    /// A schedule's id: a ULID, so lists come newest first.
    ScheduleId
);

ulid_id!(
    /// A bulk job's id: a ULID, so lists come newest first.
    BulkJobId
);

impl TaskId {
    /// One of `buckets` (at least 1), chosen by the id's random low bits: an even spread,
    /// for storage keys.
    pub fn spread(&self, buckets: u32) -> u32 {
        (self.0 .0 % u128::from(buckets.max(1))) as u32
    }
}

/// Which call of a task a timer is for: delivery attempt `n` (1-based, counted over the
/// task's whole life), or a held task's next check. The check is apart from every
/// delivery attempt, so a check timer is never taken for the first attempt's, and one
/// that fires after the release is stale. Stored and sent as a number, 0 for the check
/// (the `boomerang-attempt` header of a check call says `0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "u32", into = "u32")]
pub enum Attempt {
    Check,
    Delivery(u32),
}

impl Attempt {
    /// The number it is stored and sent as.
    pub fn number(self) -> u32 {
        self.into()
    }
}

impl From<u32> for Attempt {
    fn from(number: u32) -> Self {
        match number {
            0 => Attempt::Check,
            n => Attempt::Delivery(n),
        }
    }
}

impl From<Attempt> for u32 {
    fn from(attempt: Attempt) -> u32 {
        match attempt {
            Attempt::Check => 0,
            Attempt::Delivery(n) => n,
        }
    }
}

/// The number it is stored and sent as (logs, headers): 0 for the check.
impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// One call of one task: what every timer carries, what the sweep finds and what
/// `Engine::deliver` takes. Its JSON form is the whole input of a timer message. It names
/// the tenant too: a store may key its tasks by tenant (DynamoDB does, to list without an
/// index), so a task is found by tenant and id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptRef {
    pub task_id: TaskId,
    pub attempt: Attempt,
    pub tenant: TenantId,
}

impl AttemptRef {
    pub fn new(tenant: TenantId, task_id: TaskId, attempt: Attempt) -> Self {
        Self {
            task_id,
            attempt,
            tenant,
        }
    }

    /// Delivery attempt `number` (1-based) of the task.
    pub fn delivery(tenant: TenantId, task_id: TaskId, number: u32) -> Self {
        debug_assert!(number >= 1, "attempts count from 1; 0 is the check");
        Self::new(tenant, task_id, Attempt::Delivery(number))
    }

    /// The next check of the (held) task.
    pub fn check(tenant: TenantId, task_id: TaskId) -> Self {
        Self::new(tenant, task_id, Attempt::Check)
    }
}

/// The owner of a task. Every read and write is scoped to one tenant. Tenant ids become
/// part of storage keys (`I#<tenant>#<key>`), so they are checked where they are made.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantId(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a tenant id must be 1 to {MAX_TENANT_ID} bytes, without `#`, whitespace or control characters"
)]
pub struct InvalidTenantId;

impl TenantId {
    pub fn parse(id: impl Into<String>) -> Result<Self, InvalidTenantId> {
        let id = id.into();
        let valid = !id.is_empty()
            && id.len() <= MAX_TENANT_ID
            && !id
                .chars()
                .any(|c| c == '#' || c.is_control() || c.is_whitespace());
        valid.then_some(Self(id)).ok_or(InvalidTenantId)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for TenantId {
    type Err = InvalidTenantId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for TenantId {
    type Error = InvalidTenantId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(s)
    }
}

impl From<TenantId> for String {
    fn from(id: TenantId) -> Self {
        id.0
    }
}

/// The caller's own id for a task (`order-42`): per tenant and not unique (an order may
/// have several reminders). Tasks are listed and canceled by it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BusinessKey(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a key must be 1 to {MAX_BUSINESS_KEY} bytes, without control characters")]
pub struct InvalidBusinessKey;

impl BusinessKey {
    pub fn parse(key: impl Into<String>) -> Result<Self, InvalidBusinessKey> {
        let key = key.into();
        let valid =
            !key.is_empty() && key.len() <= MAX_BUSINESS_KEY && !key.chars().any(char::is_control);
        valid.then_some(Self(key)).ok_or(InvalidBusinessKey)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BusinessKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for BusinessKey {
    type Error = InvalidBusinessKey;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(s)
    }
}

impl From<BusinessKey> for String {
    fn from(key: BusinessKey) -> Self {
        key.0
    }
}

/// The name of a tenant's policy or template (`payments`). The one named
/// [`DefinitionName::DEFAULT`] applies to the tenant's tasks that name none.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DefinitionName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a name must be 1 to {MAX_DEFINITION_NAME} letters, digits, `.`, `_` or `-`")]
pub struct InvalidName;

impl DefinitionName {
    pub const DEFAULT: &'static str = "default";

    pub fn parse(name: impl Into<String>) -> Result<Self, InvalidName> {
        let name = name.into();
        let valid = !name.is_empty()
            && name.len() <= MAX_DEFINITION_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        valid.then_some(Self(name)).ok_or(InvalidName)
    }

    /// `default`: what applies to a task that names none.
    pub fn default_name() -> Self {
        Self(Self::DEFAULT.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DefinitionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for DefinitionName {
    type Error = InvalidName;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(s)
    }
}

impl From<DefinitionName> for String {
    fn from(name: DefinitionName) -> Self {
        name.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_ids_are_checked_where_they_are_made() {
        assert!(TenantId::parse("acme-01").is_ok());
        assert!(TenantId::parse("x".repeat(MAX_TENANT_ID)).is_ok());
        for bad in ["", "a#b", "a b", "tab\t", "nul\0", "\u{85}"] {
            assert_eq!(TenantId::parse(bad), Err(InvalidTenantId), "{bad:?}");
        }
        assert!(TenantId::parse("x".repeat(MAX_TENANT_ID + 1)).is_err());
        assert!(serde_json::from_str::<TenantId>("\"a#b\"").is_err());
        let id: TenantId = serde_json::from_str("\"acme\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"acme\"");
    }

    #[test]
    fn business_keys_are_checked_where_they_are_made() {
        assert!(BusinessKey::parse("order-42").is_ok());
        assert!(BusinessKey::parse("Bestellung 42 / ü").is_ok());
        assert!(BusinessKey::parse("k".repeat(MAX_BUSINESS_KEY)).is_ok());
        for bad in [
            String::new(),
            "k".repeat(MAX_BUSINESS_KEY + 1),
            "a\nb".into(),
        ] {
            assert_eq!(
                BusinessKey::parse(bad.clone()),
                Err(InvalidBusinessKey),
                "{bad:?}"
            );
        }
        assert!(serde_json::from_str::<BusinessKey>("\"\"").is_err());
    }

    #[test]
    fn policy_names_are_checked_where_they_are_made() {
        assert!(DefinitionName::parse("payments-v2.eu_1").is_ok());
        for bad in ["", "a b", "a#b", "ü", &"p".repeat(MAX_DEFINITION_NAME + 1)] {
            assert_eq!(DefinitionName::parse(bad), Err(InvalidName), "{bad:?}");
        }
    }

    #[test]
    fn an_attempt_reference_is_the_timer_message() {
        let tenant = TenantId::parse("acme").unwrap();
        let r = AttemptRef::delivery(tenant, TaskId::new(), 3);
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            format!(
                "{{\"task_id\":\"{}\",\"attempt\":3,\"tenant\":\"acme\"}}",
                r.task_id
            )
        );
        assert_eq!(serde_json::from_str::<AttemptRef>(&json).unwrap(), r);
        let bad_tenant = format!(
            r#"{{"task_id":"{}","attempt":1,"tenant":"a#b"}}"#,
            r.task_id
        );
        assert!(serde_json::from_str::<AttemptRef>(&bad_tenant).is_err());
        let no_tenant = format!(r#"{{"task_id":"{}","attempt":1}}"#, r.task_id);
        assert!(serde_json::from_str::<AttemptRef>(&no_tenant).is_err());
        // A held task's check is stored and sent as attempt 0, as it always was.
        let check = AttemptRef::check(TenantId::parse("acme").unwrap(), r.task_id);
        let json = serde_json::to_string(&check).unwrap();
        assert!(json.contains("\"attempt\":0"), "{json}");
        assert_eq!(serde_json::from_str::<AttemptRef>(&json).unwrap(), check);
    }
}
