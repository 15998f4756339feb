use super::*;

fn at(s: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
}

fn settings(failures: u32, span: u64) -> BreakerSettings {
    BreakerSettings::new(
        Some(failures),
        Some(Duration::from_secs(span)),
        Some(Duration::from_secs(10)),
        Some(Duration::from_secs(40)),
    )
    .unwrap()
}

/// `n` failed calls, one a second from `from`; the changes they made.
fn fail(b: &mut Breaker, n: i64, from: i64, s: &BreakerSettings) -> Vec<BreakerChange> {
    (0..n)
        .filter_map(|i| b.on_call(CallHealth::Failing, false, at(from + i), s))
        .collect()
}

#[test]
fn it_opens_after_the_failures_in_a_row_once_they_span_the_time() {
    let s = settings(5, 10);
    let mut b = Breaker::default();
    assert!(
        fail(&mut b, 5, 0, &s).is_empty(),
        "5 failures in 4 s span too little"
    );
    assert_eq!(b.admit(at(5)), Admission::Call);
    assert_eq!(
        fail(&mut b, 6, 5, &s),
        vec![BreakerChange::Opened],
        "at 10 s"
    );
    assert_eq!(
        b.admit(at(11)),
        Admission::Wait(at(20)),
        "the first probe's wait"
    );

    let mut b = Breaker::default();
    fail(&mut b, 4, 0, &s);
    assert_eq!(b.on_call(CallHealth::Up, false, at(5), &s), None);
    assert!(
        fail(&mut b, 10, 6, &s).is_empty(),
        "an answer starts the count again"
    );
}

#[test]
fn one_probe_at_a_time_with_a_doubling_wait_and_a_success_closes_it() {
    let s = settings(1, 0);
    let mut b = Breaker::default();
    assert_eq!(fail(&mut b, 1, 0, &s), vec![BreakerChange::Opened]);
    assert_eq!(b.admit(at(10)), Admission::Probe);
    assert!(
        matches!(b.admit(at(11)), Admission::Wait(_)),
        "one probe at a time"
    );
    // A call let through before it opened reports: it does not move the breaker.
    assert_eq!(b.on_call(CallHealth::Up, false, at(12), &s), None);
    assert!(b.is_open());
    assert_eq!(b.on_call(CallHealth::Failing, true, at(12), &s), None);
    assert_eq!(
        b.admit(at(13)),
        Admission::Wait(at(32)),
        "20 s after a failed probe"
    );
    assert_eq!(b.admit(at(32)), Admission::Probe);
    b.on_call(CallHealth::Failing, true, at(32), &s);
    assert_eq!(b.admit(at(33)), Admission::Wait(at(72)), "capped at 40 s");
    assert_eq!(b.admit(at(72)), Admission::Probe);
    let closed = b.on_call(CallHealth::Up, true, at(73), &s);
    assert_eq!(closed, Some(BreakerChange::Closed));
    assert_eq!(b.admit(at(73)), Admission::Call);
}

#[test]
fn a_probe_that_never_reports_frees_the_way_for_another() {
    let s = settings(1, 0);
    let mut b = Breaker::default();
    fail(&mut b, 1, 0, &s);
    assert_eq!(b.admit(at(10)), Admission::Probe);
    assert_eq!(b.admit(at(10 + 90)), Admission::Probe, "its lease ended");
    assert!(b.release_probe(), "a probe not made is given back");
    assert_eq!(
        b.admit(at(101)),
        Admission::Probe,
        "and the next may go at once"
    );
}

#[test]
fn a_wait_is_at_most_a_minute_whatever_the_next_probe() {
    let long = BreakerSettings::new(
        Some(1),
        Some(Duration::ZERO),
        Some(Duration::from_secs(600)),
        None,
    );
    let mut b = Breaker::default();
    b.on_call(CallHealth::Failing, false, at(0), &long.unwrap());
    assert_eq!(b.admit(at(1)), Admission::Wait(at(61)));
}

#[test]
fn opened_by_hand_it_waits_for_a_hand_to_close_it() {
    let s = settings(1, 0);
    let mut b = Breaker::default();
    assert_eq!(b.open_by_hand(at(0)), Some(BreakerChange::Opened));
    assert_eq!(b.open_by_hand(at(1)), None, "already open");
    assert!(matches!(b.admit(at(1000)), Admission::Wait(_)), "no probe");
    assert_eq!(b.on_call(CallHealth::Up, true, at(1000), &s), None);
    assert_eq!(b.close_by_hand(), Some(BreakerChange::Closed));
    assert_eq!(b.close_by_hand(), None);
    assert_eq!(b.admit(at(1001)), Admission::Call);
}

#[test]
fn health_is_whether_the_receiver_answers_for_itself() {
    for up in [200, 204, 301, 400, 404, 410, 422] {
        assert_eq!(CallHealth::of(Some(up)), CallHealth::Up, "{up}");
    }
    for failing in [Some(408), Some(429), Some(500), Some(503), None] {
        assert_eq!(CallHealth::of(failing), CallHealth::Failing, "{failing:?}");
    }
}

#[test]
fn settings_are_refused_by_name() {
    let field = |r: Result<BreakerSettings, Invalid>| r.unwrap_err().field.to_string();
    assert_eq!(
        field(BreakerSettings::new(Some(0), None, None, None)),
        "failures"
    );
    let long = Some(Duration::from_secs(2 * 24 * 3600));
    assert_eq!(field(BreakerSettings::new(None, long, None, None)), "span");
    let zero = Some(Duration::ZERO);
    assert_eq!(
        field(BreakerSettings::new(None, None, zero, None)),
        "first_probe"
    );
    let (first, max) = (Some(Duration::from_secs(60)), Some(Duration::from_secs(30)));
    assert_eq!(
        field(BreakerSettings::new(None, None, first, max)),
        "max_probe"
    );
    assert_eq!(
        BreakerSettings::new(None, None, None, None).unwrap(),
        BreakerSettings::default()
    );
}
