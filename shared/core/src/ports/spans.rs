//! Where finished spans go: an exporter (OTLP), when one is configured.

use crate::domain::SpanRecord;

pub trait SpanExport: Send + Sync {
    /// Queues a finished span for export. Never waits on the network: a collector that is
    /// down or slow costs spans, never a delivery.
    fn export(&self, span: SpanRecord);

    /// Sends what is queued before returning (at the end of a Lambda invocation, after
    /// which the process may be frozen); returns at once when nothing is. It may wait on
    /// the network: call it where blocking is allowed.
    fn flush(&self);
}
