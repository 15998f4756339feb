use super::*;

const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_well_formed_traceparent_is_read_and_written_back_as_it_came() {
    let parent = TraceParent::from_headers(Some(GOOD), Some("rojo=00f067aa0ba902b7")).unwrap();
    assert_eq!(parent.header(), GOOD);
    assert_eq!(parent.flags, 1);
    assert_eq!(parent.state.as_deref(), Some("rojo=00f067aa0ba902b7"));
    // A later version may say more after its four fields; only those are kept.
    let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes";
    assert!(TraceParent::from_headers(Some(later), None).is_some());
    // Flags version 00 does not define are passed on as zero.
    let odd = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff";
    let parent = TraceParent::from_headers(Some(odd), None).unwrap();
    assert!(parent.sampled());
    assert!(parent.header().ends_with("-03"));
}

#[test]
fn a_malformed_traceparent_is_ignored_with_its_tracestate() {
    let bad = [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        "00-4bf92f3577b34da6a3ce929d0e0é736-00f067aa0ba902b7-01",
    ];
    for value in bad {
        assert_eq!(
            TraceParent::from_headers(Some(value), Some("a=b")),
            None,
            "{value}"
        );
    }
    assert_eq!(TraceParent::from_headers(None, Some("a=b")), None);
}

#[test]
fn a_tracestate_too_long_or_not_ascii_is_dropped_on_its_own() {
    let long = "a=".to_string() + &"b".repeat(MAX_TRACESTATE);
    for state in [long.as_str(), "a=\u{7f}", "", "a=\u{e9}"] {
        let parent = TraceParent::from_headers(Some(GOOD), Some(state)).unwrap();
        assert_eq!(parent.state, None, "{state:?}");
    }
}

#[test]
fn a_task_keeps_its_trace_and_its_attempts_name_their_own_span() {
    let caller = TraceParent::from_headers(Some(GOOD), Some("k=v")).unwrap();
    let trace = TaskTrace::under(caller.clone(), SpanId::random());
    let json = serde_json::to_string(&trace).unwrap();
    assert_eq!(serde_json::from_str::<TaskTrace>(&json).unwrap(), trace);
    let attempt = SpanId::random();
    let sent = trace.for_attempt(attempt);
    assert_eq!(sent.trace_id, caller.trace_id);
    assert_eq!(sent.span_id, attempt);
    assert_eq!(sent.state.as_deref(), Some("k=v"));
    assert!(
        serde_json::from_str::<TaskTrace>(r#"{"parent":"nope","span":"00f067aa0ba902b7"}"#)
            .is_err()
    );
}
