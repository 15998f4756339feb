use chrono::Duration as Span;

use super::*;
use crate::testing::{sample_task, unique_tenant};

fn failed_at(created: DateTime<Utc>) -> Task {
    let mut task = sample_task(&unique_tenant("bulk"), None, created);
    task.status = Status::Failed;
    task.last_error = Some("HTTP 503".into());
    task
}

fn by_url(action: BulkAction) -> BulkPlan {
    let filter = TaskFilter {
        url_prefix: Some("https://".into()),
        ..TaskFilter::default()
    };
    BulkPlan::new(action, filter, None, false).unwrap()
}

#[test]
fn a_plan_refuses_an_empty_filter_unless_all_is_said_and_names_the_field() {
    let empty = TaskFilter::default();
    let refused = BulkPlan::new(BulkAction::Retry, empty.clone(), None, false).unwrap_err();
    assert_eq!(refused.field.to_string(), "filter");
    let plan = BulkPlan::new(BulkAction::Retry, empty, None, true).unwrap();
    assert_eq!(plan.per_second, DEFAULT_PACE);
    assert_eq!(plan.statuses(), vec![Status::Failed]);
}

#[test]
fn a_plan_refuses_states_its_action_does_not_take_and_a_pace_out_of_range() {
    let held = TaskFilter {
        statuses: vec![Status::Held],
        ..TaskFilter::default()
    };
    let refused = BulkPlan::new(BulkAction::Retry, held.clone(), None, false).unwrap_err();
    assert_eq!(refused.field.to_string(), "filter.statuses");
    let plan = BulkPlan::new(BulkAction::Cancel, held.clone(), None, false).unwrap();
    assert_eq!(
        plan.statuses(),
        vec![Status::Held],
        "the filter's states only"
    );
    for pace in [0, 1_001] {
        let refused = BulkPlan::new(BulkAction::Cancel, held.clone(), Some(pace), false);
        assert_eq!(refused.unwrap_err().field.to_string(), "per_second");
    }
    let contradiction = TaskFilter {
        url: Some("https://a".into()),
        url_prefix: Some("https://".into()),
        ..TaskFilter::default()
    };
    let refused = BulkPlan::new(BulkAction::Cancel, contradiction, None, false).unwrap_err();
    assert_eq!(refused.field.to_string(), "filter.url_prefix");
}

#[test]
fn a_retry_acts_once_on_a_task_and_never_again_whatever_its_times() {
    let now = Utc::now();
    let plan = by_url(BulkAction::Retry);
    let since = now - Span::seconds(10);
    let task = failed_at(now - Span::minutes(5));
    assert!(plan.takes(&task, since));
    let listed = InHand::of(&task);
    let Act::Write(retried) = plan.act(&task, &listed, now) else {
        panic!("a failed task is retried");
    };
    assert_eq!(retried.status, Status::Scheduled);
    // The job stopped before it wrote its progress: the task, failed again since, is
    // acted on again as part of the page it had in hand, and counted, not retried.
    let mut again = (*retried).clone();
    again.status = Status::Failed;
    assert_eq!(plan.act(&again, &listed, now), Act::AlreadyDone);
    assert_eq!(plan.act(&retried, &listed, now), Act::AlreadyDone);
    // A task registered before the job but whose first round began after it (due, or
    // released, later) is retried all the same: rounds are counted, not times.
    let mut late = failed_at(now - Span::minutes(60));
    late.round_started_at = now;
    assert!(matches!(
        plan.act(&late, &InHand::of(&late), now),
        Act::Write(_)
    ));
    // A task registered after the job began is not the job's.
    assert!(!plan.takes(&failed_at(now), since));
    // One replaced (by key) since it was read, so that the filter no longer takes it, is
    // left.
    let mut replaced = failed_at(now - Span::minutes(5));
    replaced.spec.request.url = "ftp://elsewhere".into();
    assert_eq!(
        plan.act(&replaced, &InHand::of(&replaced), now),
        Act::Leave(Status::Failed)
    );
}

#[test]
fn cancel_and_release_count_a_task_already_done_and_leave_one_that_moved_on() {
    let now = Utc::now();
    let mut held = sample_task(&unique_tenant("bulk"), None, now - Span::minutes(1));
    held.status = Status::Held;
    let cancel = by_url(BulkAction::Cancel);
    let listed = InHand::of(&held);
    let Act::Write(canceled) = cancel.act(&held, &listed, now) else {
        panic!("a held task is canceled");
    };
    assert_eq!(canceled.status, Status::Canceled);
    assert_eq!(cancel.act(&canceled, &listed, now), Act::AlreadyDone);
    let mut delivering = held.clone();
    delivering.status = Status::Delivering;
    assert_eq!(
        cancel.act(&delivering, &listed, now),
        Act::Leave(Status::Delivering)
    );
    let mut succeeded = held.clone();
    succeeded.status = Status::Succeeded;
    let release = by_url(BulkAction::Release);
    assert_eq!(
        release.act(&succeeded, &listed, now),
        Act::Leave(Status::Succeeded)
    );
}

#[test]
fn a_job_pages_through_each_state_and_finishes_with_its_report() {
    let now = Utc::now();
    let tenant = unique_tenant("bulk");
    let job = BulkJob::new(tenant, by_url(BulkAction::Cancel), now);
    assert_eq!(job.reading(), Some(Status::Scheduled));
    let claimed = job.claim("a", now).unwrap();
    assert_eq!(claimed.version, job.version + 1);
    assert!(matches!(claimed.claim("b", now), Err(JobRefusal::Held(_))));
    let later = now + JOB_LEASE + Span::seconds(1);
    assert!(
        claimed.claim("b", later).is_ok(),
        "a lapsed lease is taken over"
    );

    let ids = vec![
        InHand {
            id: TaskId::new(),
            round: 1,
        },
        InHand {
            id: TaskId::new(),
            round: 1,
        },
    ];
    let read = claimed.page_read(3, ids.clone(), Some(ids[1].id), now);
    assert_eq!(read.in_hand, ids);
    assert_eq!(read.reading(), Some(Status::Scheduled));
    let done = read.page_done(1, 1, now);
    assert!(done.is_running() && done.in_hand.is_empty());
    let held = done.page_read(0, vec![], None, now).page_done(0, 0, now);
    assert_eq!(held.reading(), Some(Status::Held));
    let end = held.page_read(1, vec![], None, now).page_done(0, 0, now);
    assert_eq!(end.state, JobState::Finished);
    assert_eq!(
        end.progress,
        Progress {
            read: 4,
            matched: 2,
            done: 1,
            skipped: 1
        }
    );
    assert_eq!(end.claim("a", now), Err(JobRefusal::Finished));
}

#[test]
fn a_page_holds_at_most_a_seconds_worth_and_is_spread_over_it() {
    let mut plan = by_url(BulkAction::Retry);
    plan.per_second = 50;
    assert_eq!(plan.page(100), 50);
    assert_eq!(plan.pace(50), std::time::Duration::from_secs(1));
    plan.per_second = 400;
    assert_eq!(plan.page(100), 100);
    assert_eq!(plan.pace(100), std::time::Duration::from_millis(250));
}

#[test]
fn a_filter_of_the_actions_own_states_only_is_empty_and_ended_is_for_retries() {
    let every_failed = TaskFilter {
        statuses: vec![Status::Failed],
        ..TaskFilter::default()
    };
    let refused = BulkPlan::new(BulkAction::Retry, every_failed, None, false).unwrap_err();
    assert_eq!(refused.field.to_string(), "filter");
    let ended = TaskFilter {
        ended: crate::domain::Between {
            after: Some(Utc::now()),
            before: None,
        },
        ..TaskFilter::default()
    };
    let refused = BulkPlan::new(BulkAction::Cancel, ended, None, false).unwrap_err();
    assert_eq!(refused.field.to_string(), "filter.ended");
    for empty in ["", "hooks.example.com"] {
        let filter = TaskFilter {
            destination: Some(empty.into()),
            ..TaskFilter::default()
        };
        let refused = BulkPlan::new(BulkAction::Retry, filter, None, false).unwrap_err();
        assert_eq!(refused.field.to_string(), "filter.destination");
    }
}
