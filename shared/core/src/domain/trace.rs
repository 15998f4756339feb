//! Trace context across the delay (W3C Trace Context): a `traceparent` on the registration
//! request is kept with the task, so each attempt hours later belongs to the caller's
//! trace. The registration is a span under the caller's; each attempt (and each alert
//! about the task) a span under the registration's, and the receiver gets a `traceparent`
//! naming the attempt's span as its parent.
//!
//! A malformed `traceparent` is ignored, as the W3C rules say (with its `tracestate`):
//! it never fails a registration.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The longest `tracestate` kept: the W3C's 32 list members of up to 256 characters could
/// be 8 KiB; vendors that propagate it need far less, and it is stored with every task.
pub const MAX_TRACESTATE: usize = 512;

/// The trace flags version 00 defines: sampled (0x01) and random trace id (0x02).
const KNOWN_FLAGS: u8 = 0x03;

/// A trace's id: 16 bytes, never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span's id: 8 bytes, never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl SpanId {
    /// A fresh random span id.
    pub fn random() -> Self {
        loop {
            let id: [u8; 8] = rand::random();
            if id != [0; 8] {
                return Self(id);
            }
        }
    }
}

/// The caller's span, as its `traceparent` (and `tracestate`) name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    pub state: Option<String>,
}

impl TraceParent {
    /// Reads the headers by the W3C rules; `None` when `traceparent` is absent or
    /// malformed (then `tracestate` is ignored too). A `tracestate` too long to keep, or
    /// not of visible ASCII, is dropped on its own.
    pub fn from_headers(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Self> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent?.trim())?;
        let state = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE)
            .filter(|s| s.bytes().all(|b| (0x20..0x7f).contains(&b)))
            .map(str::to_string);
        Some(Self {
            trace_id,
            span_id,
            flags,
            state,
        })
    }

    /// Whether the caller records its trace (the sampled flag): spans of a trace it does
    /// not record are not recorded here either (the SDKs' parent-based sampling).
    pub fn sampled(&self) -> bool {
        self.flags & 0x01 == 0x01
    }

    /// The `traceparent` header naming this span (version 00: flags it does not define
    /// are passed on as zero).
    pub fn header(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace_id.0),
            hex(&self.span_id.0),
            self.flags & KNOWN_FLAGS
        )
    }
}

/// What a task keeps of the trace it was registered in: the caller's span, and its own
/// registration span (the parent of its attempts').
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StoredTrace", into = "StoredTrace")]
pub struct TaskTrace {
    /// The caller's span: the registration span's parent.
    pub caller: TraceParent,
    /// The registration's span: each attempt's span's parent.
    pub registration: SpanId,
}

impl TaskTrace {
    /// A task registered under `caller`, its registration span `registration`.
    pub fn under(caller: TraceParent, registration: SpanId) -> Self {
        Self {
            caller,
            registration,
        }
    }

    /// The trace of a task made on this one's behalf (its alert): registered under this
    /// one's registration span, with a registration span of its own.
    pub fn on_behalf(&self) -> Self {
        Self::under(self.for_attempt(self.registration), SpanId::random())
    }

    /// The `traceparent` (and `tracestate`) an attempt whose span is `attempt` sends.
    pub fn for_attempt(&self, attempt: SpanId) -> TraceParent {
        TraceParent {
            span_id: attempt,
            ..self.caller.clone()
        }
    }
}

/// A finished span, for an exporter.
#[derive(Clone, Debug, PartialEq)]
pub struct SpanRecord {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: SpanId,
    pub name: &'static str,
    /// A client span (a call this service made) or a server one (a request it served).
    pub kind: SpanKind,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub attributes: Vec<(&'static str, SpanValue)>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    Server,
    Client,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SpanValue {
    Text(String),
    Int(i64),
}

/// How a task's trace is kept: the caller's `traceparent` and `tracestate`, and the
/// registration span's id, in hex.
#[derive(Serialize, Deserialize)]
struct StoredTrace {
    parent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
    span: String,
}

impl TryFrom<StoredTrace> for TaskTrace {
    type Error = String;
    fn try_from(kept: StoredTrace) -> Result<Self, String> {
        let caller = TraceParent::from_headers(Some(&kept.parent), kept.state.as_deref())
            .ok_or("a kept traceparent is malformed")?;
        let registration = parse_hex::<8>(&kept.span)
            .filter(|id| id != &[0; 8])
            .ok_or("a kept span id is malformed")?;
        Ok(Self::under(caller, SpanId(registration)))
    }
}

impl From<TaskTrace> for StoredTrace {
    fn from(trace: TaskTrace) -> Self {
        Self {
            parent: trace.caller.header(),
            state: trace.caller.state.clone(),
            span: hex(&trace.registration.0),
        }
    }
}

/// `version-traceid-parentid-flags`, all lowercase hex. Version `ff` is invalid; version
/// `00` is exactly 55 characters; a later version may carry more after a `-`, which is
/// ignored (the W3C's forward compatibility).
fn parse_traceparent(value: &str) -> Option<(TraceId, SpanId, u8)> {
    let bytes = value.as_bytes();
    if bytes.len() < 55 || !value.is_ascii() {
        return None;
    }
    let version = parse_hex::<1>(&value[0..2])?[0];
    let well_formed = bytes[2] == b'-' && bytes[35] == b'-' && bytes[52] == b'-';
    if version == 0xff || !well_formed {
        return None;
    }
    if (version == 0 && bytes.len() != 55) || (bytes.len() > 55 && bytes[55] != b'-') {
        return None;
    }
    let trace_id = parse_hex::<16>(&value[3..35]).filter(|id| id != &[0; 16])?;
    let span_id = parse_hex::<8>(&value[36..52]).filter(|id| id != &[0; 8])?;
    let flags = parse_hex::<1>(&value[53..55])?[0];
    Some((TraceId(trace_id), SpanId(span_id), flags))
}

/// `N` bytes from exactly `2N` lowercase hex digits.
fn parse_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N
        || !digits
            .iter()
            .all(|d| matches!(d, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

#[cfg(test)]
mod tests;
