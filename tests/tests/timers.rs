//! The timer contract against the in-process timer and the AWS timer (SQS on moto), and
//! the AWS timer's plan: short waits are SQS delays, long ones go to the bucket of their
//! minute, whose one schedule fires two minutes early (its fire: `tests/buckets.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_sqs::types::QueueAttributeName;
use boomerang_aws::bucket_schedules::{at_expression, bucket_schedule_name};
use boomerang_aws::bucket_schedules::{BucketSchedules, ScheduleTarget};
use boomerang_aws::messages::{BucketWork, TimerMessage};
use boomerang_aws::store::DynamoStore;
use boomerang_aws::timer::AwsTimer;
use boomerang_aws::AwsSettings;
use boomerang_core::clock::{Clock, ManualClock, SystemClock};
use boomerang_core::domain::{AttemptRef, TaskId};
use boomerang_core::ports::Timer;
use boomerang_core::testing::{timer_contract, TimerProbe};
use boomerang_e2e::aws::{fresh_moto_resources, moto};
use boomerang_embedded::{Fire, LocalTimer};
use chrono::{DurationRound, Utc};
use tokio::sync::mpsc::UnboundedReceiver;

struct ChannelProbe(UnboundedReceiver<Fire>);

#[async_trait]
impl TimerProbe for ChannelProbe {
    async fn next_fire(&mut self, within: Duration) -> Option<AttemptRef> {
        let fire = tokio::time::timeout(within, self.0.recv()).await.ok()??;
        Some(fire.attempt.clone())
    }
}

/// Reads timer messages straight off the queue, as the SQS trigger would.
struct QueueProbe {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
}

impl QueueProbe {
    async fn receive(&self) -> Vec<AttemptRef> {
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        let mut got = Vec::new();
        for m in out.messages() {
            got.push(serde_json::from_str(m.body().unwrap()).unwrap());
            self.sqs
                .delete_message()
                .queue_url(&self.queue_url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
        }
        got
    }

    async fn counts(&self) -> (u64, u64) {
        let attrs = self
            .sqs
            .get_queue_attributes()
            .queue_url(&self.queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .unwrap();
        let get = |name| {
            attrs
                .attributes()
                .and_then(|a| a.get(&name))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (
            get(QueueAttributeName::ApproximateNumberOfMessages),
            get(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
        )
    }
}

/// [`QueueProbe`] with the messages one receive brought beyond the first kept for the
/// next calls (a receive takes up to ten, and deletes them).
struct BufferedQueueProbe {
    queue: QueueProbe,
    received: std::collections::VecDeque<AttemptRef>,
}

#[async_trait]
impl TimerProbe for BufferedQueueProbe {
    async fn next_fire(&mut self, within: Duration) -> Option<AttemptRef> {
        let deadline = Instant::now() + within;
        while self.received.is_empty() && Instant::now() < deadline {
            self.received.extend(self.queue.receive().await);
        }
        self.received.pop_front()
    }
}

fn aws_timer(settings: &AwsSettings, clock: Arc<dyn Clock>) -> AwsTimer {
    aws_timer_calling(settings, clock, aws_sdk_scheduler::Client::new(&moto()))
}

/// An instance's timer, calling Scheduler through `scheduler`.
fn aws_timer_calling(
    settings: &AwsSettings,
    clock: Arc<dyn Clock>,
    scheduler: aws_sdk_scheduler::Client,
) -> AwsTimer {
    let sdk = moto();
    let store = Arc::new(DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&sdk),
        &settings.table,
        Duration::from_secs(3600),
    ));
    let schedules = BucketSchedules::new(
        scheduler,
        ScheduleTarget::of(settings),
        store,
        clock.clone(),
    );
    AwsTimer::new(aws_sdk_sqs::Client::new(&sdk), schedules, settings, clock)
}

/// A port nothing listens on: the one a just-dropped listener had.
fn closed_port() -> u16 {
    (std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .local_addr()
        .unwrap()
        .port()
}

fn probe(settings: &AwsSettings) -> QueueProbe {
    QueueProbe {
        sqs: aws_sdk_sqs::Client::new(&moto()),
        queue_url: settings.timer_queue_url.clone(),
    }
}

#[tokio::test]
async fn the_local_timer_honours_the_contract() {
    let (timer, fires) = LocalTimer::new(Duration::from_secs(60));
    timer_contract(timer, &mut ChannelProbe(fires)).await;
}

#[tokio::test]
async fn the_aws_timer_honours_the_contract_on_moto() {
    let settings = fresh_moto_resources("timer").await;
    let timer = Arc::new(aws_timer(&settings, Arc::new(SystemClock)));
    let mut probe = BufferedQueueProbe {
        queue: probe(&settings),
        received: Default::default(),
    };
    timer_contract(timer, &mut probe).await;
}

#[tokio::test]
async fn a_five_minute_wait_uses_the_queue_only() {
    let settings = fresh_moto_resources("five").await;
    let timer = aws_timer(&settings, Arc::new(SystemClock));
    timer
        .arm(
            AttemptRef::delivery(
                boomerang_core::testing::unique_tenant("five"),
                TaskId::new(),
                1,
            ),
            Utc::now() + chrono::Duration::minutes(5),
        )
        .await
        .unwrap();
    assert_eq!(
        probe(&settings).counts().await,
        (0, 1),
        "one delayed message"
    );
    let schedules = aws_sdk_scheduler::Client::new(&moto())
        .list_schedules()
        .group_name(&settings.schedule_group)
        .send()
        .await
        .unwrap();
    assert!(schedules.schedules().is_empty());
}

#[tokio::test]
async fn far_waits_make_sure_their_minute_has_one_bucket_schedule_for_every_instance() {
    let settings = fresh_moto_resources("twenty").await;
    let now = Utc::now()
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap()
        + chrono::Duration::seconds(10);
    let clock = Arc::new(ManualClock::new(now));
    let tenant = boomerang_core::testing::unique_tenant("twenty");
    let due = now + chrono::Duration::minutes(20); // hh:mm:10, twenty minutes on
    let minute = due.duration_trunc(chrono::Duration::minutes(1)).unwrap();
    let timer = aws_timer(&settings, clock.clone());
    for (n, at) in [(1, due), (3, due + chrono::Duration::seconds(40))] {
        timer
            .arm(AttemptRef::delivery(tenant.clone(), TaskId::new(), n), at)
            .await
            .unwrap();
    }
    // Another function instance arming into the same minute finds the schedule recorded in
    // the table, and does not call Scheduler at all (here it could not reach it).
    let unreachable = aws_sdk_scheduler::config::Builder::from(&moto())
        .endpoint_url(format!("http://127.0.0.1:{}", closed_port()))
        .build();
    let other = aws_timer_calling(
        &settings,
        clock.clone(),
        aws_sdk_scheduler::Client::from_conf(unreachable.clone()),
    );
    other
        .arm(AttemptRef::delivery(tenant.clone(), TaskId::new(), 1), due)
        .await
        .unwrap();
    // A minute no instance has recorded is created through it, so it fails.
    let later = due + chrono::Duration::minutes(1);
    assert!(other
        .arm(
            AttemptRef::delivery(tenant.clone(), TaskId::new(), 1),
            later
        )
        .await
        .is_err());
    // `aws rearm` makes even a recorded minute's schedule itself (the schedules may be gone).
    let rearming = aws_timer_calling(
        &settings,
        clock.clone(),
        aws_sdk_scheduler::Client::from_conf(unreachable),
    );
    rearming.ignore_schedule_records();
    let again = AttemptRef::delivery(tenant.clone(), TaskId::new(), 1);
    assert!(rearming.arm(again, due).await.is_err());

    let scheduler = aws_sdk_scheduler::Client::new(&moto());
    let listed = scheduler
        .list_schedules()
        .group_name(&settings.schedule_group)
        .send()
        .await
        .unwrap();
    let names: Vec<_> = listed.schedules().iter().filter_map(|s| s.name()).collect();
    assert_eq!(names, vec![bucket_schedule_name(minute)], "one per minute");
    let schedule = scheduler
        .get_schedule()
        .name(bucket_schedule_name(minute))
        .group_name(&settings.schedule_group)
        .send()
        .await
        .unwrap();
    assert_eq!(
        schedule.schedule_expression(),
        Some(at_expression(minute - chrono::Duration::minutes(2)).as_str()),
        "two minutes before the minute"
    );
    assert_eq!(
        schedule.action_after_completion().map(|a| a.as_str()),
        Some("DELETE")
    );
    let target = schedule.target().unwrap();
    assert_eq!(target.arn(), settings.delivery_target_arn);
    assert_eq!(target.role_arn(), settings.scheduler_role_arn);
    let input: TimerMessage = serde_json::from_str(target.input().unwrap()).unwrap();
    assert_eq!(
        input,
        TimerMessage::Bucket {
            bucket: BucketWork::whole(minute)
        }
    );
    assert_eq!(
        probe(&settings).counts().await,
        (0, 0),
        "nothing on the queue"
    );
}

/// The timer queue is fair: every attempt goes under its tenant's message group, armed
/// alone or with others, so SQS serves a quiet tenant's callbacks ahead of another's burst.
#[tokio::test]
async fn every_attempt_is_queued_under_its_tenants_message_group() {
    use aws_sdk_sqs::types::MessageSystemAttributeName;
    let settings = fresh_moto_resources("groups").await;
    let timer = aws_timer(&settings, Arc::new(SystemClock));
    let (a, b) = (
        boomerang_core::testing::unique_tenant("loud"),
        boomerang_core::testing::unique_tenant("quiet"),
    );
    let now = Utc::now();
    timer
        .arm(AttemptRef::delivery(a.clone(), TaskId::new(), 1), now)
        .await
        .unwrap();
    let many: Vec<_> = (0..3)
        .map(|i| {
            let tenant = if i == 0 { b.clone() } else { a.clone() };
            (AttemptRef::delivery(tenant, TaskId::new(), 1), now)
        })
        .collect();
    for outcome in timer.arm_many(&many).await {
        outcome.unwrap();
    }
    let sqs = aws_sdk_sqs::Client::new(&moto());
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < 4 && Instant::now() < deadline {
        let out = sqs
            .receive_message()
            .queue_url(&settings.timer_queue_url)
            .max_number_of_messages(10)
            .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        for m in out.messages() {
            let attempt: AttemptRef = serde_json::from_str(m.body().unwrap()).unwrap();
            let group = m
                .attributes()
                .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
                .cloned();
            seen.push((attempt.tenant.to_string(), group));
        }
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    for (tenant, group) in &seen {
        assert_eq!(group.as_deref(), Some(tenant.as_str()));
    }
    assert_eq!(seen.iter().filter(|(t, _)| *t == b.to_string()).count(), 1);
}
