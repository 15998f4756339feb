//! What every [`FlowCounters`] adapter must do, run against each of them: concurrent
//! callers each get their own place in a window's asks, and never more than a flow's
//! parallelism in slots.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;

use crate::domain::{AttemptRef, FlowKey, TaskId, TenantId};
use crate::ports::{FlowCounters, FlowFigures, FlowPauses, SlotHolder};

/// Runs every case against `counters`; `name` makes the flow keys unique per run.
pub async fn check_flow_counters(counters: Arc<dyn FlowCounters>, name: &str) {
    rate_holds_under_concurrency(&counters, name).await;
    slots_hold_under_concurrency(&counters, name).await;
    waiting_notes_are_counted_and_taken(&counters, name).await;
}

/// What every [`FlowPauses`] store must do.
pub async fn check_flow_pauses(pauses: Arc<dyn FlowPauses>, name: &str) {
    let tenant = TenantId::parse("acme").expect("valid");
    let other_tenant = TenantId::parse("globex").expect("valid");
    let key = FlowKey::parse(format!("{name}-paused")).expect("valid");
    assert!(!pauses.flow_paused(&tenant, &key).await.unwrap());
    pauses.set_flow_paused(&tenant, &key, true).await.unwrap();
    pauses.set_flow_paused(&tenant, &key, true).await.unwrap();
    assert!(pauses.flow_paused(&tenant, &key).await.unwrap());
    assert!(!pauses.flow_paused(&other_tenant, &key).await.unwrap());
    assert!(pauses.paused_flows(&tenant).await.unwrap().contains(&key));
    assert!(!pauses
        .paused_flows(&other_tenant)
        .await
        .unwrap()
        .contains(&key));
    pauses.set_flow_paused(&tenant, &key, false).await.unwrap();
    // A store may answer from a copy up to a second old.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert!(!pauses.flow_paused(&tenant, &key).await.unwrap());
    assert!(!pauses.paused_flows(&tenant).await.unwrap().contains(&key));
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

async fn waiting_notes_are_counted_and_taken(counters: &Arc<dyn FlowCounters>, name: &str) {
    let tenant = TenantId::parse("acme").expect("valid");
    let key = FlowKey::parse(format!("{name}-waiting")).expect("valid");
    let attempt = |task: TaskId, n| AttemptRef::delivery(tenant.clone(), task, n);
    let (long, short) = (TaskId::new(), TaskId::new());
    let now = t0();
    let note = |a: AttemptRef, until| {
        let (tenant, key) = (tenant.clone(), key.clone());
        async move { counters.note_waiting(&tenant, &key, &a, (now, until)).await }
    };
    note(attempt(long, 1), now + Duration::seconds(5))
        .await
        .unwrap();
    // A second note of a task replaces its first.
    note(attempt(long, 2), now + Duration::seconds(10))
        .await
        .unwrap();
    note(attempt(short, 1), now + Duration::seconds(1))
        .await
        .unwrap();
    assert_eq!(
        figures_of(counters, &tenant, &key, now).await.waiting,
        2,
        "two tasks wait"
    );
    let holder = SlotHolder::new(&TaskId::new());
    let until = now + Duration::seconds(30);
    assert!(counters
        .take_slot(&tenant, &key, 2, &holder, now, until)
        .await
        .unwrap());
    assert_eq!(figures_of(counters, &tenant, &key, now).await.in_flight, 1);
    counters.free_slot(&tenant, &key, &holder).await.unwrap();

    let later = now + Duration::seconds(2);
    assert_eq!(
        figures_of(counters, &tenant, &key, later).await.waiting,
        1,
        "a note past its time counts for nothing"
    );
    let woken = counters.take_waiting(&tenant, &key, later).await.unwrap();
    assert_eq!(woken, vec![attempt(long, 2)]);
    assert_eq!(
        figures_of(counters, &tenant, &key, later).await.waiting,
        0,
        "taken notes go"
    );
    assert!(counters
        .take_waiting(&tenant, &key, later)
        .await
        .unwrap()
        .is_empty());
}

async fn figures_of(
    counters: &Arc<dyn FlowCounters>,
    tenant: &TenantId,
    key: &FlowKey,
    now: DateTime<Utc>,
) -> FlowFigures {
    let all = counters.figures(tenant, now).await.expect("figures");
    let listed = all.into_iter().find(|f| &f.key == key);
    let listed = listed.unwrap_or_else(|| FlowFigures::none(key.clone()));
    let one = counters.flow_figures(tenant, key, now).await;
    assert_eq!(
        one.expect("one flow's figures"),
        listed,
        "one flow as listed"
    );
    listed
}
