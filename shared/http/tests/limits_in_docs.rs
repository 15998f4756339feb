//! The limits are constants in one place (`boomerang_core::domain::limits`); the OpenAPI
//! document's prose and the book's HTTP API reference state them in words. These tests read both and check
//! every figure against its constant, so that a changed limit cannot leave the words
//! behind.

use std::time::Duration;

use boomerang_core::domain::invalid::human;
use boomerang_core::domain::limits::*;
use serde_json::Value;

/// A duration as the docs write it: `60s`, `24h`, `365days`.
fn compact(d: Duration) -> String {
    human(d).replace(' ', "")
}

fn days(d: Duration) -> u64 {
    d.as_secs() / 86_400
}

fn kib(bytes: usize) -> usize {
    bytes / 1024
}

/// The description of `property` of the schema `schema` in the served document.
fn described(doc: &Value, schema: &str, property: &str) -> String {
    let p = &doc["components"]["schemas"][schema]["properties"][property];
    p["description"]
        .as_str()
        .or_else(|| p["oneOf"][0]["description"].as_str())
        .unwrap_or_else(|| panic!("{schema}.{property} has no description: {p}"))
        .to_string()
}

#[test]
fn the_documents_prose_states_the_enforced_limits() {
    let doc = serde_json::to_value(boomerang_http::openapi()).unwrap();
    let rows: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "TaskRequest",
            "headers",
            vec![format!("at most {MAX_HEADERS}")],
        ),
        (
            "TaskRequest",
            "body",
            vec![format!("at most {} KiB", kib(MAX_BODY_BYTES))],
        ),
        ("TaskRequest", "delay", vec![compact(MAX_SCHEDULE_AHEAD)]),
        (
            "TaskRequest",
            "fire_at",
            vec![format!("within {} days", days(MAX_SCHEDULE_AHEAD))],
        ),
        (
            "TaskRequest",
            "timeout",
            vec![
                format!("{}s to {}s", MIN_TIMEOUT.as_secs(), MAX_TIMEOUT.as_secs()),
                format!("default {}s", DEFAULT_TIMEOUT.as_secs()),
            ],
        ),
        (
            "TaskRequest",
            "expect_body",
            vec![format!("at most {} KiB", kib(MAX_EXPECT_BODY))],
        ),
        (
            "TaskRequest",
            "metadata",
            vec![
                format!("at most {MAX_METADATA_ENTRIES}"),
                format!("keys 1–{MAX_METADATA_KEY} bytes"),
                format!("up to {} KiB", kib(MAX_METADATA_VALUE)),
            ],
        ),
        (
            "TaskRequest",
            "key",
            vec![format!("1–{MAX_BUSINESS_KEY} bytes")],
        ),
        (
            "HoldRequest",
            "max_checks",
            vec![format!("1–{MAX_CHECKS}; default {DEFAULT_MAX_CHECKS}")],
        ),
        (
            "RetryRequest",
            "schedule",
            vec![format!(
                "1–{MAX_SCHEDULE_STEPS} of them, each {} to {}",
                compact(MIN_STEP),
                compact(MAX_STEP)
            )],
        ),
        (
            "RetryRequest",
            "max_interval",
            vec![format!("default {}", compact(DEFAULT_MAX_INTERVAL))],
        ),
        (
            "RetryRequest",
            "max_attempts",
            vec![
                format!("1–{MAX_ATTEMPTS}"),
                format!("or {DEFAULT_BACKOFF_ATTEMPTS} with `backoff`"),
            ],
        ),
        (
            "RetryRequest",
            "max_duration",
            vec![compact(MAX_DURATION), compact(MAX_UNLIMITED_DURATION)],
        ),
        ("RetryRequest", "jitter", vec![format!("0 to {MAX_JITTER}")]),
        (
            "FlowRequest",
            "key",
            vec![format!("1–{MAX_FLOW_KEY} bytes")],
        ),
        ("FlowRequest", "rate", vec![format!("(1–{MAX_FLOW_RATE})")]),
        (
            "FlowRequest",
            "period",
            vec![format!(
                "{}s to {}h; default {}s",
                MIN_FLOW_PERIOD.as_secs(),
                MAX_FLOW_PERIOD.as_secs() / 3600,
                DEFAULT_FLOW_PERIOD.as_secs()
            )],
        ),
        (
            "FlowRequest",
            "parallelism",
            vec![format!("(1–{MAX_PARALLELISM})")],
        ),
        (
            "RetryRequest",
            "permanent_statuses",
            vec![format!(
                "{}–{}",
                PERMANENT_STATUSES.start(),
                PERMANENT_STATUSES.end()
            )],
        ),
    ];
    for (schema, property, figures) in rows {
        let text = described(&doc, schema, property);
        for figure in figures {
            assert!(
                text.contains(&figure),
                "{schema}.{property} does not say `{figure}`: {text}"
            );
        }
    }
}

#[test]
fn the_http_api_reference_states_the_enforced_limits() {
    let reference = include_str!("../../../docs/src/reference/http-api.md");
    let row = |field: &str| {
        let start = format!("| `{field}` |");
        reference
            .lines()
            .find(|l| l.starts_with(&start))
            .unwrap_or_else(|| panic!("the HTTP API reference has no row for `{field}`"))
    };
    let s = |d: Duration| format!("{} s", d.as_secs());
    let rows: Vec<(&str, Vec<String>)> = vec![
        ("body", vec![format!("≤ {} KiB", kib(MAX_BODY_BYTES))]),
        (
            "fire_at",
            vec![format!("≤ {} days ahead", days(MAX_SCHEDULE_AHEAD))],
        ),
        (
            "retry.max_attempts",
            vec![
                format!("1–{MAX_ATTEMPTS}"),
                format!("or {DEFAULT_BACKOFF_ATTEMPTS} for backoff"),
                format!("at most {} d", days(MAX_UNLIMITED_DURATION)),
            ],
        ),
        ("retry.jitter", vec![format!("0–{MAX_JITTER}")]),
        (
            "retry.permanent_statuses",
            vec![format!(
                "{}–{}",
                PERMANENT_STATUSES.start(),
                PERMANENT_STATUSES.end()
            )],
        ),
        (
            "timeout",
            vec![format!(
                "{}–{}, default {}",
                s(MIN_TIMEOUT),
                s(MAX_TIMEOUT),
                s(DEFAULT_TIMEOUT)
            )],
        ),
        (
            "expect_body",
            vec![format!("≤ {} KiB", kib(MAX_EXPECT_BODY))],
        ),
        (
            "metadata",
            vec![format!(
                "≤ {MAX_METADATA_ENTRIES} entries, keys ≤ {MAX_METADATA_KEY} B, values ≤ {} KiB",
                kib(MAX_METADATA_VALUE)
            )],
        ),
        ("key", vec![format!("1–{MAX_BUSINESS_KEY} bytes")]),
        (
            "hold",
            vec![
                format!("`timeout` {}–{} h", s(MIN_HOLD), MAX_HOLD.as_secs() / 3600),
                format!("`max_checks` 1–{MAX_CHECKS}, default {DEFAULT_MAX_CHECKS}"),
            ],
        ),
        (
            "flow",
            vec![
                format!("`key` 1–{MAX_FLOW_KEY} bytes"),
                format!(
                    "`rate` 1–{MAX_FLOW_RATE} per `period` ({}–{} d, default {})",
                    s(MIN_FLOW_PERIOD),
                    days(MAX_FLOW_PERIOD),
                    s(DEFAULT_FLOW_PERIOD)
                ),
                format!("`parallelism` 1–{MAX_PARALLELISM}"),
            ],
        ),
        (
            "idempotency_key",
            vec![
                format!("≤ {MAX_IDEMPOTENCY_KEY} chars"),
                format!("`{RESERVED_KEY_PREFIX}` are reserved"),
            ],
        ),
    ];
    for (field, figures) in rows {
        let line = row(field);
        for figure in figures {
            assert!(
                line.contains(&figure),
                "the HTTP API reference's `{field}` row does not say `{figure}`: {line}"
            );
        }
    }
    for figure in [
        format!("up to {} tasks with the key", thousands(MAX_KEY_TASKS)),
        format!("registers up to {MAX_BATCH} tasks in one request"),
    ] {
        assert!(
            reference.contains(&figure),
            "the HTTP API reference does not say `{figure}`"
        );
    }
}

/// `1000` as `1,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
