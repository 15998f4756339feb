//! The store contract's due index: what the sweep and the loader read.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::fixtures::millis;
use super::fixtures::{sample_task, unique_tenant, ContractStore};
use crate::domain::ids::Attempt;
use crate::domain::{PendingWork, Status, Task, TaskId, TenantId, WorkKind};

/// One task of each kind of pending work, and some with none, as of `now`.
struct DueTasks {
    overdue: Task,
    later: Task,
    stalled: Task,
    working: Task,
    pending: Task,
    owing: Task,
    held: Task,
    waiting: Task,
    done: Task,
}

impl DueTasks {
    fn all(&self) -> [&Task; 9] {
        [
            &self.overdue,
            &self.later,
            &self.stalled,
            &self.working,
            &self.pending,
            &self.owing,
            &self.held,
            &self.waiting,
            &self.done,
        ]
    }
}

fn due_tasks(tenant: &TenantId, now: DateTime<Utc>) -> DueTasks {
    let minute = chrono::Duration::minutes(1);
    let lease = |m: i64| Duration::from_secs((m * 60) as u64);
    let overdue = sample_task(tenant, None, now - minute);
    let later = sample_task(tenant, None, now + minute * 30);
    // Claimed two minutes ago with a one-minute lease: the worker died.
    let stalled = sample_task(tenant, None, now - minute * 2)
        .claim(Attempt::Delivery(1), now - minute * 2, lease(1))
        .unwrap();
    let working = sample_task(tenant, None, now - minute)
        .claim(Attempt::Delivery(1), now, lease(1))
        .unwrap();
    let mut pending = sample_task(tenant, None, now - minute)
        .claim(Attempt::Delivery(1), now - minute, lease(1))
        .unwrap();
    pending.status = Status::Failed;
    pending.next_attempt_at = None;
    pending.lease_until = None;
    pending.dead_letter_pending = true;
    // Failed, its dead letter sent but its alert still owed (and one alert raised before).
    let mut owing = pending.clone();
    owing.id = TaskId::new();
    owing.dead_letter_pending = false;
    owing.alert_pending = true;
    owing.alerts = vec![TaskId::new(), TaskId::new()];
    // Held, its hold timed out and one check made: the next check is due.
    let mut held = sample_task(tenant, None, now + minute);
    held.spec.hold = Some(
        crate::domain::HoldSpec::new(
            Duration::from_secs(30),
            Some("https://example.com/tx".into()),
            crate::domain::OnUnknown::Release,
            Some(5),
        )
        .unwrap(),
    );
    let mut held = held.hold_from(now - minute).unwrap();
    held.checks.push(crate::domain::CheckRecord {
        number: 1,
        at: now - minute,
        duration_ms: 12,
        status_code: Some(503),
        decision: None,
        error: Some("HTTP 503".into()),
    });
    held.check_at = Some(now - minute / 2);
    // Held with its timeout ahead.
    let mut waiting = sample_task(tenant, None, now - minute);
    waiting.spec.hold = held.spec.hold.clone();
    let waiting = waiting.hold_from(now).unwrap();
    let done = working
        .after_attempt(&crate::domain::Verdict::Success, now, 0.5)
        .unwrap();
    let done = Task {
        id: TaskId::new(),
        ..done
    };
    DueTasks {
        overdue,
        later,
        stalled,
        working,
        pending,
        owing,
        held,
        waiting,
        done,
    }
}

/// The store indexes exactly [`Task::pending_work`]: `due(cutoff)` finds every task whose
/// pending work is due by the cutoff, and nothing else.
pub(super) async fn due_finds_only_work_to_do(store: &dyn ContractStore) {
    let tenant = unique_tenant("due");
    let now = millis(Utc::now());
    let minute = chrono::Duration::minutes(1);
    let tasks = due_tasks(&tenant, now);
    let (overdue, held, owing) = (&tasks.overdue, &tasks.held, &tasks.owing);
    let all = tasks.all();
    for t in all {
        store.create(t).await.unwrap();
    }
    assert_eq!(
        store.get(&tenant, &owing.id).await.unwrap().as_ref(),
        Some(owing),
        "an owed alert and the alerts raised are kept"
    );
    assert_eq!(
        store.get(&tenant, &held.id).await.unwrap().as_ref(),
        Some(held),
        "a hold, its checks and its next check are kept"
    );
    let ours: Vec<TaskId> = all.iter().map(|t| t.id).collect();
    let mine = |items: Vec<PendingWork>| {
        let mut v: Vec<_> = items
            .into_iter()
            .filter(|w| ours.contains(&w.attempt.task_id))
            .map(|w| (w.attempt.task_id, w.kind))
            .collect();
        v.sort();
        v
    };
    let mut expected = vec![
        (overdue.id, WorkKind::Attempt),
        (tasks.stalled.id, WorkKind::LeaseExpiry),
        (tasks.pending.id, WorkKind::DeadLetter),
        (owing.id, WorkKind::DeadLetter),
        (held.id, WorkKind::Check),
    ];
    expected.sort();
    let due = store.due(now, 10_000).await.unwrap().work;
    assert_eq!(mine(due.clone()), expected);
    let item = due
        .iter()
        .find(|w| w.attempt.task_id == overdue.id)
        .unwrap();
    assert_eq!(item, &overdue.pending_work().unwrap());
    assert_eq!(
        (item.attempt.clone(), item.due_at),
        (overdue.attempt_ref(1), now - minute)
    );
    let check = due.iter().find(|w| w.attempt.task_id == held.id).unwrap();
    assert_eq!(
        (check.attempt.attempt, check.due_at),
        (crate::domain::Attempt::Check, now - minute / 2),
        "a check's timer names the check"
    );

    expected.push((tasks.later.id, WorkKind::Attempt));
    expected.push((tasks.working.id, WorkKind::LeaseExpiry));
    expected.push((tasks.waiting.id, WorkKind::Check));
    expected.sort();
    let ahead = store.due(now + minute * 31, 10_000).await.unwrap().work;
    assert_eq!(
        mine(ahead),
        expected,
        "a positive lookahead loads later work, and leases that end within it"
    );
}
