//! What every [`FlowCounters`] adapter must do, run against each of them: concurrent
//! callers never get more than a flow's rate per window or its parallelism in slots.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;

use crate::domain::{FlowKey, TaskId, TenantId};
use crate::ports::FlowCounters;

/// Runs every case against `counters`; `name` makes the flow keys unique per run.
pub async fn check_flow_counters(counters: Arc<dyn FlowCounters>, name: &str) {
    rate_holds_under_concurrency(&counters, name).await;
    slots_hold_under_concurrency(&counters, name).await;
}

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_900_000_000, 0).expect("a valid time")
}

async fn rate_holds_under_concurrency(counters: &Arc<dyn FlowCounters>, name: &str) {
    let tenant = TenantId::parse("acme").expect("valid");
    let key = FlowKey::parse(format!("{name}-rate")).expect("valid");
    let window = t0();
    let starts = (0..8).map(|_| counters.count_start(&tenant, &key, window, 3));
    let counted = join_all(starts).await;
    let counted = counted
        .into_iter()
        .filter(|c| *c.as_ref().expect("counted"))
        .count();
    assert_eq!(counted, 3, "a window counts at most `rate` starts");
    let next = window + Duration::seconds(1);
    assert!(counters.count_start(&tenant, &key, next, 3).await.unwrap());
    let other = FlowKey::parse(format!("{name}-other")).expect("valid");
    assert!(counters
        .count_start(&tenant, &other, window, 3)
        .await
        .unwrap());
}

async fn slots_hold_under_concurrency(counters: &Arc<dyn FlowCounters>, name: &str) {
    let tenant = TenantId::parse("acme").expect("valid");
    let key = FlowKey::parse(format!("{name}-slots")).expect("valid");
    let (now, until) = (t0(), t0() + Duration::seconds(30));
    let tasks: Vec<TaskId> = (0..8).map(|_| TaskId::new()).collect();
    let takes = tasks
        .iter()
        .map(|task| counters.take_slot(&tenant, &key, 3, task, now, until));
    let taken: Vec<bool> = join_all(takes)
        .await
        .into_iter()
        .map(|t| t.expect("answered"))
        .collect();
    assert_eq!(
        taken.iter().filter(|t| **t).count(),
        3,
        "at most `parallelism` slots"
    );
    let holders: Vec<&TaskId> = tasks
        .iter()
        .zip(&taken)
        .filter(|(_, t)| **t)
        .map(|(id, _)| id)
        .collect();
    let waiting: Vec<&TaskId> = tasks
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|(id, _)| id)
        .collect();
    // A holder asking again keeps its slot; a waiter still gets none.
    assert!(counters
        .take_slot(&tenant, &key, 3, holders[0], now, until)
        .await
        .unwrap());
    assert!(!counters
        .take_slot(&tenant, &key, 3, waiting[0], now, until)
        .await
        .unwrap());
    // A freed slot goes to the next taker.
    counters.free_slot(&tenant, &key, holders[0]).await.unwrap();
    assert!(counters
        .take_slot(&tenant, &key, 3, waiting[0], now, until)
        .await
        .unwrap());
    assert!(!counters
        .take_slot(&tenant, &key, 3, waiting[1], now, until)
        .await
        .unwrap());
    // Freeing a slot one does not hold changes nothing.
    counters.free_slot(&tenant, &key, waiting[2]).await.unwrap();
    assert!(!counters
        .take_slot(&tenant, &key, 3, waiting[1], now, until)
        .await
        .unwrap());
    // Once their leases end, the slots of holders that never freed them are taken over.
    let later = until + Duration::seconds(1);
    let after = later + Duration::seconds(30);
    assert!(counters
        .take_slot(&tenant, &key, 3, waiting[1], later, after)
        .await
        .unwrap());
}
