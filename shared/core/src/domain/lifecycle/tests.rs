use super::*;
use crate::domain::ids::Attempt;
use crate::domain::ids::TenantId;
use crate::domain::retry_policy::MaxAttempts;
use crate::domain::retry_policy::RetryPolicy;
use chrono::TimeZone;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 0).unwrap()
}

fn secs(s: i64) -> chrono::Duration {
    chrono::Duration::seconds(s)
}

const LEASE: Duration = Duration::from_secs(40);

fn task(retry: RetryPolicy) -> Task {
    let spec = crate::testing::plain_spec("https://example.com/h", "", retry);
    let tenant = TenantId::parse("acme").unwrap();
    Task::new_scheduled(tenant, spec, None, "h".into(), t0() + secs(60), t0())
}

/// Held for 30 s from t0, `on_unknown: release` after three checks.
fn held_task(check_url: Option<&str>) -> Task {
    let mut t = task(RetryPolicy::default());
    t.spec.hold = Some(
        crate::domain::hold::HoldSpec::new(
            Duration::from_secs(30),
            check_url.map(str::to_string),
            crate::domain::hold::OnUnknown::Release,
            Some(3),
        )
        .unwrap(),
    );
    t.hold_from(t0()).unwrap()
}

fn retry_once() -> Verdict {
    Verdict::Retry {
        error: "HTTP 500".into(),
        retry_after: None,
    }
}

/// The rule for pending work, once: every state a task can be in, and what it leaves
/// for the sweep. The stores index exactly this.
#[test]
fn pending_work_table() {
    let scheduled = task(RetryPolicy::default());
    let delivering = scheduled
        .claim(Attempt::Delivery(1), t0() + secs(60), LEASE)
        .unwrap();
    let failed = delivering
        .after_attempt(&Verdict::Fail("HTTP 410".into()), t0() + secs(61), 0.5)
        .unwrap();
    // The dead letter sent, the alert still owed; then nothing left.
    let letter_sent = failed.dead_letter_sent(t0() + secs(62)).unwrap();
    let acknowledged = letter_sent.alert_settled(None, t0() + secs(63)).unwrap();
    let succeeded = delivering
        .after_attempt(&Verdict::Success, t0() + secs(61), 0.5)
        .unwrap();
    let canceled = scheduled.cancel(t0()).unwrap();
    let retried = delivering
        .after_attempt(&retry_once(), t0() + secs(61), 0.5)
        .unwrap();
    let held = held_task(None);
    // Its hold ran out with nobody to ask: released, due at its fire time.
    let released = held
        .after_check(
            &crate::domain::hold::CheckAnswer::Unknown("no check_url".into()),
            None,
            t0() + secs(30),
        )
        .unwrap();
    let at = |t: &Task, attempt| AttemptRef::new(t.tenant.clone(), t.id, attempt);
    type Expected = Option<(WorkKind, Attempt, DateTime<Utc>)>;
    let table: [(&Task, Expected); 10] = [
        (
            &held,
            Some((WorkKind::Check, Attempt::Check, t0() + secs(30))),
        ),
        (
            &released,
            Some((WorkKind::Attempt, Attempt::Delivery(1), t0() + secs(60))),
        ),
        (
            &scheduled,
            Some((WorkKind::Attempt, Attempt::Delivery(1), t0() + secs(60))),
        ),
        (
            &delivering,
            Some((
                WorkKind::LeaseExpiry,
                Attempt::Delivery(1),
                t0() + secs(100),
            )),
        ),
        (
            &retried,
            Some((WorkKind::Attempt, Attempt::Delivery(2), t0() + secs(91))),
        ),
        (
            &failed,
            Some((WorkKind::DeadLetter, Attempt::Delivery(1), t0() + secs(61))),
        ),
        (
            &letter_sent,
            Some((WorkKind::DeadLetter, Attempt::Delivery(1), t0() + secs(62))),
        ),
        (&acknowledged, None),
        (&succeeded, None),
        (&canceled, None),
    ];
    for (t, want) in table {
        let want = want.map(|(kind, n, due_at)| PendingWork {
            attempt: at(t, n),
            kind,
            due_at,
        });
        assert_eq!(t.pending_work(), want, "{:?}", t.status);
    }
    for kind in WorkKind::ALL {
        assert_eq!(WorkKind::parse(kind.as_str()), Some(kind));
    }
}

#[test]
fn claim_refuses_early_stale_and_leased_fires_and_takes_over_expired_leases() {
    let t = task(RetryPolicy::default());
    assert_eq!(
        t.claim(Attempt::Delivery(1), t0(), LEASE),
        Err(Refusal::NotDue(t0() + secs(60)))
    );
    assert_eq!(
        t.claim(Attempt::Delivery(2), t0() + secs(60), LEASE),
        Err(Refusal::AttemptAhead(2)),
        "a fire for an attempt whose write is not seen yet"
    );
    let moved_on = Task {
        attempt: 2,
        ..t.clone()
    };
    assert_eq!(
        moved_on.claim(Attempt::Delivery(1), t0() + secs(60), LEASE),
        Err(Refusal::StaleAttempt(Attempt::Delivery(1)))
    );
    let claimed = t
        .claim(Attempt::Delivery(1), t0() + secs(60), LEASE)
        .unwrap();
    assert_eq!((claimed.status, claimed.version), (Status::Delivering, 2));
    assert_eq!(
        claimed.claim(Attempt::Delivery(1), t0() + secs(99), LEASE),
        Err(Refusal::Leased(t0() + secs(100)))
    );
    let taken = claimed
        .claim(Attempt::Delivery(1), t0() + secs(100), LEASE)
        .unwrap();
    assert_eq!(taken.lease_until, Some(t0() + secs(140)));
    assert_eq!(
        t.claim(Attempt::Delivery(1), t0() + secs(60), Duration::MAX),
        Err(Refusal::TimeOutOfRange("lease"))
    );
    let canceled = t.cancel(t0()).unwrap();
    assert_eq!(
        canceled.claim(Attempt::Delivery(1), t0() + secs(60), LEASE),
        Err(Refusal::StaleAttempt(Attempt::Delivery(1)))
    );
}

#[test]
fn an_attempt_that_never_left_is_given_back_uncounted() {
    let claimed = task(RetryPolicy::default())
        .claim(Attempt::Delivery(1), t0() + secs(60), LEASE)
        .unwrap();
    let back = claimed.unclaim(t0() + secs(61), t0() + secs(60)).unwrap();
    assert_eq!((back.status, back.attempt), (Status::Scheduled, 1));
    assert_eq!(
        back.round_start, claimed.round_start,
        "the round is not advanced"
    );
    assert_eq!(back.next_attempt_at, Some(t0() + secs(61)));
    assert_eq!(back.lease_until, None);
    assert_eq!(back.version, claimed.version + 1);
    let again = back
        .claim(Attempt::Delivery(1), t0() + secs(61), LEASE)
        .unwrap();
    assert_eq!(again.attempt, 1, "the same attempt is made again");
    assert_eq!(
        back.unclaim(t0() + secs(62), t0() + secs(61)),
        Err(Refusal::NotDelivering(Status::Scheduled))
    );
}

#[test]
fn attempts_move_the_task_on_by_the_policy_and_the_draw() {
    let policy = RetryPolicy::new(
        RetryPolicy::default().backoff().clone(),
        MaxAttempts::Limit(2),
        None,
        0.5,
        &[],
    )
    .unwrap();
    let claimed = task(policy)
        .claim(Attempt::Delivery(1), t0() + secs(60), LEASE)
        .unwrap();
    let low = claimed
        .after_attempt(&retry_once(), t0() + secs(60), 0.0)
        .unwrap();
    let high = claimed
        .after_attempt(&retry_once(), t0() + secs(60), 0.999_999)
        .unwrap();
    assert_eq!((low.status, low.attempt), (Status::Scheduled, 2));
    assert_eq!(
        low.next_attempt_at,
        Some(t0() + secs(60 + 15)),
        "30 s × 0.5"
    );
    assert!(
        high.next_attempt_at > Some(t0() + secs(60 + 44)),
        "30 s × ~1.5"
    );
    let second = low
        .claim(Attempt::Delivery(2), t0() + secs(75), LEASE)
        .unwrap();
    let failed = second
        .after_attempt(&retry_once(), t0() + secs(76), 0.5)
        .unwrap();
    assert_eq!(
        (failed.status, failed.dead_letter_pending),
        (Status::Failed, true)
    );
    assert_eq!(failed.last_error.as_deref(), Some("HTTP 500"));
    let record = second.attempt_record(&failed, t0() + secs(75), t0() + secs(76), Some(500), None);
    assert_eq!((record.number, record.outcome), (2, AttemptOutcome::Failed));
    assert_eq!((record.lateness_ms, record.duration_ms), (0, 1000));
    assert_eq!(
        low.after_attempt(&Verdict::Success, t0(), 0.5),
        Err(Refusal::NotDelivering(Status::Scheduled))
    );
}

#[test]
fn release_and_checks_apply_only_to_held_tasks() {
    use crate::domain::hold::CheckAnswer;
    let held = held_task(Some("https://example.com/tx"));
    assert_eq!(held.status, Status::Held);
    assert_eq!(
        held.claim(Attempt::Delivery(1), t0() + secs(60), LEASE)
            .err(),
        Some(Refusal::StaleAttempt(Attempt::Delivery(1)))
    );
    // Released after its fire time: due at once.
    let released = held.release(t0() + secs(90)).unwrap();
    assert_eq!(
        (released.status, released.next_attempt_at, released.check_at),
        (Status::Scheduled, Some(t0() + secs(90)), None)
    );
    assert_eq!(
        released.release(t0()),
        Err(Refusal::Released(Status::Scheduled))
    );
    let unknown = CheckAnswer::Unknown("HTTP 503".into());
    assert_eq!(
        released.after_check(&unknown, None, t0()),
        Err(Refusal::NotHeld(Status::Scheduled))
    );
    let canceled = held.cancel(t0()).unwrap();
    assert_eq!(canceled.check_at, None);
    assert_eq!(
        canceled.release(t0()),
        Err(Refusal::Finished(Status::Canceled))
    );
    assert_eq!(
        task(RetryPolicy::default()).release(t0()),
        Err(Refusal::NotHeld(Status::Scheduled))
    );
    // A check timer is attempt 0, and only when due.
    assert_eq!(
        held.claim_check(Attempt::Delivery(1), t0() + secs(30)),
        Err(Refusal::StaleAttempt(Attempt::Delivery(1)))
    );
    assert_eq!(
        held.claim_check(Attempt::Check, t0()),
        Err(Refusal::NotDue(t0() + secs(30)))
    );
    assert_eq!(held.claim_check(Attempt::Check, t0() + secs(30)), Ok(()));
    assert_eq!(
        released.claim_check(Attempt::Check, t0() + secs(30)),
        Err(Refusal::StaleAttempt(Attempt::Check))
    );
}

#[test]
fn cancel_and_retry_apply_only_to_their_states() {
    let t = task(RetryPolicy::default());
    let claimed = t
        .claim(Attempt::Delivery(1), t0() + secs(60), LEASE)
        .unwrap();
    assert_eq!(claimed.cancel(t0()), Err(Refusal::BeingDelivered));
    let done = claimed
        .after_attempt(&Verdict::Success, t0() + secs(61), 0.5)
        .unwrap();
    assert_eq!(done.cancel(t0()), Err(Refusal::Finished(Status::Succeeded)));
    assert_eq!(
        done.redrive(t0()),
        Err(Refusal::NotFailed(Status::Succeeded))
    );
    let failed = claimed
        .after_attempt(&Verdict::Fail("gone".into()), t0() + secs(61), 0.5)
        .unwrap();
    let again = failed.redrive(t0() + secs(300)).unwrap();
    assert_eq!(
        (
            again.status,
            again.attempt,
            again.round_start,
            again.dead_letter_pending
        ),
        (Status::Scheduled, 2, 2, false)
    );
    assert_eq!(again.next_attempt_at, Some(t0() + secs(300)));
    assert_eq!(
        again.dead_letter_sent(t0()),
        Err(Refusal::NoDeadLetterPending)
    );
}
