use super::*;
use crate::testing::{sample_task, unique_tenant};

fn failed(url: &str, error: &str) -> Task {
    let mut task = sample_task(&unique_tenant("filter"), None, Utc::now());
    task.spec.request.url = url.into();
    task.status = Status::Failed;
    task.last_error = Some(error.into());
    task
}

#[test]
fn each_part_narrows_and_all_must_hold() {
    let task = failed("https://a.example/hooks/1", "HTTP 503");
    let all = TaskFilter::default();
    assert!(all.is_empty() && all.matches(&task));
    let by = |f: TaskFilter| f.matches(&task);
    assert!(by(TaskFilter {
        url_prefix: Some("https://a.example/hooks".into()),
        ..all.clone()
    }));
    assert!(!by(TaskFilter {
        url_prefix: Some("https://b.example".into()),
        ..all.clone()
    }));
    let host = "HTTPS://A.example:443/x".to_string();
    assert!(by(TaskFilter {
        destination: Some(host),
        ..all.clone()
    }));
    assert!(by(TaskFilter {
        last_status: Some(503),
        ..all.clone()
    }));
    assert!(!by(TaskFilter {
        last_status: Some(500),
        ..all.clone()
    }));
    assert!(by(TaskFilter {
        error_class: Some(ErrorClass::Http),
        ..all.clone()
    }));
    assert!(!by(TaskFilter {
        error_class: Some(ErrorClass::Timeout),
        ..all.clone()
    }));
    assert!(!by(TaskFilter {
        statuses: vec![Status::Scheduled],
        ..all.clone()
    }));
    let meta = TaskFilter {
        metadata: [("k".into(), "v".into())].into(),
        ..all.clone()
    };
    assert!(!by(meta), "a metadata entry the task lacks");
    let later = Between {
        after: Some(task.created_at + chrono::Duration::seconds(1)),
        before: None,
    };
    assert!(!by(TaskFilter {
        registered: later,
        ..all.clone()
    }));
    assert!(by(TaskFilter {
        ended: Between {
            after: Some(task.updated_at),
            before: None
        },
        ..all
    }));
}

#[test]
fn error_classes_and_status_codes_are_read_from_the_last_error() {
    assert_eq!(ErrorClass::of("HTTP 404 (permanent)"), ErrorClass::Http);
    assert_eq!(
        ErrorClass::of("HTTP 200 but the body did not match expect_body"),
        ErrorClass::BodyMismatch
    );
    assert_eq!(ErrorClass::of("timed out after 10s"), ErrorClass::Timeout);
    assert_eq!(ErrorClass::of("connection refused"), ErrorClass::Transport);
    assert_eq!(
        ErrorClass::of("destination refused: private address"),
        ErrorClass::Refused
    );
    assert_eq!(status_of("HTTP 404 (permanent)"), Some(404));
    assert_eq!(status_of("timed out"), None);
}

#[test]
fn contradictions_are_refused_by_their_part() {
    let field = |f: TaskFilter| f.check().unwrap_err().field.to_string();
    let both = TaskFilter {
        url: Some("a".into()),
        url_prefix: Some("a".into()),
        ..TaskFilter::default()
    };
    assert_eq!(field(both), "filter.url_prefix");
    assert_eq!(
        field(TaskFilter {
            last_status: Some(42),
            ..TaskFilter::default()
        }),
        "filter.last_status"
    );
    let now = Utc::now();
    let backwards = Between {
        after: Some(now),
        before: Some(now),
    };
    assert_eq!(
        field(TaskFilter {
            ended: backwards,
            ..TaskFilter::default()
        }),
        "filter.ended.before"
    );
    assert!(!TaskFilter {
        statuses: vec![Status::Failed],
        ..TaskFilter::default()
    }
    .is_empty());
}

#[test]
fn parts_longer_than_a_task_can_hold_are_refused_by_name() {
    let long = "x".repeat(crate::domain::limits::MAX_URL_LEN + 1);
    let refused = |f: TaskFilter| f.check().unwrap_err().field.to_string();
    assert_eq!(
        refused(TaskFilter {
            url_prefix: Some(long.clone()),
            ..TaskFilter::default()
        }),
        "filter.url_prefix"
    );
    assert_eq!(
        refused(TaskFilter {
            flow_key: Some(long.clone()),
            ..TaskFilter::default()
        }),
        "filter.flow_key"
    );
    let metadata = BTreeMap::from([("a.b".to_string(), long)]);
    let field = TaskFilter {
        metadata,
        ..TaskFilter::default()
    }
    .check()
    .unwrap_err()
    .field;
    assert_eq!(field.segments().len(), 3, "`a.b` is one name: {field}");
}
