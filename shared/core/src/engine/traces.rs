//! Spans for a task's trace ([`crate::domain::trace`]): its registration, under the
//! caller's span, and each attempt, under the registration's. Recorded only where an
//! exporter is configured.

use crate::domain::{
    AttemptOutcome, AttemptRecord, Destination, SpanId, SpanKind, SpanRecord, SpanValue, Task,
    TaskTrace,
};
use crate::engine::state::Engine;

impl Engine {
    /// Sends the spans queued for export before returning (a Lambda invocation's end).
    pub fn flush_spans(&self) {
        if let Some(spans) = &self.ports.spans {
            spans.flush();
        }
    }

    /// [`Self::flush_spans`] on a thread where blocking is allowed (from async code).
    pub async fn flush_spans_off_thread(self: std::sync::Arc<Self>) {
        let _ = tokio::task::spawn_blocking(move || self.flush_spans()).await;
    }

    /// The span of a task's registration, from its making to its write.
    pub(in crate::engine) fn export_registration(&self, task: &Task) {
        let (Some(spans), Some(trace)) = (&self.ports.spans, &task.spec.trace) else {
            return;
        };
        if !trace.caller.sampled() {
            return;
        }
        spans.export(SpanRecord {
            trace_id: trace.caller.trace_id,
            span_id: trace.registration,
            parent: trace.caller.span_id,
            name: "boomerang register",
            kind: SpanKind::Server,
            start: task.created_at,
            end: self.ports.clock.now(),
            attributes: vec![
                ("boomerang.task.id", SpanValue::Text(task.id.to_string())),
                ("boomerang.tenant", SpanValue::Text(task.tenant.to_string())),
                ("boomerang.destination", destination(task)),
            ],
            error: None,
        });
    }

    /// The span of an attempt whose call named `span` as the receiver's parent: its
    /// status, lateness and duration, and how it ended.
    pub(in crate::engine) fn export_attempt(
        &self,
        task: &Task,
        trace: &TaskTrace,
        span: SpanId,
        record: &AttemptRecord,
    ) {
        let Some(spans) = self.ports.spans.as_ref().filter(|_| trace.caller.sampled()) else {
            return;
        };
        let mut attributes = vec![
            ("boomerang.task.id", SpanValue::Text(task.id.to_string())),
            ("boomerang.attempt", SpanValue::Int(record.number.into())),
            ("boomerang.destination", destination(task)),
            ("boomerang.lateness_ms", SpanValue::Int(record.lateness_ms)),
            (
                "boomerang.outcome",
                SpanValue::Text(outcome(record.outcome).into()),
            ),
            (
                "http.request.method",
                SpanValue::Text(task.spec.request.method.clone()),
            ),
        ];
        if let Some(code) = record.status_code {
            attributes.push(("http.response.status_code", SpanValue::Int(code.into())));
        }
        let failed = record.outcome != AttemptOutcome::Succeeded;
        let error = failed.then(|| match (&record.error, record.status_code) {
            (Some(error), _) => error.clone(),
            (None, Some(code)) => format!("HTTP {code}"),
            (None, None) => "failed".to_string(),
        });
        let duration = chrono::Duration::milliseconds(record.duration_ms as i64);
        spans.export(SpanRecord {
            trace_id: trace.caller.trace_id,
            span_id: span,
            parent: trace.registration,
            name: "boomerang attempt",
            kind: SpanKind::Client,
            start: record.started_at,
            end: record.started_at + duration,
            attributes,
            error,
        });
    }
}

fn destination(task: &Task) -> SpanValue {
    SpanValue::Text(Destination::of(&task.spec.request.url).to_string())
}

fn outcome(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Succeeded => "succeeded",
        AttemptOutcome::Retrying => "retrying",
        AttemptOutcome::Failed => "failed",
    }
}
