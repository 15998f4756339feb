//! Schedules and replace-by-key, played on a manual clock against any store: the same
//! scenarios run on the in-memory store (the engine's own tests) and on each real backend.
//! Timers are played by hand: each step fires every scheduled task that is due. The times
//! lie ahead (a store may expire finished tasks by the real clock).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::clock::{Clock, ManualClock};
use crate::domain::{BusinessKey, CatchUp, Recurrence, RetryPolicy, Status, Task, TenantId};
use crate::engine::{DeliverOutcome, Engine, FireTime, NewSchedule, NewTask, Submission};
use crate::ports::ListQuery;

/// An engine, the manual clock it runs on, and a tenant to work as.
pub struct Scene<'a> {
    pub engine: &'a Engine,
    pub clock: &'a ManualClock,
    pub tenant: TenantId,
    /// Where the callbacks go (a receiver that answers 200).
    pub url: String,
}

impl crate::testing::harness::Harness {
    /// The harness as a scene: its engine, clock and tenant, calling `example.com` (the
    /// in-memory webhooks answer every URL).
    pub fn scene(&self) -> Scene<'_> {
        Scene {
            engine: &self.engine,
            clock: &self.clock,
            tenant: self.tenant.clone(),
            url: "https://example.com/hook".into(),
        }
    }
}

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

impl Scene<'_> {
    pub fn task(&self, when: FireTime) -> NewTask {
        let mut new = crate::testing::harness::new_task(when, RetryPolicy::default());
        new.spec.request.url = self.url.clone();
        new.spec.timeout = Duration::from_secs(5);
        new.request_hash = String::new();
        new
    }

    pub fn cron(&self, pattern: &str, zone: &str) -> NewSchedule {
        NewSchedule {
            recurrence: Recurrence::cron(pattern, zone).unwrap(),
            start_at: None,
            end_at: None,
            catch_up: CatchUp::One,
            task: self.task(FireTime::Now),
        }
    }

    /// Every task of the tenant, all pages.
    pub async fn tasks(&self) -> Vec<Task> {
        let mut all = Vec::new();
        let mut query = ListQuery {
            limit: 100,
            ..Default::default()
        };
        loop {
            let page = self.engine.list(&self.tenant, &query).await.unwrap();
            all.extend(page.tasks);
            match page.next_cursor {
                Some(c) => query.cursor = Some(c),
                None => return all,
            }
        }
    }

    /// Fires attempt 1 of every scheduled task due now; returns how many fired.
    pub async fn fire_due(&self) -> Vec<DeliverOutcome> {
        let now = self.clock.now();
        let mut outcomes = Vec::new();
        for task in self.tasks().await {
            let due = task.next_attempt_at.is_some_and(|d| d <= now);
            if task.status == Status::Scheduled && due {
                let at = task.attempt_ref(task.attempt);
                outcomes.push(self.engine.deliver(at).await.unwrap());
            }
        }
        outcomes
    }

    /// The times of the occurrences that called, in order.
    pub async fn called(&self) -> Vec<DateTime<Utc>> {
        let mut at: Vec<_> = self
            .tasks()
            .await
            .into_iter()
            .filter(|t| t.status == Status::Succeeded)
            .filter_map(|t| t.spec.occurrence.map(|o| o.at))
            .collect();
        at.sort();
        at
    }

    /// Steps the clock to each of `times`, firing what is due at each.
    async fn play(&self, times: &[DateTime<Utc>]) {
        for &t in times {
            self.clock.set(t);
            self.fire_due().await;
        }
    }
}

/// A daily 02:30 in Paris across both changes of 2027: once at 03:00 on the day 02:30 does
/// not exist, once on the day it happens twice.
pub async fn daylight_saving_both_ways(scene: &Scene<'_>) {
    scene.clock.set(utc("2027-03-26T12:00:00Z"));
    let schedule = scene
        .engine
        .create_schedule(&scene.tenant, scene.cron("30 2 * * *", "Europe/Paris"))
        .await
        .unwrap();
    let spring = [
        "2027-03-27T01:30:00Z", // 02:30 CET
        "2027-03-28T01:00:00Z", // 02:30 does not exist: 03:00 CEST
        "2027-03-29T00:30:00Z", // 02:30 CEST
    ]
    .map(utc);
    // Every quarter hour around the change, so any extra occurrence would fire too.
    let mut steps = Vec::new();
    let mut t = utc("2027-03-27T00:00:00Z");
    while t <= utc("2027-03-29T01:00:00Z") {
        steps.push(t);
        t += chrono::Duration::minutes(15);
    }
    scene.play(&steps).await;
    assert_eq!(scene.called().await, spring, "spring forward");

    scene
        .engine
        .delete_schedule(&scene.tenant, &schedule.id)
        .await
        .unwrap();
    scene.clock.set(utc("2027-10-29T12:00:00Z"));
    scene.fire_due().await; // the deleted schedule's pending occurrence is skipped
    scene
        .engine
        .create_schedule(&scene.tenant, scene.cron("30 2 * * *", "Europe/Paris"))
        .await
        .unwrap();
    let autumn = [
        "2027-10-30T00:30:00Z", // 02:30 CEST
        "2027-10-31T00:30:00Z", // 02:30 CEST; its second pass (01:30Z) does not fire
        "2027-11-01T01:30:00Z", // 02:30 CET
    ]
    .map(utc);
    let mut steps = Vec::new();
    let mut t = utc("2027-10-30T00:00:00Z");
    while t <= utc("2027-11-01T02:00:00Z") {
        steps.push(t);
        t += chrono::Duration::minutes(15);
    }
    scene.play(&steps).await;
    let called = scene.called().await;
    assert_eq!(&called[called.len() - 3..], &autumn, "fall back");
    assert_eq!(called.len(), 6, "one call per day, none twice: {called:?}");
}

/// Pause skips the pending occurrence and registers none; resume goes on from the next
/// slot; delete skips the pending one for good; a missed occurrence fires once.
pub async fn pause_resume_delete_and_catch_up(scene: &Scene<'_>) {
    let start = utc("2027-06-01T00:00:30Z");
    scene.clock.set(start);
    let s = scene
        .engine
        .create_schedule(&scene.tenant, scene.cron("0 * * * * *", "America/New_York"))
        .await
        .unwrap();
    let minute = |m: i64| utc("2027-06-01T00:00:00Z") + chrono::Duration::minutes(m);
    scene.play(&[minute(1), minute(2)]).await;
    assert_eq!(scene.called().await, vec![minute(1), minute(2)]);

    scene
        .engine
        .pause_schedule(&scene.tenant, &s.id)
        .await
        .unwrap();
    scene.play(&[minute(3), minute(4)]).await;
    assert_eq!(scene.called().await.len(), 2, "nothing while paused");
    let skipped = scene
        .tasks()
        .await
        .into_iter()
        .filter(|t| t.status == Status::Canceled)
        .count();
    assert_eq!(
        skipped, 1,
        "the pending occurrence was skipped, and none followed"
    );

    scene.clock.set(minute(4) + chrono::Duration::seconds(30));
    scene
        .engine
        .resume_schedule(&scene.tenant, &s.id)
        .await
        .unwrap();
    scene.play(&[minute(5)]).await;
    assert_eq!(scene.called().await, vec![minute(1), minute(2), minute(5)]);

    // Down from 00:05 to 00:09:30: 00:06 is due four slots late; it fires once, and the
    // next is 00:10, not 00:07.
    scene
        .play(&[minute(9) + chrono::Duration::seconds(30)])
        .await;
    scene.play(&[minute(10)]).await;
    assert_eq!(
        scene.called().await,
        vec![minute(1), minute(2), minute(5), minute(6), minute(10)]
    );

    scene
        .engine
        .delete_schedule(&scene.tenant, &s.id)
        .await
        .unwrap();
    scene.play(&[minute(11), minute(12)]).await;
    assert_eq!(scene.called().await.len(), 5, "nothing after delete");
    let pending = scene
        .tasks()
        .await
        .into_iter()
        .filter(|t| t.status == Status::Scheduled)
        .count();
    assert_eq!(pending, 0);
}

/// Rapid registrations of one key with `on_key: replace`: one task, due after the last
/// one's delay; and while they never stop, it comes due `max_delay` after the first.
pub async fn replace_by_key(scene: &Scene<'_>) {
    let t0 = utc("2027-06-01T00:00:00Z");
    scene.clock.set(t0);
    let key = BusinessKey::parse(format!("sync-{}", ulid::Ulid::new())).unwrap();
    let keyed = |body: usize| {
        let mut new = scene.task(FireTime::After(Duration::from_secs(10)));
        new.spec.key = Some(key.clone());
        new.spec.request.body = format!("{{\"n\":{body}}}");
        new
    };
    let mut ids = std::collections::BTreeSet::new();
    for n in 0..100 {
        scene.clock.set(t0 + chrono::Duration::milliseconds(50 * n));
        let r = scene
            .engine
            .submit(
                &scene.tenant,
                Submission::replacing(keyed(n as usize), None).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(r.created, n == 0);
        ids.insert(r.task.id);
    }
    assert_eq!(ids.len(), 1, "one task for the key");
    let last = t0 + chrono::Duration::milliseconds(50 * 99);
    scene.clock.set(last + chrono::Duration::seconds(9));
    assert!(
        scene.fire_due().await.is_empty(),
        "not before the last one's delay"
    );
    scene.clock.set(last + chrono::Duration::seconds(10));
    assert_eq!(
        scene.fire_due().await,
        vec![DeliverOutcome::Attempted(Status::Succeeded)]
    );
    let task = scene
        .tasks()
        .await
        .into_iter()
        .find(|t| ids.contains(&t.id))
        .unwrap();
    assert_eq!(
        task.spec.request.body, "{\"n\":99}",
        "the last registration's body"
    );

    // Never stopping, bounded by max_delay: one call 30 s after the first registration.
    let key2 = BusinessKey::parse(format!("busy-{}", ulid::Ulid::new())).unwrap();
    let t1 = last + chrono::Duration::minutes(1);
    let mut calls = 0;
    for n in 0..80 {
        scene.clock.set(t1 + chrono::Duration::seconds(n));
        let mut new = scene.task(FireTime::After(Duration::from_secs(10)));
        new.spec.key = Some(key2.clone());
        scene
            .engine
            .submit(
                &scene.tenant,
                Submission::replacing(new, Some(Duration::from_secs(30))).unwrap(),
            )
            .await
            .unwrap();
        calls += scene.fire_due().await.len();
        if n == 29 {
            assert_eq!(calls, 0, "not before max_delay");
        }
        if n == 30 {
            assert_eq!(calls, 1, "at max_delay from the first registration");
        }
    }
    assert_eq!(
        calls, 2,
        "and again max_delay after the next first registration"
    );
}
