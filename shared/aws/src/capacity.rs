//! DynamoDB's billing rules, by item size: what a write or a read costs in request units.
//! The cost meter prices what the AWS path does with them, and the store's tests use them
//! to keep items under a unit boundary.
//!
//! - An item's size is the sum of its attribute names and values (UTF-8 bytes for strings,
//!   raw bytes for binary, about one byte per two significant digits plus one for numbers,
//!   one byte for booleans and nulls, three bytes plus one per element for lists and maps).
//! - A write costs one unit per started KiB of the larger of the old and the new item.
//! - A read costs one unit per started 4 KiB, half as much when eventually consistent.
//! - Each global secondary index the item is projected into costs its own writes, by the
//!   size of the projected entry; a change of the index key is a delete plus a put.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

pub type Item = HashMap<String, AttributeValue>;

const WRITE_UNIT: usize = 1024;
const READ_UNIT: usize = 4096;

/// An item's size in bytes, by DynamoDB's rules.
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(l) => 3 + l.iter().map(|e| 1 + value_size(e)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, e)| 1 + k.len() + value_size(e))
                .sum::<usize>()
        }
        _ => 0,
    }
}

/// About one byte per two significant digits, plus one.
fn number_size(n: &str) -> usize {
    let digits: String = n
        .trim_start_matches('-')
        .split(['e', 'E'])
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    significant.div_ceil(2) + 1
}

/// Write units for writing `size` bytes (at least one).
pub fn write_units(size: usize) -> f64 {
    size.div_ceil(WRITE_UNIT).max(1) as f64
}

/// Read units for reading `size` bytes in one request (at least one unit's worth).
pub fn read_units(size: usize, consistent: bool) -> f64 {
    let units = size.div_ceil(READ_UNIT).max(1) as f64;
    if consistent {
        units
    } else {
        units / 2.0
    }
}

/// What a table and its global secondary indexes look like, for pricing writes.
#[derive(Clone, Debug, Default)]
pub struct TableShape {
    pub key: Vec<String>,
    pub indexes: Vec<IndexShape>,
}

#[derive(Clone, Debug)]
pub struct IndexShape {
    pub name: String,
    pub key: Vec<String>,
    pub projection: Projection,
}

#[derive(Clone, Debug)]
pub enum Projection {
    All,
    KeysOnly,
    Include(Vec<String>),
}

impl TableShape {
    /// The item's primary key, as text (to tell items apart).
    pub fn key_of(&self, item: &Item) -> String {
        self.key
            .iter()
            .map(|k| format!("{:?}", item.get(k)))
            .collect::<Vec<_>>()
            .join("|")
    }

    /// The entry `item` has in `index`, or `None` when it lacks the index's key (sparse).
    pub fn entry(&self, index: &IndexShape, item: &Item) -> Option<Item> {
        if !index.key.iter().all(|k| item.contains_key(k)) {
            return None;
        }
        let keep = |name: &String| {
            self.key.contains(name)
                || index.key.contains(name)
                || match &index.projection {
                    Projection::All => true,
                    Projection::KeysOnly => false,
                    Projection::Include(names) => names.contains(name),
                }
        };
        Some(
            item.iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }

    /// Write units a successful write from `old` to `new` costs in one index.
    pub fn index_write_units(
        &self,
        index: &IndexShape,
        old: Option<&Item>,
        new: Option<&Item>,
    ) -> f64 {
        let before = old.and_then(|o| self.entry(index, o));
        let after = new.and_then(|n| self.entry(index, n));
        match (before, after) {
            (None, None) => 0.0,
            (Some(b), None) => write_units(item_size(&b)),
            (None, Some(a)) => write_units(item_size(&a)),
            (Some(b), Some(a)) => {
                let key_changed = index.key.iter().any(|k| b.get(k) != a.get(k));
                if key_changed {
                    write_units(item_size(&b)) + write_units(item_size(&a))
                } else if b != a {
                    write_units(item_size(&b).max(item_size(&a)))
                } else {
                    0.0
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.into())
    }

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn sizes_follow_the_published_rules() {
        assert_eq!(item_size(&item(&[("pk", s("abc"))])), 5);
        assert_eq!(number_size("1700000000000"), 2); // "17" significant
        assert_eq!(number_size("1763791200123"), 8);
        assert_eq!(number_size("123456"), 4);
        assert_eq!(number_size("-0.5"), 2);
        let nested = item(&[("m", AttributeValue::M(item(&[("a", s("xy"))])))]);
        assert_eq!(item_size(&nested), 1 + 3 + 1 + 1 + 2);
        assert_eq!(write_units(0), 1.0);
        assert_eq!(write_units(1024), 1.0);
        assert_eq!(write_units(1025), 2.0);
        assert_eq!(read_units(4097, true), 2.0);
        assert_eq!(read_units(10, false), 0.5);
    }

    #[test]
    fn index_writes_count_puts_deletes_and_key_changes() {
        let table = TableShape {
            key: vec!["pk".into()],
            indexes: vec![IndexShape {
                name: "due".into(),
                key: vec!["due".into()],
                projection: Projection::KeysOnly,
            }],
        };
        let ix = &table.indexes[0];
        let plain = item(&[("pk", s("T#1")), ("x", s("a"))]);
        let due1 = item(&[("pk", s("T#1")), ("x", s("a")), ("due", s("1"))]);
        let due1b = item(&[("pk", s("T#1")), ("x", s("b")), ("due", s("1"))]);
        let due2 = item(&[("pk", s("T#1")), ("x", s("a")), ("due", s("2"))]);
        assert_eq!(table.index_write_units(ix, None, Some(&plain)), 0.0);
        assert_eq!(table.index_write_units(ix, None, Some(&due1)), 1.0);
        // A non-projected attribute changed: the entry is the same, nothing to write.
        assert_eq!(table.index_write_units(ix, Some(&due1), Some(&due1b)), 0.0);
        assert_eq!(table.index_write_units(ix, Some(&due1), Some(&due2)), 2.0);
        assert_eq!(table.index_write_units(ix, Some(&due1), Some(&plain)), 1.0);
        assert_eq!(table.index_write_units(ix, Some(&due1), None), 1.0);
    }
}
