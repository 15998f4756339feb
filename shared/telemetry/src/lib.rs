//! Boomerang's spans (a task's registration, each attempt) exported over OTLP/HTTP by the
//! OpenTelemetry SDK, when the standard variables ask for it: `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), with `OTEL_EXPORTER_OTLP_PROTOCOL`
//! (`http/protobuf`, the default, or `http/json`), `…_HEADERS`, `…_TIMEOUT`, and
//! `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` for the resource. Without an endpoint,
//! or with `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`, nothing is exported.
//!
//! Spans are queued and sent in batches from a thread of the SDK's own, so a slow or
//! absent collector never holds a delivery up (a full queue drops spans).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{SpanContext, SpanKind, Status, TraceFlags, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SpanData, SpanEvents, SpanLinks, SpanProcessor,
};
use opentelemetry_sdk::Resource;

use boomerang_core::domain::{self, SpanRecord, SpanValue};
use boomerang_core::ports::SpanExport;

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("the OTLP span exporter: {0}")]
    Build(#[source] opentelemetry_otlp::ExporterBuildError),
    #[error("{name}={value}: spans are exported over `http/protobuf` or `http/json`")]
    Protocol { name: &'static str, value: String },
}

/// An OTLP exporter as the environment configures it, or `None` where it asks for none.
pub fn otlp_from_env() -> Result<Option<Arc<dyn SpanExport>>, TelemetryError> {
    otlp_from(|name| std::env::var(name).ok())
}

fn otlp_from(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Arc<dyn SpanExport>>, TelemetryError> {
    if !wanted(&env) {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol(&env)?)
        .build()
        .map_err(TelemetryError::Build)?;
    let mut processor = BatchSpanProcessor::builder(exporter).build();
    let resource = match env("OTEL_SERVICE_NAME") {
        Some(_) => Resource::builder().build(),
        None => Resource::builder().with_service_name("boomerang").build(),
    };
    processor.set_resource(&resource);
    let scope = InstrumentationScope::builder("boomerang")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    tracing::info!("spans are exported over OTLP");
    Ok(Some(Arc::new(OtlpSpans {
        processor,
        scope,
        queued: AtomicBool::new(false),
    })))
}

/// The protocol the environment names (the traces' own variable first); `http/protobuf`,
/// the specification's default, when it names none.
fn protocol(env: &impl Fn(&str) -> Option<String>) -> Result<Protocol, TelemetryError> {
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        let Some(value) = env(name).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        return match value.trim() {
            "http/protobuf" => Ok(Protocol::HttpBinary),
            "http/json" => Ok(Protocol::HttpJson),
            _ => Err(TelemetryError::Protocol { name, value }),
        };
    }
    Ok(Protocol::HttpBinary)
}

/// Whether the environment names a collector and does not turn tracing off.
fn wanted(env: &impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
    let endpoint = set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let none = env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    endpoint && !disabled && !none
}

struct OtlpSpans {
    processor: BatchSpanProcessor,
    scope: InstrumentationScope,
    /// Spans were queued since the last flush: a flush with nothing to send waits on
    /// nothing.
    queued: AtomicBool,
}

impl SpanExport for OtlpSpans {
    fn export(&self, span: SpanRecord) {
        self.processor.on_end(span_data(span, &self.scope));
        self.queued.store(true, Ordering::Release);
    }

    fn flush(&self) {
        if !self.queued.swap(false, Ordering::AcqRel) {
            return;
        }
        if let Err(e) = self.processor.force_flush() {
            tracing::warn!(error = %e, "spans could not be exported");
        }
    }
}

impl Drop for OtlpSpans {
    /// What was queued was flushed already (the server's stop, a function's invocation's
    /// end): the exporter's thread is stopped without waiting on a collector again.
    fn drop(&mut self) {
        let _ = self.processor.shutdown_with_timeout(SHUTDOWN_WAIT);
    }
}

/// How long dropping the exporter waits for its thread.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// A finished span as the SDK's exporters take it. The registration's parent is the
/// caller's span, in another process (remote).
fn span_data(span: SpanRecord, scope: &InstrumentationScope) -> SpanData {
    let context = SpanContext::new(
        opentelemetry::TraceId::from_bytes(span.trace_id.0),
        opentelemetry::SpanId::from_bytes(span.span_id.0),
        TraceFlags::SAMPLED,
        false,
        TraceState::default(),
    );
    let kind = match span.kind {
        domain::SpanKind::Server => SpanKind::Server,
        domain::SpanKind::Client => SpanKind::Client,
    };
    let attributes = (span.attributes.into_iter())
        .map(|(key, value)| {
            let value = match value {
                SpanValue::Text(text) => Value::from(text),
                SpanValue::Int(n) => Value::from(n),
            };
            KeyValue::new(key, value)
        })
        .collect();
    SpanData {
        span_context: context,
        parent_span_id: opentelemetry::SpanId::from_bytes(span.parent.0),
        parent_span_is_remote: span.kind == domain::SpanKind::Server,
        span_kind: kind,
        name: Cow::Borrowed(span.name),
        start_time: SystemTime::from(span.start),
        end_time: SystemTime::from(span.end),
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: match span.error {
            Some(why) => Status::error(why),
            None => Status::Unset,
        },
        instrumentation_scope: scope.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Vars = &'static [(&'static str, &'static str)];

    fn env(vars: Vars) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    const ENDPOINT: (&str, &str) = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");

    #[test]
    fn only_an_endpoint_not_turned_off_asks_for_export() {
        assert!(!wanted(&env(&[])));
        assert!(!wanted(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
        assert!(wanted(&env(&[ENDPOINT])));
        assert!(wanted(&env(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://c/v1/traces"
        )])));
        assert!(!wanted(&env(&[ENDPOINT, ("OTEL_SDK_DISABLED", "true")])));
        assert!(!wanted(&env(&[ENDPOINT, ("OTEL_TRACES_EXPORTER", "none")])));
    }

    #[test]
    fn protobuf_unless_json_is_asked_for_and_nothing_else() {
        let chosen = |vars: Vars| protocol(&env(vars));
        assert!(matches!(chosen(&[]), Ok(Protocol::HttpBinary)));
        let json = chosen(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]);
        assert!(matches!(json, Ok(Protocol::HttpJson)));
        let traces_first = chosen(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
        ]);
        assert!(matches!(traces_first, Ok(Protocol::HttpBinary)));
        assert!(chosen(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).is_err());
    }
}
