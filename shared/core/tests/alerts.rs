//! Failure alerts in the engine: raised as ordinary tasks, linked both ways, never about
//! an alert, owed (and raised by the sweep) when they cannot be registered at once.

use boomerang_core::domain::notice::AlertBody;
use boomerang_core::domain::{AlertTarget, Notify, Task};
use boomerang_core::testing::harness::*;

const ALERTS: &str = "https://alerts.example.com/hook";
const SERVER_ALERTS: &str = "https://oncall.example.com/hook";

fn target(url: &str) -> AlertTarget {
    AlertTarget {
        url: url.into(),
        headers: vec![("x-team".into(), "payments".into())],
    }
}

fn once() -> RetryPolicy {
    RetryPolicy::default().with_max_attempts(2).unwrap()
}

/// What these tests add to the engine harness.
trait AlertingTasks {
    async fn register_alerting(&self, on_failure: Option<AlertTarget>, notify: Notify) -> Task;
    async fn task(&self, id: &boomerang_core::domain::TaskId) -> Task;
    async fn fire(&self, task: &Task) -> Task;
}

impl AlertingTasks for Harness {
    async fn register_alerting(&self, on_failure: Option<AlertTarget>, notify: Notify) -> Task {
        let mut new = new_task(FireTime::Now, once());
        new.spec.on_failure = on_failure;
        new.spec.notify = notify;
        new.spec.key = Some(BusinessKey::parse("order-42".to_string()).unwrap());
        self.engine.register(&self.tenant, new).await.unwrap().task
    }

    async fn task(&self, id: &boomerang_core::domain::TaskId) -> Task {
        self.engine.get(&self.tenant, id).await.unwrap().task
    }

    /// Plays the timer for the task's current attempt, at its due time.
    async fn fire(&self, task: &Task) -> Task {
        let now = self.task(&task.id).await;
        if let Some(due) = now.next_attempt_at {
            let wait = (due - self.clock_now()).num_milliseconds().max(0) as u64;
            self.clock.advance(Duration::from_millis(wait));
        }
        self.engine
            .deliver(AttemptRef::delivery(
                self.tenant.clone(),
                task.id,
                now.attempt,
            ))
            .await
            .unwrap();
        self.task(&task.id).await
    }
}

fn body_of(alert: &Task) -> AlertBody {
    serde_json::from_str(&alert.spec.request.body).unwrap()
}

#[tokio::test]
async fn a_final_failure_raises_one_alert_linked_both_ways() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500), status(503)]));
    let task = h
        .register_alerting(Some(target(ALERTS)), Notify::Final)
        .await;
    let after_first = h.fire(&task).await;
    assert_eq!(after_first.status, Status::Scheduled);
    assert!(
        after_first.alerts.is_empty(),
        "notify: final says nothing yet"
    );

    let failed = h.fire(&task).await;
    assert_eq!(failed.status, Status::Failed);
    assert!(!failed.alert_pending);
    assert_eq!(failed.alerts.len(), 1);
    let alert = h.task(&failed.alerts[0]).await;
    assert_eq!(alert.spec.alert_of, Some(task.id));
    assert_eq!(alert.status, Status::Scheduled);
    assert_eq!(alert.next_attempt_at, Some(h.clock_now()), "sent at once");
    assert_eq!(alert.spec.request.url, ALERTS);
    assert_eq!(alert.spec.request.method, "POST");
    let headers = &alert.spec.request.headers;
    assert!(headers.contains(&("x-team".into(), "payments".into())));
    assert!(headers.contains(&("content-type".into(), "application/json".into())));

    let body = body_of(&alert);
    assert_eq!(body.kind, "task.failed");
    assert_eq!(body.task_id, task.id);
    assert_eq!(body.key.as_deref(), Some("order-42"));
    assert_eq!(body.url, task.spec.request.url);
    assert_eq!(body.attempt, 2);
    assert_eq!(body.next_attempt_at, None);
    assert_eq!(body.last_error.as_deref(), Some("HTTP 503"));
    let codes: Vec<_> = body.attempts.iter().map(|a| a.status_code).collect();
    assert_eq!(codes, vec![Some(500), Some(503)]);

    // The alert is delivered like any task: signed by the webhook client, to its URL.
    let delivered = h.fire(&alert).await;
    assert_eq!(delivered.status, Status::Succeeded);
    assert_eq!(h.webhooks.urls.lock().unwrap().last().unwrap(), ALERTS);
    assert_eq!(h.task(&task.id).await.status, Status::Failed, "unchanged");
}

#[tokio::test]
async fn notify_every_sends_a_retrying_notice_for_each_retried_attempt() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500)]));
    let task = h
        .register_alerting(Some(target(ALERTS)), Notify::Every)
        .await;
    let retrying = h.fire(&task).await;
    assert_eq!(retrying.status, Status::Scheduled);
    assert_eq!(retrying.alerts.len(), 1);
    let notice = body_of(&h.task(&retrying.alerts[0]).await);
    assert_eq!(notice.kind, "task.retrying");
    assert_eq!(notice.attempt, 1);
    assert_eq!(notice.next_attempt_at, retrying.next_attempt_at);

    let succeeded = h.fire(&task).await;
    assert_eq!(succeeded.status, Status::Succeeded);
    assert_eq!(succeeded.alerts.len(), 1, "a success raises nothing");
}

#[tokio::test]
async fn alerts_never_raise_alerts_and_a_failing_alert_leaves_its_task_alone() {
    // The server has a default destination, so only the rule stops an alert's alert.
    let h = harness_alerting(
        ScriptedWebhooks::answering(vec![status(500), status(500), status(410)]),
        Some(target(SERVER_ALERTS)),
    );
    let task = h.register_alerting(None, Notify::Every).await;
    h.fire(&task).await;
    let failed = h.fire(&task).await;
    assert_eq!(failed.status, Status::Failed);
    assert_eq!(failed.alerts.len(), 2, "one notice, then the final alert");
    let final_alert = h.task(&failed.alerts[1]).await;
    assert_eq!(final_alert.spec.request.url, SERVER_ALERTS);
    assert_eq!(body_of(&final_alert).kind, "task.failed");

    let retrying_alert = h.task(&failed.alerts[0]).await;
    let alert_failed = h.fire(&retrying_alert).await;
    assert_eq!(alert_failed.status, Status::Failed, "410 ends the alert");
    assert!(alert_failed.alerts.is_empty());
    assert!(!alert_failed.alert_pending);
    assert_eq!(h.task(&task.id).await, failed, "the task is not touched");
    assert_eq!(h.stored().await.len(), 3, "no alert about the alert");
}

#[tokio::test]
async fn without_a_destination_nothing_is_raised_or_owed() {
    let h = harness(ScriptedWebhooks::answering(vec![status(410)]));
    let task = h.register_alerting(None, Notify::Every).await;
    let failed = h.fire(&task).await;
    assert_eq!(failed.status, Status::Failed);
    assert!(failed.alerts.is_empty() && !failed.alert_pending);
    assert_eq!(
        h.engine
            .sweep(chrono::Duration::zero())
            .await
            .unwrap()
            .alerts_raised,
        0
    );
    assert_eq!(h.stored().await.len(), 1);
}

#[tokio::test]
async fn an_alert_that_cannot_be_registered_is_owed_and_the_sweep_raises_it_once() {
    let h = harness_alerting(ScriptedWebhooks::answering(vec![status(410)]), None);
    let task = h
        .register_alerting(Some(target(ALERTS)), Notify::Final)
        .await;
    h.store.refuse_creates(true);
    let failed = h.fire(&task).await;
    assert_eq!(failed.status, Status::Failed);
    assert!(failed.alert_pending, "owed, not lost");
    assert!(failed.alerts.is_empty());
    assert!(!failed.is_settled(), "retention keeps it");

    let still_down = h.engine.sweep(chrono::Duration::zero()).await.unwrap();
    assert_eq!(still_down.alerts_raised, 1);
    assert!(h.task(&task.id).await.alert_pending);

    h.store.refuse_creates(false);
    h.engine.sweep(chrono::Duration::zero()).await.unwrap();
    let settled = h.task(&task.id).await;
    assert!(!settled.alert_pending);
    assert_eq!(settled.alerts.len(), 1);
    let alert = h.task(&settled.alerts[0]).await;
    assert_eq!(
        body_of(&alert).attempts.len(),
        1,
        "read from the stored attempts"
    );

    let again = h.engine.sweep(chrono::Duration::zero()).await.unwrap();
    assert_eq!(again.alerts_raised, 0);
    assert_eq!(h.stored().await.len(), 2, "raised once");
}

#[tokio::test]
async fn notify_never_raises_nothing_even_for_the_final_failure() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500), status(503)]));
    let task = h
        .register_alerting(Some(target(ALERTS)), Notify::Never)
        .await;
    h.fire(&task).await;
    let failed = h.fire(&task).await;
    assert_eq!(failed.status, Status::Failed);
    assert!(failed.alerts.is_empty());
    assert!(!failed.alert_pending, "nothing is owed");
    assert_eq!(h.webhooks.calls(), 2, "the task's two attempts only");
    assert_eq!(
        h.dead_letters.letters().len(),
        1,
        "the dead letter still records it"
    );
}

#[tokio::test]
async fn a_success_is_reported_to_on_success_only() {
    let h = harness(ScriptedWebhooks::answering(vec![status(500), status(200)]));
    let mut new = new_task(FireTime::Now, once());
    new.spec.on_success = Some(target(ALERTS));
    new.spec.on_failure = Some(target(SERVER_ALERTS));
    let task = h.engine.register(&h.tenant, new).await.unwrap().task;
    let retried = h.fire(&task).await;
    assert!(
        retried.alerts.is_empty(),
        "a failed attempt of notify: final"
    );
    let done = h.fire(&task).await;
    assert_eq!(done.status, Status::Succeeded);
    assert_eq!(done.alerts.len(), 1);
    let notice = h.task(&done.alerts[0]).await;
    assert_eq!(notice.spec.request.url, ALERTS);
    assert_eq!(notice.spec.alert_of, Some(task.id));
    let body = body_of(&notice);
    assert_eq!(body.kind, "task.succeeded");
    assert_eq!((body.attempt, body.attempts.len()), (2, 2));

    // Without on_success, a success is silent whatever the defaults.
    let quiet = h
        .register_alerting(Some(target(ALERTS)), Notify::Every)
        .await;
    let done = h.fire(&quiet).await;
    assert_eq!(done.status, Status::Succeeded);
    assert!(done.alerts.is_empty());
}
