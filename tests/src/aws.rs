//! AWS emulators for tests: moto server (DynamoDB, SQS, Scheduler) and dynalite (DynamoDB
//! with atomic conditional writes), both on loopback, started by `scripts/emulators.sh`.

use boomerang_aws::bootstrap::{bootstrap, create_table};
use boomerang_aws::{emulator_config, AwsSettings, SdkConfig};

fn endpoint(var: &str) -> String {
    let url = std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run ./scripts/test.sh, which starts the AWS emulators")
    });
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
        "{var} must point at loopback, not {url}"
    );
    url
}

pub fn moto_endpoint() -> String {
    endpoint("BOOMERANG_TEST_MOTO_ENDPOINT")
}

pub fn dynalite_endpoint() -> String {
    endpoint("BOOMERANG_TEST_DYNALITE_ENDPOINT")
}

/// The second moto server, the many-worker test's queue (or the first, if only one was
/// started): the test command runs the slowest test files on it, one after another.
pub fn bulk_moto() -> SdkConfig {
    let var = "BOOMERANG_TEST_MOTO_BULK_ENDPOINT";
    match std::env::var(var) {
        Ok(_) => emulator_config(&endpoint(var)),
        Err(_) => moto(),
    }
}

pub fn moto() -> SdkConfig {
    emulator_config(&moto_endpoint())
}

pub fn dynalite() -> SdkConfig {
    emulator_config(&dynalite_endpoint())
}

/// A prefix no other test uses (resource names allow `[a-zA-Z0-9_.-]`).
pub fn unique_prefix(what: &str) -> String {
    format!("t{}-{what}", ulid::Ulid::new().to_string().to_lowercase())
}

/// A fresh table, queues and schedule group on moto.
pub async fn fresh_moto_resources(what: &str) -> AwsSettings {
    bootstrap(&moto(), &unique_prefix(what))
        .await
        .expect("bootstrap on moto")
}

/// A fresh table on dynalite; returns its name.
pub async fn fresh_dynalite_table(what: &str) -> String {
    let table = format!("{}-tasks", unique_prefix(what));
    create_table(&aws_sdk_dynamodb::Client::new(&dynalite()), &table)
        .await
        .expect("create table on dynalite");
    table
}

use std::sync::Arc;

use boomerang_aws::backend::{aws, AwsBackend, AwsBackendConfig};
use boomerang_core::clock::Clock;
use boomerang_core::engine::{EngineSettings, FireTime, NewTask};
use boomerang_core::metrics::NoMetrics;

/// The AWS backend on moto, in dev mode (webhooks may reach loopback receivers).
pub fn moto_backend(settings: &AwsSettings, clock: Arc<dyn Clock>) -> AwsBackend {
    aws(&moto(), dev_config(settings, clock)).expect("aws backend")
}

/// A backend's configuration for tests: dev mode, no metrics, the engine's defaults.
pub fn dev_config(settings: &AwsSettings, clock: Arc<dyn Clock>) -> AwsBackendConfig {
    AwsBackendConfig {
        settings: settings.clone(),
        dev: true,
        clock,
        metrics: Arc::new(NoMetrics),
        metrics_view: None,
        spans: None,
        engine: EngineSettings::default(),
    }
}

/// The timer messages on `queue_url`, each deleted once read: up to `want` of them, waiting
/// up to `within` for delayed ones. Every message a receive brings is kept (a receive may
/// bring up to ten, two attempts due on one second among them).
pub async fn take_timer_messages(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    want: usize,
    within: std::time::Duration,
) -> Vec<boomerang_aws::messages::TimerMessage> {
    let deadline = std::time::Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < want && std::time::Instant::now() < deadline {
        let out = (sqs.receive_message())
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive from the timer queue");
        for m in out.messages() {
            let body = m.body().expect("a body");
            got.push(boomerang_aws::messages::TimerMessage::parse(body).expect("ours"));
            (sqs.delete_message())
                .queue_url(queue_url)
                .receipt_handle(m.receipt_handle().expect("a receipt handle"))
                .send()
                .await
                .expect("delete from the timer queue");
        }
    }
    got
}

/// A task of `tenant` due now that calls `url`, with a 5 s timeout and no alert: what a
/// test registers straight through an AWS backend's engine.
pub fn due_now(tenant: &boomerang_core::domain::TenantId, url: String) -> NewTask {
    let mut spec = boomerang_core::testing::sample_task(tenant, None, chrono::Utc::now()).spec;
    spec.request.url = url;
    spec.on_failure = None;
    spec.timeout = std::time::Duration::from_secs(5);
    NewTask {
        spec,
        retry_from: Default::default(),
        when: FireTime::Now,
        idempotency_key: None,
        request_hash: String::new(),
    }
}

/// An SQS event with the fields the event source mapping sends.
pub fn sqs_event(bodies: &[(&str, String)]) -> serde_json::Value {
    let records: Vec<serde_json::Value> = bodies
        .iter()
        .map(|(id, body)| {
            serde_json::json!({
                "messageId": id,
                "receiptHandle": format!("AQEB{id}"),
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": "1795255200000",
                    "SenderId": "AIDAEXAMPLE",
                    "ApproximateFirstReceiveTimestamp": "1795255200001"
                },
                "messageAttributes": {},
                "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:boomerang-timer",
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    serde_json::json!({ "Records": records })
}
