//! Creates the table, queues and schedule group in an emulator (or an empty account), for
//! local use and tests. The CDK stack creates the same in a real deployment.

use std::time::Duration;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TableStatus, TimeToLiveSpecification,
};

use crate::attr::{self, DUE_INDEX, KEY_INDEX};
use crate::sdk::describe;
use crate::settings::{self, AwsSettings};

#[derive(Debug, thiserror::Error)]
#[error("bootstrap failed at {step}: {detail}")]
pub struct BootstrapError {
    step: &'static str,
    detail: String,
}

fn fail(step: &'static str) -> impl Fn(String) -> BootstrapError {
    move |detail| BootstrapError { step, detail }
}

/// Creates everything named after `prefix` (existing resources are kept) and returns the
/// settings that point at them. The ARNs are placeholders an emulator accepts.
pub async fn bootstrap(sdk: &SdkConfig, prefix: &str) -> Result<AwsSettings, BootstrapError> {
    let table = format!("{prefix}-tasks");
    create_table(&aws_sdk_dynamodb::Client::new(sdk), &table).await?;
    let sqs = aws_sdk_sqs::Client::new(sdk);
    let failures_url = create_queue(&sqs, &format!("{prefix}-system-failures"), None).await?;
    let failures_arn = queue_arn(&sqs, &failures_url).await?;
    // Like the stack: a timer message that fails five times moves to system failures,
    // from where the sweeper hands it back.
    let redrive = serde_json::json!({"deadLetterTargetArn": failures_arn, "maxReceiveCount": "5"});
    let timer_queue_url =
        create_queue(&sqs, &format!("{prefix}-timer"), Some(redrive.to_string())).await?;
    // Like the stack: minutes' schedules send their fires to the timer queue.
    let timer_queue_arn = queue_arn(&sqs, &timer_queue_url).await?;
    let slow_queue_url =
        create_queue(&sqs, &format!("{prefix}-slow"), Some(redrive.to_string())).await?;
    let dead_letter_queue_url = create_queue(&sqs, &format!("{prefix}-dead-letters"), None).await?;
    let group = format!("{prefix}-timers");
    let created = aws_sdk_scheduler::Client::new(sdk)
        .create_schedule_group()
        .name(&group)
        .send()
        .await;
    if let Err(e) = created {
        if !e
            .as_service_error()
            .is_some_and(|se| se.is_conflict_exception())
        {
            return Err(fail("create schedule group")(describe(&e)));
        }
    }
    Ok(AwsSettings {
        table,
        timer_queue_url,
        dead_letter_queue_url,
        schedule_group: group,
        delivery_target_arn: timer_queue_arn,
        scheduler_role_arn: format!("arn:aws:iam::000000000000:role/{prefix}-scheduler"),
        scheduler_dlq_arn: Some(failures_arn),
        system_failures_queue_url: Some(failures_url),
        slow_queue_url: Some(slow_queue_url),
        allowed_cidrs: Vec::new(),
        retention: Duration::from_secs(settings::DEFAULT_RETENTION_DAYS * 24 * 3600),
    })
}

async fn create_queue(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    redrive_policy: Option<String>,
) -> Result<String, BootstrapError> {
    let out = sqs
        .create_queue()
        .queue_name(name)
        .set_attributes(
            redrive_policy
                .map(|p| [(aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy, p)].into()),
        )
        .send()
        .await
        .map_err(|e| fail("create queue")(describe(&e)))?;
    out.queue_url
        .ok_or_else(|| fail("create queue")("no queue URL returned".into()))
}

async fn queue_arn(sqs: &aws_sdk_sqs::Client, url: &str) -> Result<String, BootstrapError> {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| fail("get queue ARN")(describe(&e)))?;
    out.attributes
        .and_then(|mut a| a.remove(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
        .ok_or_else(|| fail("get queue ARN")("no ARN returned".into()))
}

fn key(name: &str, kind: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .expect("complete key element")
}

fn definition(name: &str, kind: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .expect("complete attribute definition")
}

/// The table of [`crate::store`], as [`attr::table_layout`] describes it: the keys, the
/// sparse `due` and `by_key` indexes (keys only), and TTL on the expiry attribute.
pub async fn create_table(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<(), BootstrapError> {
    use ScalarAttributeType::{N, S};
    let keys_only = || {
        Projection::builder()
            .projection_type(ProjectionType::KeysOnly)
            .build()
    };
    let due = GlobalSecondaryIndex::builder()
        .index_name(DUE_INDEX)
        .key_schema(key(attr::DUE_SHARD, KeyType::Hash))
        .key_schema(key(attr::DUE_AT, KeyType::Range))
        .projection(keys_only())
        .build()
        .expect("complete index");
    let by_key = GlobalSecondaryIndex::builder()
        .index_name(KEY_INDEX)
        .key_schema(key(attr::BUSINESS_KEY, KeyType::Hash))
        .key_schema(key(attr::SK, KeyType::Range))
        .projection(keys_only())
        .build()
        .expect("complete index");
    let created = ddb
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(definition(attr::PK, S))
        .attribute_definitions(definition(attr::SK, S))
        .attribute_definitions(definition(attr::DUE_SHARD, S))
        .attribute_definitions(definition(attr::DUE_AT, N))
        .attribute_definitions(definition(attr::BUSINESS_KEY, S))
        .key_schema(key(attr::PK, KeyType::Hash))
        .key_schema(key(attr::SK, KeyType::Range))
        .global_secondary_indexes(due)
        .global_secondary_indexes(by_key)
        .send()
        .await;
    if let Err(e) = created {
        if !e
            .as_service_error()
            .is_some_and(|se| se.is_resource_in_use_exception())
        {
            return Err(fail("create table")(describe(&e)));
        }
    }
    wait_active(ddb, table).await?;
    let ttl = ddb
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(attr::EXPIRES)
                .build()
                .expect("complete TTL spec"),
        )
        .send()
        .await;
    if let Err(e) = ttl {
        // Some emulators lack TTL (or it is already on); reads ignore expired items anyway.
        tracing::info!(error = %describe(&e), "time to live not enabled");
    }
    Ok(())
}

async fn wait_active(ddb: &aws_sdk_dynamodb::Client, table: &str) -> Result<(), BootstrapError> {
    for _ in 0..600 {
        let out = ddb
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| fail("describe table")(describe(&e)))?;
        let table = out.table.as_ref();
        let active = table.and_then(|t| t.table_status()) == Some(&TableStatus::Active);
        let indexes_active = table.is_some_and(|t| {
            t.global_secondary_indexes()
                .iter()
                .all(|i| i.index_status().is_none_or(|s| s.as_str() == "ACTIVE"))
        });
        if active && indexes_active {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(fail("wait for table")(
        "table did not become active in 60 s".into(),
    ))
}

/// The environment variables that point the functions (or `serve --backend aws`) at `s`.
pub fn env_vars(s: &AwsSettings) -> Vec<(&'static str, String)> {
    let required = [
        (settings::ENV_TABLE, Some(&s.table)),
        (settings::ENV_TIMER_QUEUE_URL, Some(&s.timer_queue_url)),
        (
            settings::ENV_DEAD_LETTER_QUEUE_URL,
            Some(&s.dead_letter_queue_url),
        ),
        (settings::ENV_SCHEDULE_GROUP, Some(&s.schedule_group)),
        (
            settings::ENV_DELIVERY_FUNCTION_ARN,
            Some(&s.delivery_target_arn),
        ),
        (
            settings::ENV_SCHEDULER_ROLE_ARN,
            Some(&s.scheduler_role_arn),
        ),
        (
            settings::ENV_SCHEDULER_DLQ_ARN,
            s.scheduler_dlq_arn.as_ref(),
        ),
        (
            settings::ENV_SYSTEM_FAILURES_QUEUE_URL,
            s.system_failures_queue_url.as_ref(),
        ),
        (settings::ENV_SLOW_QUEUE_URL, s.slow_queue_url.as_ref()),
    ];
    required
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v.clone())))
        .collect()
}

/// `export NAME=value` lines for a shell.
pub fn env_exports(s: &AwsSettings) -> String {
    env_vars(s)
        .into_iter()
        .map(|(k, v)| format!("export {k}='{v}'\n"))
        .collect()
}
