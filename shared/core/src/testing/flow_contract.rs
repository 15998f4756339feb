//! What every [`FlowCounters`] adapter must do, run against each of them: concurrent
//! callers each get their own place in a window's asks, and never more than a flow's
//! parallelism in slots.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;

use crate::domain::{FlowKey, TaskId, TenantId};
use crate::ports::{FlowCounters, SlotHolder};

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
    let asks = (0..8).map(|_| counters.ask_start(&tenant, &key, window));
    let mut positions: Vec<u64> = join_all(asks)
        .await
        .into_iter()
        .map(|p| p.expect("counted"))
        .collect();
    positions.sort_unstable();
    assert_eq!(
        positions,
        (1..=8).collect::<Vec<u64>>(),
        "each ask its own place"
    );
    let next = window + Duration::seconds(1);
    assert_eq!(counters.ask_start(&tenant, &key, next).await.unwrap(), 1);
    let other = FlowKey::parse(format!("{name}-other")).expect("valid");
    assert_eq!(
        counters.ask_start(&tenant, &other, window).await.unwrap(),
        1
    );
}

async fn slots_hold_under_concurrency(counters: &Arc<dyn FlowCounters>, name: &str) {
    let tenant = TenantId::parse("acme").expect("valid");
    let key = FlowKey::parse(format!("{name}-slots")).expect("valid");
    let (now, until) = (t0(), t0() + Duration::seconds(30));
    let tasks: Vec<SlotHolder> = (0..8).map(|_| SlotHolder::new(&TaskId::new())).collect();
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
    let holders: Vec<&SlotHolder> = tasks
        .iter()
        .zip(&taken)
        .filter(|(_, t)| **t)
        .map(|(id, _)| id)
        .collect();
    let waiting: Vec<&SlotHolder> = tasks
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|(id, _)| id)
        .collect();
    // A holder asking again keeps its slot; a waiter still gets none, and neither does
    // another delivery of a holder's task (a duplicate fire).
    let twin = SlotHolder::new(&TaskId::new());
    assert!(!counters
        .take_slot(&tenant, &key, 3, &twin, now, until)
        .await
        .unwrap());
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
