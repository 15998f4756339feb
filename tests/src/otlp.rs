//! A test's own OTLP collector: a [`Receiver`] that takes the server's OTLP/HTTP exports
//! (protobuf, the default protocol), read back as spans.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

use super::receiver::Receiver;

/// A span as the collector got it: ids in hex, and its attributes as text.
#[derive(Clone, Debug)]
pub struct CollectedSpan {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub attributes: Vec<(String, String)>,
    /// The status code (0 unset, 1 ok, 2 error) and message.
    pub status: (i32, String),
    /// The resource's `service.name`.
    pub service: String,
}

impl CollectedSpan {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        (self.attributes.iter())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Every span exported to `collector` so far.
pub fn collected_spans(collector: &Receiver) -> Vec<CollectedSpan> {
    let mut spans = Vec::new();
    for export in collector.received() {
        let request = ExportTraceServiceRequest::decode(export.body.as_ref())
            .expect("an OTLP/HTTP protobuf export");
        for resource_spans in request.resource_spans {
            let service = (resource_spans.resource.iter())
                .flat_map(|r| r.attributes.iter())
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref())
                .map(text)
                .unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                let attributes = (span.attributes.iter())
                    .map(|kv| {
                        (
                            kv.key.clone(),
                            kv.value.as_ref().map(text).unwrap_or_default(),
                        )
                    })
                    .collect();
                let status = span.status.as_ref().map(|s| (s.code, s.message.clone()));
                spans.push(CollectedSpan {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes,
                    status: status.unwrap_or_default(),
                    service: service.clone(),
                });
            }
        }
    }
    spans
}

fn text(value: &opentelemetry_proto::tonic::common::v1::AnyValue) -> String {
    match &value.value {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::IntValue(n)) => n.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
