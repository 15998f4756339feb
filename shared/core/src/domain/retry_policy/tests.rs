use super::*;

/// Every rule of a policy is the domain's, and its refusal names the field.
#[test]
fn the_constructors_refuse_invalid_policies_naming_the_field() {
    let field = |r: Result<RetryPolicy, Invalid>| r.unwrap_err().field;
    let fixed = || Backoff::Fixed { interval: secs(10) };
    let policy =
        |backoff: Backoff, attempts, duration: Option<Duration>, jitter, statuses: &[i64]| {
            RetryPolicy::new(backoff, attempts, duration, jitter, statuses)
        };
    assert_eq!(Backoff::schedule(vec![]).unwrap_err().field, "schedule");
    assert_eq!(
        Backoff::schedule(vec![secs(1), secs(0)]).unwrap_err().field,
        "schedule[1]"
    );
    assert_eq!(
        Backoff::curve(BackoffKind::Linear, secs(60), Some(secs(30)))
            .unwrap_err()
            .field,
        "max_interval"
    );
    assert_eq!(BackoffKind::parse("cubic").unwrap_err().field, "backoff");
    let by_hand = Backoff::Fixed {
        interval: MAX_STEP + secs(1),
    };
    assert_eq!(
        field(policy(by_hand, MaxAttempts::Default, None, 0.0, &[])),
        "interval"
    );
    assert_eq!(
        field(policy(fixed(), MaxAttempts::Limit(0), None, 0.0, &[])),
        "max_attempts"
    );
    assert_eq!(
        field(policy(fixed(), MaxAttempts::Limit(1001), None, 0.0, &[])),
        "max_attempts"
    );
    assert_eq!(
        field(policy(fixed(), MaxAttempts::Unlimited, None, 0.0, &[])),
        "max_duration"
    );
    assert_eq!(
        field(policy(
            fixed(),
            MaxAttempts::Unlimited,
            Some(MAX_UNLIMITED_DURATION + secs(1)),
            0.0,
            &[]
        )),
        "max_duration"
    );
    assert_eq!(
        field(policy(fixed(), MaxAttempts::Default, None, f64::NAN, &[])),
        "jitter"
    );
    assert_eq!(
        field(policy(fixed(), MaxAttempts::Default, None, 0.6, &[])),
        "jitter"
    );
    assert_eq!(
        field(policy(
            fixed(),
            MaxAttempts::Default,
            None,
            0.0,
            &[404, 200]
        )),
        "permanent_statuses[1]"
    );
    let ok = policy(fixed(), MaxAttempts::Default, None, 0.5, &[404]).unwrap();
    assert_eq!(ok.max_attempts(), Some(DEFAULT_BACKOFF_ATTEMPTS));
    assert_eq!(ok.with_max_attempts(0).unwrap_err().field, "max_attempts");
}
use proptest::prelude::*;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn arb_backoff() -> impl Strategy<Value = Backoff> {
    let step = (1u64..=7 * 24 * 3600).prop_map(secs);
    prop_oneof![
        prop::collection::vec(step.clone(), 1..=MAX_SCHEDULE_STEPS)
            .prop_map(|steps| Backoff::Schedule { steps }),
        step.clone()
            .prop_map(|interval| Backoff::Fixed { interval }),
        (step.clone(), step.clone()).prop_map(|(a, b)| Backoff::Linear {
            interval: a.min(b),
            max_interval: a.max(b)
        }),
        (step.clone(), step).prop_map(|(a, b)| Backoff::Exponential {
            interval: a.min(b),
            max_interval: a.max(b)
        }),
    ]
}

fn arb_policy() -> impl Strategy<Value = RetryPolicy> {
    (arb_backoff(), 1..=MAX_ATTEMPTS, 0.0..=MAX_JITTER).prop_map(
        |(backoff, max_attempts, jitter)| RetryPolicy {
            backoff,
            max_attempts: Some(max_attempts),
            max_duration: None,
            jitter,
            permanent_statuses: vec![],
        },
    )
}

#[test]
fn default_policy_is_the_documented_schedule() {
    let p = RetryPolicy::default();
    let waits: Vec<u64> = (2..=8).map(|n| p.delay_before(n).as_secs()).collect();
    assert_eq!(waits, vec![30, 60, 180, 1800, 1800, 1800, 3600]);
    assert_eq!(p.max_attempts, Some(8));
}

#[test]
fn exponential_doubles_then_caps() {
    let p = RetryPolicy {
        backoff: Backoff::Exponential {
            interval: secs(10),
            max_interval: secs(60),
        },
        ..RetryPolicy::default()
    };
    let waits: Vec<u64> = (2..=7).map(|n| p.delay_before(n).as_secs()).collect();
    assert_eq!(waits, vec![10, 20, 40, 60, 60, 60]);
}

#[test]
fn retry_after_is_bounded_by_max_interval() {
    let p = RetryPolicy {
        backoff: Backoff::Fixed { interval: secs(5) },
        ..RetryPolicy::default()
    };
    let t0 = Utc::now();
    let at = p.next_attempt_at(1, t0, t0, Some(secs(3600)), 0.5).unwrap();
    assert_eq!((at - t0).num_seconds(), 5);
    let at = p.next_attempt_at(1, t0, t0, Some(secs(2)), 0.5).unwrap();
    assert_eq!((at - t0).num_seconds(), 2);
}

#[test]
fn max_duration_ends_the_round() {
    let p = RetryPolicy {
        backoff: Backoff::Fixed { interval: secs(60) },
        max_attempts: Some(100),
        max_duration: Some(secs(150)),
        ..RetryPolicy::default()
    };
    let t0 = Utc::now();
    assert!(p
        .next_attempt_at(2, t0, t0 + chrono::Duration::seconds(60), None, 0.5)
        .is_some());
    assert!(p
        .next_attempt_at(3, t0, t0 + chrono::Duration::seconds(120), None, 0.5)
        .is_none());
}

#[test]
fn without_an_attempt_limit_the_round_lasts_max_duration() {
    let p = RetryPolicy {
        backoff: Backoff::Fixed { interval: secs(60) },
        max_attempts: None,
        max_duration: Some(secs(24 * 3600)),
        ..RetryPolicy::default()
    };
    let t0 = Utc::now();
    let late = t0 + chrono::Duration::hours(23);
    assert!(p.next_attempt_at(5000, t0, late, None, 0.5).is_some());
    let later = t0 + chrono::Duration::seconds(24 * 3600 - 30);
    assert!(p.next_attempt_at(5001, t0, later, None, 0.5).is_none());
}

proptest! {
    #[test]
    fn delays_stay_within_policy_bounds(p in arb_policy(), n in 2u32..=200) {
        let d = p.delay_before(n);
        prop_assert!(d >= MIN_STEP);
        prop_assert!(d <= p.max_interval());
    }

    #[test]
    fn growing_backoffs_never_shrink(p in arb_policy(), n in 2u32..=150) {
        if !matches!(p.backoff, Backoff::Schedule { .. }) {
            prop_assert!(p.delay_before(n + 1) >= p.delay_before(n));
        }
    }

    #[test]
    fn jitter_stays_in_range(p in arb_policy(), n in 2u32..=120, u in 0.0f64..1.0) {
        let base = p.delay_before(n).as_secs_f64();
        let d = p.jittered_delay_before(n, u).as_secs_f64();
        prop_assert!(d >= base * (1.0 - p.jitter) - 1e-6);
        prop_assert!(d <= base * (1.0 + p.jitter) + 1e-6);
    }

    #[test]
    fn schedule_lists_are_followed_then_the_last_step_repeats(
        steps in prop::collection::vec(1u64..100_000, 1..=MAX_SCHEDULE_STEPS),
        extra in 0u32..20,
    ) {
        let p = RetryPolicy {
            backoff: Backoff::Schedule { steps: steps.iter().copied().map(secs).collect() },
            ..RetryPolicy::default()
        };
        for (i, s) in steps.iter().enumerate() {
            prop_assert_eq!(p.delay_before(i as u32 + 2), secs(*s));
        }
        let last = *steps.last().unwrap();
        prop_assert_eq!(p.delay_before(steps.len() as u32 + 2 + extra), secs(last));
    }

    #[test]
    fn attempts_never_exceed_max(p in arb_policy(), made in 0u32..=150) {
        let t0 = Utc::now();
        let next = p.next_attempt_at(made, t0, t0, None, 0.5);
        prop_assert_eq!(next.is_some(), made < p.max_attempts.unwrap());
    }
}
