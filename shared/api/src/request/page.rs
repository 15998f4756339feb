//! The paging of every list (`GET /v1/tasks`, `GET /v1/schedules`): `limit` and `cursor`,
//! read one way.

use std::str::FromStr;

use boomerang_core::domain::limits::MAX_PAGE;
use boomerang_core::domain::Invalid;

/// A list's `limit` and `cursor`, as the query string gives them (text, so that a bad
/// value is a refusal naming it, not an unreadable query).
#[derive(Debug, Default)]
pub struct PageQuery {
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

impl PageQuery {
    /// `limit`, or `default` when absent.
    pub fn limit(&self, default: u32) -> Result<u32, Invalid> {
        match &self.limit {
            None => Ok(default),
            Some(given) => given
                .parse::<u32>()
                .ok()
                .filter(|l| (1..=MAX_PAGE).contains(l))
                .ok_or_else(|| Invalid::new("limit", format!("must be between 1 and {MAX_PAGE}"))),
        }
    }

    /// `cursor`, as the id of the last item of the page before.
    pub fn cursor<Id: FromStr>(&self) -> Result<Option<Id>, Invalid> {
        (self.cursor.as_deref())
            .map(|c| {
                c.parse()
                    .map_err(|_| Invalid::new("cursor", "is not a cursor from a previous page"))
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use boomerang_core::domain::TaskId;

    #[test]
    fn every_list_pages_alike() {
        let query = |limit: Option<&str>, cursor: Option<&str>| PageQuery {
            limit: limit.map(str::to_string),
            cursor: cursor.map(str::to_string),
        };
        assert_eq!(query(None, None).limit(20), Ok(20));
        assert_eq!(query(Some("100"), None).limit(20), Ok(100));
        for bad in ["0", "101", "x", "-1"] {
            assert_eq!(query(Some(bad), None).limit(20).unwrap_err().field, "limit");
        }
        let cursor = query(None, Some("nope")).cursor::<TaskId>();
        assert_eq!(cursor.unwrap_err().field, "cursor");
        let id = TaskId::new();
        let cursor = query(None, Some(&id.to_string())).cursor::<TaskId>();
        assert_eq!(cursor, Ok(Some(id)));
    }
}
