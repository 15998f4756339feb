//! The store contract's lists: by tenant, filter, page and business key.

use std::time::Duration;

use chrono::Utc;

use super::fixtures::millis;
use super::fixtures::{sample_task, unique_tenant, ContractStore};
use crate::domain::{AttemptOutcome, AttemptRecord, Status, TenantId};
use crate::ports::ListQuery;

/// A business key finds the tenant's tasks with it, newest first, filtered and paged like
/// any list, and nothing of another key or tenant.
pub(super) async fn lists_by_business_key(store: &dyn ContractStore) {
    let tenant = unique_tenant("by-key");
    let now = millis(Utc::now());
    let key = |k: &str| Some(crate::domain::BusinessKey::parse(k).unwrap());
    let with_key = |tenant: &TenantId, k: Option<crate::domain::BusinessKey>| {
        let mut task = sample_task(tenant, None, now);
        task.spec.key = k;
        task
    };
    let mut ids = Vec::new();
    for i in 0..3 {
        let mut task = with_key(&tenant, key("order-42"));
        if i == 1 {
            task = task.cancel(now).unwrap();
        }
        store.create(&task).await.unwrap();
        ids.push(task.id);
    }
    for other in [
        with_key(&tenant, key("order-43")),
        with_key(&tenant, None),
        with_key(&unique_tenant("by-key"), key("order-42")),
    ] {
        store.create(&other).await.unwrap();
    }
    ids.sort_by(|a, b| b.cmp(a));
    let q = |status, limit, cursor| ListQuery {
        status,
        key: key("order-42"),
        limit,
        cursor,
    };
    let all = store.list(&tenant, &q(None, 10, None)).await.unwrap();
    assert_eq!(all.tasks.iter().map(|t| t.id).collect::<Vec<_>>(), ids);
    assert!(all.tasks.iter().all(|t| t.spec.key == key("order-42")));
    let first = store.list(&tenant, &q(None, 2, None)).await.unwrap();
    let rest = store
        .list(&tenant, &q(None, 2, first.next_cursor))
        .await
        .unwrap();
    assert_eq!(
        first
            .tasks
            .iter()
            .chain(&rest.tasks)
            .map(|t| t.id)
            .collect::<Vec<_>>(),
        ids
    );
    assert_eq!(rest.next_cursor, None);
    let canceled = store
        .list(&tenant, &q(Some(Status::Canceled), 10, None))
        .await
        .unwrap();
    assert_eq!(canceled.tasks.len(), 1);
}

/// Forty tasks (one with attempt records of its own), read in pages of seven: every task
/// once, newest first, nothing else.
pub(super) async fn long_lists_page_in_order(store: &dyn ContractStore) {
    let tenant = unique_tenant("long-list");
    let now = millis(Utc::now());
    let mut ids = Vec::new();
    for _ in 0..40 {
        let task = sample_task(&tenant, None, now);
        store.create(&task).await.unwrap();
        ids.push(task.id);
    }
    let record = AttemptRecord {
        task_id: ids[0],
        number: 11,
        scheduled_at: now,
        started_at: now,
        lateness_ms: 0,
        duration_ms: 1,
        status_code: Some(500),
        error: None,
        response_excerpt: None,
        outcome: AttemptOutcome::Retrying,
        worker: None,
    };
    store.put_attempt(&tenant, &record).await.unwrap();
    ids.sort_by(|a, b| b.cmp(a));
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let query = ListQuery {
            limit: 7,
            cursor,
            ..ListQuery::default()
        };
        let page = store.list(&tenant, &query).await.unwrap();
        assert!(page.tasks.len() <= 7);
        seen.extend(page.tasks.iter().map(|t| t.id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, ids);
}

pub(super) async fn list_is_scoped_filtered_and_paged(store: &dyn ContractStore) {
    let tenant = unique_tenant("list");
    let now = millis(Utc::now());
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut t = sample_task(&tenant, None, now);
        if i % 2 == 1 {
            t = t.cancel(now).unwrap();
        }
        store.create(&t).await.unwrap();
        ids.push(t.id);
        // ULIDs minted in the same millisecond are still ordered, but be explicit.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    store
        .create(&sample_task(&unique_tenant("list"), None, now))
        .await
        .unwrap();
    ids.reverse(); // newest first
    let q = |limit, cursor, status| ListQuery {
        status,
        limit,
        cursor,
        key: None,
    };
    let first = store.list(&tenant, &q(2, None, None)).await.unwrap();
    assert_eq!(
        first.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        ids[..2]
    );
    let second = store
        .list(&tenant, &q(2, first.next_cursor, None))
        .await
        .unwrap();
    assert_eq!(
        second.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        ids[2..4]
    );
    let last = store
        .list(&tenant, &q(2, second.next_cursor, None))
        .await
        .unwrap();
    assert_eq!(
        last.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        ids[4..]
    );
    assert_eq!(last.next_cursor, None);
    let canceled = store
        .list(&tenant, &q(10, None, Some(Status::Canceled)))
        .await
        .unwrap();
    assert_eq!(canceled.tasks.len(), 2);
    assert!(canceled.tasks.iter().all(|t| t.status == Status::Canceled));
}
