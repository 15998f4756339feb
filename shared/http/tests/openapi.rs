//! The OpenAPI document against the Router it describes: every route the Router answers
//! is in the document and every operation in the document is routed; its limits are the
//! ones the validation applies; its examples are accepted; it is served without a key.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use boomerang_api::Problem;
use boomerang_core::domain::limits::{self as tr, *};
use boomerang_core::testing::harness::*;
use serde_json::Value;
use tower::ServiceExt;

const METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
];

fn document() -> Value {
    serde_json::to_value(boomerang_http::openapi()).unwrap()
}

fn router() -> Router {
    boomerang_http::router(harness(ScriptedWebhooks::answering(vec![])).engine)
}

async fn call(router: &Router, method: Method, path: &str, body: Option<&Value>) -> (u16, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", "Bearer key");
    let body = match body {
        Some(json) => {
            request = request.header("content-type", "application/json");
            Body::from(json.to_string())
        }
        None => Body::empty(),
    };
    let response = router
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A documented path with its parameters filled in: a task id that exists nowhere, and a
/// policy name.
fn concrete(path: &str) -> String {
    path.replace("{id}", "01JD2W9Q5Z4T8M3X6V7B0C1N2P")
        .replace("{name}", "payments")
}

#[tokio::test]
async fn every_documented_operation_is_routed_and_every_other_method_is_405() {
    let doc = document();
    let router = router();
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 11, "{:?}", paths.keys());
    for (path, item) in paths {
        for method in METHODS {
            let documented = item.get(method.as_str().to_lowercase()).is_some();
            let (status, body) = call(&router, method.clone(), &concrete(path), None).await;
            if documented {
                // Routed: whatever the handler answers, it is not the Router's fallback.
                assert_ne!(status, 405, "{method} {path} is documented but not routed");
                let problem = serde_json::from_value::<Problem>(body.clone()).ok();
                assert_ne!(
                    problem.map(|p| p.detail).as_deref(),
                    Some("no such endpoint"),
                    "{method} {path} is documented but not routed"
                );
            } else {
                assert_eq!(
                    status, 405,
                    "{method} {path} is routed but not documented: {body}"
                );
            }
        }
    }
}

/// Routes are registered only through `routes!` (which documents them): a plain `.route(…)`
/// anywhere in the libraries' code (every crate under `shared/`) would add a route the
/// document lacks.
#[test]
fn no_route_is_registered_around_the_document() {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut stack: Vec<_> = std::fs::read_dir(src)
        .unwrap()
        .map(|crate_dir| crate_dir.unwrap().path().join("src"))
        .filter(|dir| dir.is_dir())
        .collect();
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            // Unit tests may build routers of their own.
            let code = text.split("#[cfg(test)]").next().unwrap();
            for call in [".route(", ".route_service(", ".nest_service("] {
                assert!(
                    !code.contains(call),
                    "{} registers a route with `{call}…)`, which the OpenAPI document does \
                     not see: register it with `routes!` and a #[utoipa::path]",
                    path.display()
                );
            }
        }
    }
    assert!(files > 20, "read only {files} files under {src}");
}

#[test]
fn the_document_is_openapi_3_1_and_every_operation_is_complete() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(
        doc["components"]["securitySchemes"]["api_key"]["scheme"],
        "bearer"
    );
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let what = format!("{method} {path}");
            assert!(ids.insert(op["operationId"].as_str().unwrap().to_string()));
            assert!(op["summary"].is_string(), "{what} has no summary");
            let responses = op["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{what} has no 2xx"
            );
            // Behind the key exactly where the key is checked; every 4xx is a problem.
            let keyed = path.starts_with("/v1/") || path == "/metrics";
            assert_eq!(op["security"].is_array(), keyed, "{what}");
            assert_eq!(responses.contains_key("401"), keyed, "{what}");
            for (status, response) in responses {
                if status.starts_with('4') {
                    let name = response["$ref"].as_str().unwrap_or_else(|| {
                        panic!("{what} answers {status} with no problem response")
                    });
                    assert!(name.starts_with("#/components/responses/"), "{what}");
                }
            }
        }
    }
    for (name, response) in doc["components"]["responses"].as_object().unwrap() {
        let content = &response["content"]["application/problem+json"];
        assert_eq!(
            content["schema"]["$ref"], "#/components/schemas/Problem",
            "{name}"
        );
        let status = content["example"]["status"].as_u64().unwrap();
        assert!((400..600).contains(&status), "{name}: {status}");
    }
}

/// The limits the document states are the ones the validation applies.
#[test]
fn the_documented_limits_are_the_enforced_ones() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    let task = &schemas["TaskRequest"]["properties"];
    let retry = &schemas["RetryRequest"]["properties"];
    let hold = &schemas["HoldRequest"]["properties"];
    let list = &doc["paths"]["/v1/tasks"]["get"]["parameters"];
    let param = |name: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["schema"]
            .clone()
    };
    let name_param = &doc["paths"]["/v1/policies/{name}"]["get"]["parameters"][0]["schema"];
    let checks: [(&str, &Value, f64); 14] = [
        ("url", &task["url"]["maxLength"], MAX_URL_LEN as f64),
        (
            "on_failure.url",
            &schemas["AlertRequest"]["properties"]["url"]["maxLength"],
            MAX_URL_LEN as f64,
        ),
        (
            "hold.check_url",
            &hold["check_url"]["maxLength"],
            MAX_URL_LEN as f64,
        ),
        (
            "headers",
            &task["headers"]["maxProperties"],
            tr::MAX_HEADERS as f64,
        ),
        (
            "metadata",
            &task["metadata"]["maxProperties"],
            tr::MAX_METADATA_ENTRIES as f64,
        ),
        (
            "metadata names",
            &task["metadata"]["propertyNames"]["maxLength"],
            tr::MAX_METADATA_KEY as f64,
        ),
        (
            "expect_body",
            &task["expect_body"]["maxLength"],
            tr::MAX_EXPECT_BODY as f64,
        ),
        (
            "idempotency_key",
            &task["idempotency_key"]["maxLength"],
            tr::MAX_IDEMPOTENCY_KEY as f64,
        ),
        ("key", &task["key"]["maxLength"], MAX_BUSINESS_KEY as f64),
        (
            "retry.schedule",
            &retry["schedule"]["maxItems"],
            MAX_SCHEDULE_STEPS as f64,
        ),
        (
            "retry.max_attempts",
            &retry["max_attempts"]["maximum"],
            MAX_ATTEMPTS as f64,
        ),
        ("retry.jitter", &retry["jitter"]["maximum"], MAX_JITTER),
        (
            "hold.max_checks",
            &hold["max_checks"]["maximum"],
            MAX_CHECKS as f64,
        ),
        (
            "tasks",
            &schemas["BatchRequest"]["properties"]["tasks"]["maxItems"],
            MAX_BATCH as f64,
        ),
    ];
    for (field, documented, enforced) in checks {
        assert_eq!(documented.as_f64(), Some(enforced), "{field}");
    }
    assert_eq!(param("limit")["maximum"], MAX_PAGE);
    assert_eq!(param("key")["maxLength"], MAX_BUSINESS_KEY);
    assert_eq!(name_param["maxLength"], MAX_DEFINITION_NAME);
    // Actions by key say how many tasks one request looks at.
    let n = MAX_KEY_TASKS.to_string();
    let per_request = format!("up to {},{} tasks", &n[..n.len() - 3], &n[n.len() - 3..]);
    for (path, method) in [("/v1/tasks", "delete"), ("/v1/tasks/release", "post")] {
        let description = doc["paths"][path][method]["description"].as_str().unwrap();
        assert!(description.contains(&per_request), "{description}");
    }
    let statuses = &retry["permanent_statuses"]["items"];
    assert_eq!(statuses["minimum"], *tr::PERMANENT_STATUSES.start());
    assert_eq!(statuses["maximum"], *tr::PERMANENT_STATUSES.end());
}

#[tokio::test]
async fn the_documented_examples_are_accepted() {
    let doc = document();
    let router = router();
    let schemas = &doc["components"]["schemas"];
    let task = &schemas["TaskRequest"]["example"];
    let (status, body) = call(&router, Method::POST, "/v1/tasks", Some(task)).await;
    assert_eq!(status, 201, "{body}");
    let policy = &schemas["PolicyRequest"]["example"];
    let (status, body) = call(&router, Method::PUT, "/v1/policies/payments", Some(policy)).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn the_document_is_served_without_a_key() {
    let response = router()
        .oneshot(Request::get("/openapi.json").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let served: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(served, document());
}
