//! SDK plumbing below the adapters: the client configuration, error formatting, item
//! helpers, a small cache, and SQS batch deletes.

pub(crate) mod cache;
pub(crate) mod items;

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message};

use boomerang_core::ports::Cause;

/// The SDK configuration: the standard chain (env, profile, Lambda role). The SDK also
/// honors `AWS_ENDPOINT_URL`, which is how emulators are reached. Throttling and 5xx
/// answers are retried by the SDK's standard retry mode.
pub async fn sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .retry_config(RetryConfig::standard().with_max_attempts(5))
        .timeout_config(
            TimeoutConfig::builder()
                .operation_attempt_timeout(Duration::from_secs(10))
                .build(),
        )
        .load()
        .await
}

/// An SDK configuration for an emulator on `endpoint` with fixed test credentials; nothing
/// is looked up from the environment or the instance metadata service.
pub fn emulator_config(endpoint: &str) -> SdkConfig {
    let creds = aws_sdk_dynamodb::config::Credentials::new("test", "test", None, None, "emulator");
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_dynamodb::config::SharedCredentialsProvider::new(
            creds,
        ))
        .retry_config(RetryConfig::standard().with_max_attempts(3))
        .build()
}

/// Whether an endpoint URL is on this machine (`localhost` or a loopback address): where
/// emulators run, and the only place the local tools talk to.
pub fn is_loopback_endpoint(endpoint: &str) -> bool {
    url::Url::parse(endpoint).is_ok_and(|u| match u.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    })
}

/// Formats an SDK error with its causes (the SDK's own Display hides them).
pub(crate) fn describe<E: std::error::Error>(e: &E) -> String {
    aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string()
}

/// An SDK error as a port error's cause: displayed with its causes, and kept whole as the
/// source.
pub(crate) fn sdk_failure<E: std::error::Error + Send + Sync + 'static>(e: E) -> Cause {
    Box::new(SdkFailure {
        text: describe(&e),
        source: Box::new(e),
    })
}

#[derive(Debug)]
struct SdkFailure {
    text: String,
    source: Cause,
}

impl std::fmt::Display for SdkFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for SdkFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// Deletes received messages (at most 10) in one request; nothing to delete, no request.
pub(crate) async fn delete_messages(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    messages: &[&Message],
) -> Result<(), String> {
    let entries: Vec<_> = messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            DeleteMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .set_receipt_handle(m.receipt_handle.clone())
                .build()
                .ok()
        })
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    sqs.delete_message_batch()
        .queue_url(queue_url)
        .set_entries(Some(entries))
        .send()
        .await
        .map_err(|e| describe(&e))?;
    Ok(())
}
