//! What every function does at start-up: JSON logs, and the AWS backend as its environment
//! describes it (a missing or invalid setting is a start-up error naming it).

use std::sync::Arc;

use crate::metric_lines::MetricLines;
use boomerang_core::clock::SystemClock;
use boomerang_core::domain::AlertTarget;
use boomerang_core::engine::{
    DeliveryLimits, EngineSettings, DEFAULT_PER_DESTINATION, PER_DESTINATION_RANGE,
};
use boomerang_core::metrics::Metrics;
use boomerang_core::ports::SpanExport;
use boomerang_webhook::client::ClientBuildError;
use boomerang_webhook::destination::{alert_destination, InvalidAlertUrl};

use crate::backend::{self, AwsBackend, AwsBackendConfig};
use crate::sdk::{is_loopback_endpoint, sdk_config};
use crate::settings::{AwsSettings, SettingsError};

/// The functions' default alert destination.
pub const ENV_ALERT_URL: &str = "BOOMERANG_ALERT_URL";
/// Most calls one function instance has in flight to one destination.
pub const ENV_DESTINATION_LIMIT: &str = "BOOMERANG_DESTINATION_LIMIT";

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    AlertUrl(#[from] InvalidAlertUrl),
    #[error(transparent)]
    Client(#[from] ClientBuildError),
    #[error(
        "{ENV_DESTINATION_LIMIT} must be a whole number from {min} to {max} (got `{got}`)",
        min = PER_DESTINATION_RANGE.0,
        max = PER_DESTINATION_RANGE.1
    )]
    DestinationLimit { got: String },
}

/// The AWS backend as a function builds it: settings from the environment, the SDK's
/// credential chain, metric lines on stdout, and finished spans to `spans` (the
/// function's OTLP exporter, if its environment configures one).
pub async fn backend(spans: Option<Arc<dyn SpanExport>>) -> Result<AwsBackend, StartError> {
    backend_with(Arc::new(MetricLines), spans).await
}

/// [`backend`], telling `metrics` of the engine's events (a command line wants none).
pub async fn backend_with(
    metrics: Arc<dyn Metrics>,
    spans: Option<Arc<dyn SpanExport>>,
) -> Result<AwsBackend, StartError> {
    let settings = AwsSettings::from_env()?;
    let dev = dev_mode(|k| std::env::var(k).ok())?;
    let alert = alert_url(|k| std::env::var(k).ok())?;
    let sdk = sdk_config().await;
    Ok(backend::aws(
        &sdk,
        AwsBackendConfig {
            settings,
            dev,
            clock: Arc::new(SystemClock),
            metrics,
            metrics_view: None,
            spans,
            engine: EngineSettings {
                alert,
                limits: DeliveryLimits {
                    per_destination: destination_limit(|k| std::env::var(k).ok())?,
                    ..DeliveryLimits::default()
                },
                ..EngineSettings::default()
            },
        },
    )?)
}

/// `BOOMERANG_DESTINATION_LIMIT`, if set; else the default.
pub fn destination_limit(get: impl Fn(&str) -> Option<String>) -> Result<usize, StartError> {
    let Some(raw) = get(ENV_DESTINATION_LIMIT).filter(|v| !v.trim().is_empty()) else {
        return Ok(DEFAULT_PER_DESTINATION);
    };
    let (min, max) = PER_DESTINATION_RANGE;
    (raw.trim().parse::<usize>().ok())
        .filter(|n| (min..=max).contains(n))
        .ok_or(StartError::DestinationLimit { got: raw })
}

/// `BOOMERANG_ALERT_URL`: the functions' default alert destination, if set.
pub fn alert_url(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<AlertTarget>, InvalidAlertUrl> {
    match get(ENV_ALERT_URL).filter(|u| !u.trim().is_empty()) {
        Some(url) => alert_destination(ENV_ALERT_URL, &url).map(Some),
        None => Ok(None),
    }
}

/// `BOOMERANG_DEV=true` lets the functions call `http://` and loopback receivers, for
/// running the real binaries on this machine (cargo-lambda's runtime emulator) against an
/// emulator. It is refused unless `AWS_ENDPOINT_URL` is a loopback address, so that no
/// deployed function can have it.
pub fn dev_mode(get: impl Fn(&str) -> Option<String>) -> Result<bool, SettingsError> {
    if get("BOOMERANG_DEV").as_deref() != Some("true") {
        return Ok(false);
    }
    let endpoint = get("AWS_ENDPOINT_URL").unwrap_or_default();
    if !is_loopback_endpoint(&endpoint) {
        return Err(SettingsError::Invalid(
            "BOOMERANG_DEV",
            "is only for functions run locally against an emulator (AWS_ENDPOINT_URL on loopback)"
                .into(),
        ));
    }
    Ok(true)
}

/// JSON logs on stderr, the way CloudWatch Logs reads them (stdout carries the metric lines).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A line that cannot be written is dropped: reporting it on the same stderr would
        // panic inside the invocation.
        .log_internal_errors(false)
        .with_current_span(false)
        // CloudWatch Logs bills by the byte: no span list (the invocation's request id)
        // on every line.
        .with_span_list(false)
        .without_time()
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_urls_must_be_absolute_http_urls() {
        let env = |v: &'static str| alert_url(move |k| (k == ENV_ALERT_URL).then(|| v.into()));
        assert_eq!(env("").unwrap(), None);
        let target = env(" https://ops.example.com/alerts ").unwrap().unwrap();
        assert_eq!(target.url, "https://ops.example.com/alerts");
        for bad in [
            "ops.example.com",
            "ftp://ops.example.com",
            "https://",
            "/alerts",
        ] {
            let err = env(bad).unwrap_err().to_string();
            assert!(err.contains(ENV_ALERT_URL), "{bad}: {err}");
        }
    }

    #[test]
    fn the_destination_limit_is_a_bounded_whole_number() {
        let env = |v: &'static str| {
            destination_limit(move |k| (k == ENV_DESTINATION_LIMIT).then(|| v.into()))
        };
        assert_eq!(env("").unwrap(), DEFAULT_PER_DESTINATION);
        assert_eq!(env(" 4 ").unwrap(), 4);
        for bad in ["0", "1001", "-3", "many", "1e3"] {
            let err = env(bad).unwrap_err().to_string();
            assert!(err.contains(ENV_DESTINATION_LIMIT), "{bad}: {err}");
        }
    }

    #[test]
    fn dev_mode_needs_a_loopback_emulator() {
        let env = |dev: Option<&str>, endpoint: Option<&str>| {
            let (dev, endpoint) = (dev.map(str::to_string), endpoint.map(str::to_string));
            dev_mode(move |k| match k {
                "BOOMERANG_DEV" => dev.clone(),
                "AWS_ENDPOINT_URL" => endpoint.clone(),
                _ => None,
            })
        };
        assert!(!env(None, None).unwrap());
        assert!(!env(Some("false"), Some("http://127.0.0.1:5000")).unwrap());
        assert!(env(Some("true"), Some("http://127.0.0.1:5000")).unwrap());
        assert!(env(Some("true"), Some("http://localhost:4566")).unwrap());
        for far in [
            None,
            Some("https://dynamodb.us-east-1.amazonaws.com"),
            Some("http://127.0.0.1.nip.io"),
        ] {
            let err = env(Some("true"), far).unwrap_err().to_string();
            assert!(err.starts_with("BOOMERANG_DEV"), "{err}");
        }
    }
}
