//! An entry of the `due` index as its two readers (the sweep, a bucket's fire) handle it:
//! where a read resumes after it, and which task it names.

use serde::{Deserialize, Serialize};

use crate::attr;
use crate::keys::ItemKey;
use crate::sdk::items::{get_n, get_s, n, s, Item};
use boomerang_core::ports::StoreError;

/// An entry's sort key (`dm`) and its task's keys (`pk`, `sk`). Kept as a JSON array in
/// a sweep checkpoint and a bucket's work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct DueEntry(pub i64, pub String, pub String);

impl DueEntry {
    pub fn of(entry: &Item) -> Result<Self, StoreError> {
        Ok(Self(
            get_n(entry, attr::DUE_AT)?,
            get_s(entry, attr::PK)?.to_string(),
            get_s(entry, attr::SK)?.to_string(),
        ))
    }

    /// Where a query of `partition` resumes after this entry (its exclusive start key).
    pub fn start_key(&self, partition: &str) -> Item {
        Item::from([
            (attr::DUE_SHARD.to_string(), s(partition)),
            (attr::DUE_AT.to_string(), n(self.0)),
            (attr::PK.to_string(), s(&self.1)),
            (attr::SK.to_string(), s(&self.2)),
        ])
    }

    /// The key of the task item the entry names.
    pub fn task_key(&self) -> ItemKey {
        ItemKey {
            pk: self.1.clone(),
            sk: self.2.clone(),
        }
    }
}
