//! Hostile registrations, generated: arbitrary JSON values and arbitrary strings in every
//! field of the request, through `parse` + `validate` + `Engine::register` on an in-memory
//! engine, and through the whole Router. Whatever comes in, the answer is a task or a 4xx
//! problem naming the field at fault: never a panic, never a 5xx.

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use boomerang_api::request;
use boomerang_api::view::BatchView;
use boomerang_api::Problem;
use boomerang_core::clock::{FixedRandom, ManualClock};
use boomerang_core::domain::{SigningSecret, TenantId};
use boomerang_core::engine::{Engine, EngineSettings, Ports, StorePorts};
use boomerang_core::testing::MemoryDeadLetters;
use boomerang_core::testing::MemoryStore;
use boomerang_core::testing::MemoryTenants;
use boomerang_core::testing::RecordingTimer;
use boomerang_webhook::{DestinationPolicy, HttpWebhooks};
use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use tower::ServiceExt;

const KEY: &str = "bmr_property_test";

/// Built once: a client's TLS set-up is the slowest part of an engine.
fn webhooks() -> Arc<HttpWebhooks> {
    static WEBHOOKS: OnceLock<Arc<HttpWebhooks>> = OnceLock::new();
    WEBHOOKS
        .get_or_init(|| {
            let limit = 2 * boomerang_core::engine::DEFAULT_PER_DESTINATION;
            Arc::new(HttpWebhooks::new(DestinationPolicy::default(), limit).unwrap())
        })
        .clone()
}

fn engine() -> Arc<Engine> {
    let tenant = TenantId::parse("acme").unwrap();
    let store = Arc::new(MemoryStore::default());
    let start = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
    let ports = Ports::new(
        StorePorts::of(store.clone()).with_counts(store),
        Arc::new(RecordingTimer::default()),
        Arc::new(MemoryTenants::new(KEY, tenant, SigningSecret::generate())),
        webhooks(),
        Arc::new(MemoryDeadLetters::default()),
        Arc::new(boomerang_core::testing::AlwaysReady),
    )
    .with_clock(Arc::new(ManualClock::new(start)))
    .with_random(Arc::new(FixedRandom(0.5)));
    Arc::new(Engine::new(ports, EngineSettings::default()))
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Strings aimed at the parsers: durations with absurd numbers and units, times at the
/// edges of the calendar, and anything at all.
fn hostile_string() -> impl Strategy<Value = String> {
    let units = prop::sample::select(vec![
        "", "ns", "ms", "s", "m", "h", "d", "days", "w", "M", "y", "years",
    ]);
    prop_oneof![
        ".*",
        (any::<u64>(), units.clone()).prop_map(|(n, u)| format!("{n}{u}")),
        (0u64..1_000_000, units.clone(), 0u64..100, units)
            .prop_map(|(a, u, b, v)| format!("{a}{u} {b}{v}")),
        (0u32..10_000, 1u32..13, 1u32..29, any::<bool>()).prop_map(|(y, mo, d, z)| {
            format!(
                "{y:04}-{mo:02}-{d:02}T23:59:59{}",
                if z { "Z" } else { "+14:00" }
            )
        }),
        Just("-1s".to_string()),
        Just("https://127.0.0.1/x".to_string()),
        Just("https://[::ffff:169.254.169.254]/".to_string()),
    ]
}

fn hostile_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => hostile_string().prop_map(Value::String),
        1 => any_json(),
    ]
}

/// The objects a request holds, each with its fields and a valid value to start from.
const OBJECTS: [(&str, &[&str]); 3] = [
    (
        "retry",
        &[
            "schedule",
            "backoff",
            "interval",
            "max_interval",
            "max_attempts",
            "max_duration",
            "jitter",
            "permanent_statuses",
        ],
    ),
    ("on_failure", &["url", "headers"]),
    (
        "hold",
        &["timeout", "check_url", "on_unknown", "max_checks"],
    ),
];

fn valid_object(name: &str) -> Value {
    match name {
        "retry" => json!({"backoff": "exponential", "interval": "10s"}),
        "on_failure" => json!({"url": "https://alerts.example.com/hook"}),
        _ => json!({"timeout": "30s", "check_url": "https://shop.example.com/tx"}),
    }
}

/// A valid request (held or not) with some of its fields, and of its objects' fields,
/// replaced by hostile values, and sometimes a field that does not exist.
fn hostile_request() -> impl Strategy<Value = Value> {
    const FIELDS: [&str; 15] = [
        "url",
        "method",
        "headers",
        "body",
        "delay",
        "fire_at",
        "retry",
        "timeout",
        "expect_body",
        "metadata",
        "idempotency_key",
        "key",
        "on_failure",
        "notify",
        "hold",
    ];
    let top = prop::collection::vec(
        (prop::sample::select(FIELDS.to_vec()), hostile_value()),
        0..4,
    );
    let nested = prop::collection::vec(
        (
            prop::sample::select(OBJECTS.to_vec()),
            any::<prop::sample::Index>(),
            hostile_value(),
        ),
        0..5,
    );
    let parts = (
        top,
        nested,
        any::<bool>(),
        prop::option::of((".{0,8}", any_json())),
    );
    parts.prop_map(|(top, nested, held, extra)| {
        let mut request = Map::new();
        request.insert("url".into(), json!("https://example.com/hook"));
        request.insert("delay".into(), json!("5m"));
        for (name, _) in OBJECTS {
            if name != "hold" || held {
                request.insert(name.into(), valid_object(name));
            }
        }
        for (field, value) in top {
            request.insert(field.into(), value);
        }
        for ((name, fields), index, value) in nested {
            let object = request.entry(name).or_insert_with(|| valid_object(name));
            if let Value::Object(o) = object {
                o.insert(index.get(fields).to_string(), value);
            }
        }
        if let Some((name, value)) = extra {
            request.insert(name, value);
        }
        Value::Object(request)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn every_request_gets_a_task_or_a_4xx_naming_its_field(request in hostile_request()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let engine = engine();
        let body = serde_json::to_vec(&request).unwrap();
        let tenant = TenantId::parse("acme").unwrap();

        // The library path: parse into a submission, register.
        let direct = runtime.block_on(async {
            let submission = request::parse(&body)
                .and_then(|r| r.submission(None))
                .map_err(boomerang_api::Problem::from)?;
            Ok::<_, boomerang_api::Problem>(engine.submit(&tenant, submission).await?)
        });
        if let Err(problem) = &direct {
            prop_assert!((400..500).contains(&problem.status), "{problem:?} for {request}");
            prop_assert!(problem.field.is_some(), "{problem:?} names no field, for {request}");
        }

        // The HTTP path, on a fresh engine: the same verdict, as a status code.
        let router = boomerang_http::router(self::engine());
        let response = runtime.block_on(router.oneshot(
            Request::post("/v1/tasks")
                .header("authorization", format!("Bearer {KEY}"))
                .body(Body::from(body))
                .unwrap(),
        )).unwrap();
        let status = response.status();
        match &direct {
            Ok(_) => prop_assert_eq!(status, StatusCode::CREATED, "for {}", request),
            Err(problem) => prop_assert_eq!(status.as_u16(), problem.status, "for {}", request),
        }
    }

    /// The batch route: a valid request alongside a hostile one refuses the batch with a
    /// problem naming the hostile task's field (`tasks[1]…`), and stores nothing; a batch
    /// of valid ones gets a 201 for each.
    #[test]
    fn a_batch_with_a_hostile_task_is_refused_naming_it(request in hostile_request()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let good = serde_json::json!({"url": "https://example.com/ok", "delay": "1m"});
        let body = serde_json::to_vec(&serde_json::json!({"tasks": [good, request]})).unwrap();
        let engine = engine();
        let router = boomerang_http::router(engine.clone());
        let response = runtime.block_on(router.oneshot(
            Request::post("/v1/tasks/batch")
                .header("authorization", format!("Bearer {KEY}"))
                .body(Body::from(body))
                .unwrap(),
        )).unwrap();
        let status = response.status();
        let answer = runtime
            .block_on(axum::body::to_bytes(response.into_body(), 1 << 20))
            .unwrap();
        let tenant = TenantId::parse("acme").unwrap();
        let stored = runtime.block_on(engine.list(
            &tenant,
            &boomerang_core::ports::ListQuery { limit: 10, ..Default::default() },
        )).unwrap();
        if status == StatusCode::OK {
            let answer: BatchView = serde_json::from_slice(&answer).unwrap();
            let statuses: Vec<u16> = answer.tasks.iter().map(|t| t.status).collect();
            prop_assert_eq!(statuses, vec![201, 201], "for {}", request);
            prop_assert_eq!(stored.tasks.len(), 2);
        } else {
            prop_assert!(status.is_client_error(), "{} for {}", status, request);
            let problem: Problem = serde_json::from_slice(&answer).unwrap();
            let field = problem.field.as_deref().unwrap_or_default();
            prop_assert!(field.starts_with("tasks[1]") || status == StatusCode::BAD_REQUEST, "{} names {:?} for {}", status, problem, request);
            prop_assert!(stored.tasks.is_empty(), "a refused batch stores nothing");
        }
    }
}
