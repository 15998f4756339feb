use super::*;
use crate::domain::order::{InvalidOrderKey, OrderKey, OrderSpec};
use crate::domain::TaskId;
use crate::testing as fixtures;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
}

/// A task of key `k` at place `seq`, in `status`, with `policy` for its failure.
fn ordered(seq: u64, status: Status, policy: OnHeadFailure) -> Task {
    let tenant = fixtures::unique_tenant("order");
    let mut task = fixtures::sample_task(&tenant, None, at(0));
    let mut order = OrderSpec::new(OrderKey::parse("k").unwrap(), policy);
    order.seq = seq;
    task.spec.order = Some(order);
    task.status = status;
    task
}

fn place(task: &Task) -> OrderEntry {
    OrderEntry {
        seq: task.spec.order.as_ref().unwrap().seq,
        task: task.id,
        at: at(0),
    }
}

#[test]
fn a_task_holds_its_place_until_it_succeeds_or_is_canceled() {
    use OnHeadFailure::*;
    for (status, policy, holds) in [
        (Status::Held, Block, true),
        (Status::Scheduled, Block, true),
        (Status::Delivering, Skip, true),
        (Status::Failed, Block, true),
        (Status::Failed, Skip, false),
        (Status::Succeeded, Block, false),
        (Status::Canceled, Block, false),
    ] {
        assert_eq!(
            ordered(1, status, policy).holds_order(),
            holds,
            "{status:?} {policy:?}"
        );
    }
    let plain = fixtures::sample_task(&fixtures::unique_tenant("order"), None, at(0));
    assert!(!plain.holds_order(), "no key, no place");
}

#[test]
fn only_the_head_goes_and_a_place_no_longer_held_is_left() {
    let elder = ordered(1, Status::Scheduled, OnHeadFailure::Block);
    let younger = ordered(2, Status::Scheduled, OnHeadFailure::Block);
    let head = place(&elder);
    assert_eq!(elder.turn(Some(&head), Some(&elder), at(0)), Turn::Go);
    assert_eq!(younger.turn(Some(&head), Some(&elder), at(0)), Turn::Wait);
    // A failed elder blocks the key, unless it asked to be skipped.
    let failed = ordered(1, Status::Failed, OnHeadFailure::Block);
    assert_eq!(younger.turn(Some(&head), Some(&failed), at(0)), Turn::Wait);
    let skipped = ordered(1, Status::Failed, OnHeadFailure::Skip);
    let head = place(&skipped);
    assert_eq!(
        younger.turn(Some(&head), Some(&skipped), at(60)),
        Turn::Stale(1)
    );
    // Ended, but its place not yet given up: left by whoever comes next.
    let mut done = elder.clone();
    done.status = Status::Succeeded;
    assert_eq!(
        younger.turn(Some(&place(&elder)), Some(&done), at(60)),
        Turn::Stale(1)
    );
    // A place just taken may be ahead of its task's write (a skipped task retried, read
    // before the retry is written): it is left only once it is a minute old.
    assert_eq!(
        younger.turn(Some(&place(&elder)), Some(&done), at(59)),
        Turn::Wait
    );
    // A place whose task took a new one since.
    let mut moved = elder.clone();
    moved.spec.order.as_mut().unwrap().seq = 9;
    assert_eq!(
        younger.turn(Some(&place(&elder)), Some(&moved), at(60)),
        Turn::Stale(1)
    );
    // No place held: nobody is held up.
    assert_eq!(younger.turn(None, None, at(0)), Turn::Go);
}

#[test]
fn a_place_whose_task_never_came_is_waited_for_a_minute_then_left() {
    let younger = ordered(2, Status::Scheduled, OnHeadFailure::Block);
    let orphan = OrderEntry {
        seq: 1,
        task: TaskId::new(),
        at: at(0),
    };
    assert_eq!(younger.turn(Some(&orphan), None, at(59)), Turn::Wait);
    assert_eq!(younger.turn(Some(&orphan), None, at(60)), Turn::Stale(1));
}

#[test]
fn order_keys_are_one_to_255_bytes_without_control_characters() {
    assert!(OrderKey::parse("order-42").is_ok());
    assert!(OrderKey::parse("é".repeat(127)).is_ok());
    assert_eq!(OrderKey::parse(""), Err(InvalidOrderKey));
    assert_eq!(OrderKey::parse("x".repeat(256)), Err(InvalidOrderKey));
    assert_eq!(OrderKey::parse("a\nb"), Err(InvalidOrderKey));
}
