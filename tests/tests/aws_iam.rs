//! The functions' AWS calls against their roles in the synthesized stack.
//!
//! No emulator evaluates IAM, so a grant that is missing (a call AWS would refuse) or one
//! too many (a grant no code uses) passes every other test. Here each function runs on
//! the AWS backend with its own recording proxy in front of moto, as the stack deploys it
//! (the API function without the slow lane, which only the delivery function hands to),
//! through a scenario that makes every kind of call it makes in production: the API's
//! every operation, secret rotation among them; deliveries, a bucket's fire, the slow
//! lane, dead letters and alerts; the sweeper's repairs, bucket checks, redrive and bulk
//! jobs. Each call becomes the authorization requests AWS would make of the role
//! ([`boomerang_e2e::iam_requests`]), and `infra/iam/check-calls.mjs` evaluates them with
//! an IAM policy evaluator against the roles and policies of the template `cdk synth`
//! makes. It fails on a call the role would deny, on a probe of what a function must
//! never do that the role would allow, and on a grant that no call uses.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsBatchResponse;
use boomerang_aws::backend::{aws, AwsBackend};
use boomerang_aws::lambda::{check_bucket_fires, handle_sweep, sweep, DeliveryEvent};
use boomerang_aws::messages::{BucketWork, SweepPass, TimerMessage};
use boomerang_aws::{emulator_config, AwsSettings};
use boomerang_core::clock::SystemClock;
use boomerang_core::domain::TenantId;
use boomerang_core::engine::bulk_runner;
use boomerang_e2e::aws::{dev_config, fresh_moto_resources, moto, moto_endpoint, sqs_event};
use boomerang_e2e::fault_proxy::{Fault, FaultProxy, Rule, Service};
use boomerang_e2e::iam_requests::{requests_of, Expect, IamRequest, Resource};
use boomerang_e2e::{wait_for, Receiver, Reply};
use chrono::{DurationRound, Utc};
use serde_json::{json, Value};

/// One function: its backend, whose every AWS call goes through its recording proxy.
struct Function {
    name: &'static str,
    proxy: FaultProxy,
    backend: AwsBackend,
    settings: AwsSettings,
}

impl Function {
    async fn start(name: &'static str, settings: &AwsSettings) -> Function {
        let proxy = FaultProxy::recording(&moto_endpoint()).await;
        let mut settings = settings.clone();
        // The stack tells only the delivery function of the slow lane.
        if name != "delivery" {
            settings.slow_queue_url = None;
        }
        let config = dev_config(&settings, Arc::new(SystemClock));
        let backend = aws(&emulator_config(&proxy.url), config).expect("backend");
        Function {
            name,
            proxy,
            backend,
            settings,
        }
    }

    fn requests(&self) -> Vec<IamRequest> {
        requests_of(self.name, &self.settings, &self.proxy.recorded())
    }
}

/// The API function's router on a loopback port, called as API Gateway would.
struct Api {
    base: String,
    key: String,
    http: reqwest::Client,
}

impl Api {
    async fn start(function: &Function, key: String) -> Api {
        let app = boomerang_http::lambda_router(function.backend.engine.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Api {
            base,
            key,
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
        }
    }

    /// Sends a request; panics unless the answer is 2xx. Returns the body as JSON (null
    /// when empty).
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.call_with(method, path, body, &[]).await
    }

    async fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Value {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = (self
            .http
            .request(method.clone(), format!("{}{path}", self.base)))
        .bearer_auth(&self.key);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await.expect("the API answers");
        let status = answer.status();
        let text = answer.text().await.unwrap_or_default();
        assert!(status.is_success(), "{method} {path}: {status}: {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    async fn create(&self, task: Value) -> String {
        let task = self.call("POST", "/v1/tasks", Some(task)).await;
        task["id"].as_str().expect("a task id").to_string()
    }

    async fn status(&self, id: &str) -> String {
        let task = self.call("GET", &format!("/v1/tasks/{id}"), None).await;
        task["status"].as_str().unwrap_or_default().to_string()
    }
}

/// An SQS event of the messages, as the event source mapping hands them to the function.
fn sqs_event_of(messages: &[aws_sdk_sqs::types::Message]) -> DeliveryEvent {
    let bodies: Vec<(&str, String)> = (messages.iter())
        .map(|m| {
            let body = m.body().unwrap_or_default().to_string();
            (m.message_id().unwrap_or_default(), body)
        })
        .collect();
    serde_json::from_value(sqs_event(&bodies)).expect("an SQS event")
}

/// The event source mapping's part, played by the test with its own (unrecorded) client:
/// takes what is visible on `queue_url`, hands it to the delivery function as one event,
/// and deletes what the function did not report failed. Returns how many it handed over.
async fn pump(delivery: &Function, sqs: &aws_sdk_sqs::Client, queue_url: &str) -> usize {
    let out = (sqs.receive_message())
        .queue_url(queue_url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .expect("receive");
    let messages = out.messages();
    if messages.is_empty() {
        return 0;
    }
    let answer = (delivery.backend.delivery())
        .handle(sqs_event_of(messages), Some("iam-check"))
        .await
        .expect("the delivery handler");
    let failures: SqsBatchResponse = serde_json::from_value(answer).unwrap_or_default();
    for m in messages {
        let failed = (failures.batch_item_failures.iter())
            .any(|f| Some(f.item_identifier.as_str()) == m.message_id());
        if !failed {
            (sqs.delete_message())
                .queue_url(queue_url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .expect("delete");
        }
    }
    messages.len()
}

/// [`pump`] on the timer queue and the slow lane.
async fn pump_both(delivery: &Function, sqs: &aws_sdk_sqs::Client) -> usize {
    let settings = &delivery.settings;
    let slow = settings.slow_queue_url.as_deref().expect("a slow lane");
    pump(delivery, sqs, &settings.timer_queue_url).await + pump(delivery, sqs, slow).await
}

/// Pumps the timer queue and the slow lane until each task in `ids` has `status`.
async fn deliver_until(
    api: &Api,
    delivery: &Function,
    sqs: &aws_sdk_sqs::Client,
    ids: &[&str],
    status: &str,
) {
    wait_for(
        &format!("{ids:?} {status}"),
        Duration::from_secs(120),
        || async {
            pump_both(delivery, sqs).await;
            for id in ids {
                if api.status(id).await != status {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
}

/// Where the synthesized stack is: `infra/cdk.out` of the test command's infrastructure
/// step, or made here (npm ci, tsc and cdk synth, as that step does) when absent or older
/// than the stack's code.
fn synthesized_stack(infra: &Path) -> PathBuf {
    let template = infra.join("cdk.out/Boomerang-ci.template.json");
    let run = |program: &str, args: &[&str]| {
        let status = Command::new(program)
            .args(args)
            .current_dir(infra)
            .env("CDK_DISABLE_CLI_TELEMETRY", "true")
            .status()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        assert!(status.success(), "{program} {args:?} failed");
    };
    if !infra.join("node_modules/.bin/cdk").exists() {
        run(
            "npm",
            &["ci", "--no-audit", "--no-fund", "--loglevel=error"],
        );
    }
    run("npx", &["tsc", "-p", "."]);
    if !fresh(&template, &[&infra.join("lib"), &infra.join("bin")]) {
        run(
            "npx",
            &[
                "cdk",
                "synth",
                "--quiet",
                "--no-notices",
                "--no-version-reporting",
                "-c",
                "stage=ci",
                "-c",
                "deletionProtection=false",
            ],
        );
    }
    template
}

/// One line per function, action, resource and kind of leading key (the part of a key
/// before its first `#`), with how many distinct requests it stands for.
fn summary(requests: &[IamRequest]) -> Vec<String> {
    let mut lines = std::collections::BTreeMap::<String, usize>::new();
    for r in requests {
        let kinds: std::collections::BTreeSet<String> = (r.context.get("dynamodb:LeadingKeys"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|k| k.split_inclusive('#').next().unwrap_or(k).to_string())
            .collect();
        let kinds = kinds.into_iter().collect::<Vec<_>>().join(",");
        let line = format!("{:9} {:28} {:?} {kinds}", r.function, r.action, r.resource);
        *lines.entry(line).or_default() += 1;
    }
    lines
        .into_iter()
        .map(|(l, n)| format!("{l} ({n})"))
        .collect()
}

/// Whether `file` exists and is newer than every file in `sources`.
fn fresh(file: &Path, sources: &[&Path]) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(made) = modified(file) else {
        return false;
    };
    sources.iter().all(|dir| {
        (std::fs::read_dir(dir).into_iter().flatten().flatten())
            .all(|entry| modified(&entry.path()).is_some_and(|m| m <= made))
    })
}

/// What no function may do, whatever its code: each must be denied by its role.
fn probes(tenant: &str) -> Vec<IamRequest> {
    let api_key = format!("K#{}", "ab".repeat(32));
    let item = |function: &str, action: &str, pk: &str, attributes: &[&str], about: &str| {
        let mut context = std::collections::BTreeMap::new();
        context.insert("dynamodb:LeadingKeys".to_string(), json!([pk]));
        if !attributes.is_empty() {
            context.insert("dynamodb:Attributes".to_string(), json!(attributes));
        }
        IamRequest {
            function: function.into(),
            action: format!("dynamodb:{action}"),
            resource: Resource::Table,
            context,
            expect: Expect::Deny,
            about: about.into(),
        }
    };
    let tenant_item = format!("N#{tenant}");
    let mut probes = vec![
        item(
            "api",
            "PutItem",
            &tenant_item,
            &["pk", "sk", "signing_secret"],
            "the API replaces a tenant (only operators create tenants)",
        ),
        item(
            "api",
            "UpdateItem",
            &tenant_item,
            &["pk", "sk", "alert"],
            "the API changes a tenant's settings other than its secrets",
        ),
        item(
            "api",
            "UpdateItem",
            &tenant_item,
            &["pk", "sk", "signing_secrets", "destination_limit"],
            "the API changes a tenant's secrets and another setting in one write",
        ),
        item(
            "api",
            "DeleteItem",
            &tenant_item,
            &[],
            "the API deletes a tenant",
        ),
    ];
    for function in ["api", "delivery", "sweeper"] {
        for action in ["PutItem", "UpdateItem", "DeleteItem"] {
            probes.push(item(
                function,
                action,
                &api_key,
                &[],
                "a function writes an API key (only operators mint keys)",
            ));
        }
        if function != "api" {
            probes.push(item(
                function,
                "UpdateItem",
                &tenant_item,
                &["pk", "sk", "signing_secrets"],
                "only the API rotates secrets",
            ));
        }
    }
    // The control items the sweep, the bucket checks and `aws rearm` keep: an API that
    // could write them could move the sweep's checkpoint past lost work.
    for pk in ["SWEEP", "BUCKET", "REARM"] {
        for action in ["PutItem", "UpdateItem", "DeleteItem"] {
            probes.push(item(
                "api",
                action,
                pk,
                &[],
                "the API writes a control item of the sweep or the bucket checks",
            ));
        }
    }
    probes.push(item(
        "api",
        "DeleteItem",
        &format!("T#{tenant}#0"),
        &[],
        "a function deletes a task (tasks end by their time to live)",
    ));
    probes
}

#[test]
fn every_call_each_function_makes_is_allowed_by_its_role_and_every_grant_is_used() {
    // A thread of its own: the unoptimized scenario, the engine's futures within it, needs
    // more stack than a test thread has.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_stack_size(16 << 20)
                .build()
                .unwrap();
            runtime.block_on(Box::pin(scenario()));
        })
        .unwrap()
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
}

async fn scenario() {
    let settings = fresh_moto_resources("iam").await;
    let api_fn = Function::start("api", &settings).await;
    let delivery = Function::start("delivery", &settings).await;
    let sweeper = Function::start("sweeper", &settings).await;
    // The operator's part (minting keys, the event source mapping's reads) is unrecorded.
    let sqs = aws_sdk_sqs::Client::new(&moto());
    let operator =
        boomerang_aws::backend::aws(&moto(), dev_config(&settings, Arc::new(SystemClock))).unwrap();
    let tenant = TenantId::parse("iam-check").unwrap();
    let minted = operator.tenants.mint_key(&tenant).await.unwrap();
    // The tenant's own limit of calls at once to a destination: slots in the table.
    (operator.tenants.set_destination_limit(&tenant, Some(8)))
        .await
        .unwrap();
    let api = Api::start(&api_fn, minted.api_key.clone()).await;

    // Slow receivers answer after 3.2 s; `/fail` always fails.
    let rx = Receiver::start(|path: &str, _| match path {
        p if p.starts_with("/slow") => Reply {
            delay: Duration::from_millis(3200),
            ..Reply::status(200)
        },
        "/fail" => Reply::status(500),
        _ => Reply::status(200),
    })
    .await;

    // ── The API's operations ──────────────────────────────────────────────────────────
    let ok = api
        .create(json!({"url": rx.url("/ok"), "delay": "1s"}))
        .await;
    let failing = api
        .create(json!({
            "url": rx.url("/fail"),
            "retry": {"schedule": ["1s"], "max_attempts": 2},
            "on_failure": {"url": rx.url("/alert")}
        }))
        .await;
    // Far ahead: kept in a minute's bucket, whose schedule the API creates.
    let far = api
        .create(json!({"url": rx.url("/far"), "delay": "30m"}))
        .await;
    let idempotent = json!({"url": rx.url("/once"), "delay": "1h"});
    let headers = [("idempotency-key", "order-7")];
    let first = api
        .call_with("POST", "/v1/tasks", Some(idempotent.clone()), &headers)
        .await;
    let again = api
        .call_with("POST", "/v1/tasks", Some(idempotent), &headers)
        .await;
    assert_eq!(first["id"], again["id"]);
    for _ in 0..2 {
        api.create(json!({"url": rx.url("/replaced"), "delay": "10m", "key": "cart-1", "on_key": "replace"}))
            .await;
    }
    api.call("DELETE", "/v1/tasks?key=cart-1", None).await;
    let ordered: Vec<String> = futures_util::future::join_all((0..2).map(|i| {
        api.create(json!({"url": rx.url(&format!("/ordered/{i}")), "order_key": "account-1"}))
    }))
    .await;
    let held = api
        .create(json!({"url": rx.url("/held"), "hold": {"timeout": "1h"}}))
        .await;
    api.call("POST", &format!("/v1/tasks/{held}/release"), None)
        .await;
    let held_by_key = json!({"url": rx.url("/held"), "hold": {"timeout": "1h"}, "key": "batch-9"});
    api.create(held_by_key).await;
    api.call("POST", "/v1/tasks/release?key=batch-9", None)
        .await;
    let canceled = api
        .create(json!({"url": rx.url("/never"), "hold": {"timeout": "1h"}}))
        .await;
    api.call("DELETE", &format!("/v1/tasks/{canceled}"), None)
        .await;
    // A task of a paused flow waits in it until the flow is resumed.
    api.call("POST", "/v1/flows/partner/pause", None).await;
    let flowing = api
        .create(json!({"url": rx.url("/partner"), "flow": {"key": "partner", "parallelism": 1}}))
        .await;
    // A flow with a rate (windows in the table), and one with room for one call at a
    // time, whose other tasks wait in it.
    let mut flowing_more = Vec::new();
    for i in 0..2 {
        let rated = json!({"url": rx.url(&format!("/rated/{i}")), "flow": {"key": "rated", "rate": 1, "period": "1s"}});
        flowing_more.push(api.create(rated).await);
    }
    for i in 0..3 {
        let narrow = json!({"url": rx.url(&format!("/slowflow/{i}")), "flow": {"key": "narrow", "parallelism": 1}});
        flowing_more.push(api.create(narrow).await);
    }
    api.call("GET", "/v1/flows", None).await;
    api.call("GET", "/v1/flows/partner", None).await;
    wait_for(
        "a task waiting in the paused flow",
        Duration::from_secs(60),
        || async {
            pump_both(&delivery, &sqs).await;
            let flow = api.call("GET", "/v1/flows/partner", None).await;
            (flow["waiting"].as_u64() >= Some(1)).then_some(())
        },
    )
    .await;
    api.call("POST", "/v1/flows/partner/resume", None).await;
    let batch = json!({"tasks": [{"url": rx.url("/b/1"), "delay": "2h"}, {"url": rx.url("/b/2"), "delay": "2h"}]});
    api.call("POST", "/v1/tasks/batch", Some(batch)).await;
    api.call("GET", "/v1/tasks?status=scheduled&limit=5", None)
        .await;
    api.call("GET", "/v1/stats", None).await;
    api.call("GET", "/healthz", None).await;
    api.call("GET", "/readyz", None).await;
    // A canceled task gives up its place in its order line.
    let in_line = api
        .create(json!({"url": rx.url("/in-line"), "order_key": "account-2", "delay": "1h"}))
        .await;
    api.call("DELETE", &format!("/v1/tasks/{in_line}"), None)
        .await;
    api.call(
        "PUT",
        "/v1/policies/gentle",
        Some(json!({"schedule": ["1m", "5m"]})),
    )
    .await;
    api.call("GET", "/v1/policies/gentle", None).await;
    api.call("GET", "/v1/policies", None).await;
    api.call("DELETE", "/v1/policies/gentle", None).await;
    api.call(
        "PUT",
        "/v1/templates/billing",
        Some(json!({"url_base": rx.url("/billing")})),
    )
    .await;
    api.call("GET", "/v1/templates/billing", None).await;
    api.call("GET", "/v1/templates", None).await;
    api.call("DELETE", "/v1/templates/billing", None).await;
    api.call(
        "PUT",
        "/v1/breakers/settings",
        Some(json!({"failures": 50})),
    )
    .await;
    let destination = json!({"destination": rx.url("/")});
    api.call("POST", "/v1/breakers/open", Some(destination.clone()))
        .await;
    api.call("POST", "/v1/breakers/close", Some(destination))
        .await;
    api.call("GET", "/v1/breakers", None).await;
    api.call("GET", "/v1/order-keys", None).await;
    api.call("GET", "/v1/order-keys/account-1", None).await;
    // Secret rotation writes the tenant's item: the one tenant write the API may make.
    api.call("GET", "/v1/signing-secrets", None).await;
    let rotated = api
        .call(
            "POST",
            "/v1/signing-secrets",
            Some(json!({"grace_period": "1h"})),
        )
        .await;
    let old = rotated["secrets"][1]["id"]
        .as_str()
        .expect("the old secret")
        .to_string();
    api.call("DELETE", &format!("/v1/signing-secrets/{old}"), None)
        .await;
    let schedule = api
        .call(
            "POST",
            "/v1/schedules",
            Some(json!({"url": rx.url("/daily"), "every": "1h"})),
        )
        .await;
    let schedule = schedule["id"].as_str().expect("a schedule id").to_string();
    api.call("GET", "/v1/schedules", None).await;
    api.call("GET", &format!("/v1/schedules/{schedule}"), None)
        .await;
    api.call("POST", &format!("/v1/schedules/{schedule}/pause"), None)
        .await;
    api.call("POST", &format!("/v1/schedules/{schedule}/resume"), None)
        .await;
    api.call("DELETE", &format!("/v1/schedules/{schedule}"), None)
        .await;
    // A registration while the timer queue refuses sends: stored, its timer left to the
    // sweeper.
    api_fn.proxy.inject(
        Rule::every(Service::Sqs, Fault::Outage, Duration::from_secs(60))
            .on(&["SendMessage", "SendMessageBatch"]),
    );
    let unarmed = api.create(json!({"url": rx.url("/unarmed")})).await;
    api_fn.proxy.lift_all();

    // ── Deliveries ────────────────────────────────────────────────────────────────────
    let mut due: Vec<&str> = vec![&ok, &held, &flowing];
    due.extend(flowing_more.iter().map(String::as_str));
    due.extend(ordered.iter().map(String::as_str));
    deliver_until(&api, &delivery, &sqs, &due, "succeeded").await;
    deliver_until(&api, &delivery, &sqs, &[&failing], "failed").await;
    // Retried, it fails again while the dead-letter queue refuses the delivery function's
    // sends: the sweeper sends the dead letter it still owes.
    api.call("POST", &format!("/v1/tasks/{failing}/retry"), None)
        .await;
    delivery.proxy.inject(
        Rule::every(Service::Sqs, Fault::Outage, Duration::from_secs(300))
            .on(&["SendMessage"])
            .containing(&settings.dead_letter_queue_url),
    );
    deliver_until(&api, &delivery, &sqs, &[&failing], "failed").await;
    // An attempt that fails and is retried far ahead: the delivery function arms its
    // minute's bucket.
    let retried_far = api
        .create(json!({"url": rx.url("/fail"), "retry": {"schedule": ["50m"], "max_attempts": 2}}))
        .await;
    wait_for(
        "the first attempt failed",
        Duration::from_secs(60),
        || async {
            pump_both(&delivery, &sqs).await;
            let task = api
                .call("GET", &format!("/v1/tasks/{retried_far}"), None)
                .await;
            (task["attempts"].as_array().is_some_and(|a| !a.is_empty())).then_some(())
        },
    )
    .await;
    // A schedule's occurrences, each registered as it comes due.
    let every = api
        .call(
            "POST",
            "/v1/schedules",
            Some(json!({"url": rx.url("/every"), "every": "2s", "order_key": "every-line"})),
        )
        .await;
    let every = every["id"].as_str().expect("a schedule id").to_string();
    wait_for(
        "two occurrences delivered",
        Duration::from_secs(60),
        || async {
            pump_both(&delivery, &sqs).await;
            (rx.count("/every") >= 2).then_some(())
        },
    )
    .await;
    api.call("DELETE", &format!("/v1/schedules/{every}"), None)
        .await;
    // A destination whose calls are mostly slow: its next attempt goes to the slow lane.
    let slow: Vec<String> = futures_util::future::join_all(
        (0..12).map(|i| api.create(json!({"url": rx.url(&format!("/slow/{i}"))}))),
    )
    .await;
    let slow: Vec<&str> = slow.iter().map(String::as_str).collect();
    deliver_until(&api, &delivery, &sqs, &slow, "succeeded").await;
    let handed_over = api.create(json!({"url": rx.url("/slow/last")})).await;
    deliver_until(&api, &delivery, &sqs, &[&handed_over], "succeeded").await;
    // The far task's minute, fired as its schedule fires it: sent to the timer queue (by
    // Scheduler, with its own role).
    let minute = (Utc::now() + chrono::Duration::minutes(30))
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap();
    for minute in [minute, minute + chrono::Duration::minutes(1)] {
        let fire = TimerMessage::Bucket {
            bucket: BucketWork::whole(minute),
        };
        (sqs.send_message())
            .queue_url(&settings.timer_queue_url)
            .message_body(serde_json::to_string(&fire).unwrap())
            .send()
            .await
            .unwrap();
    }
    // The half-minute sweep pass, as the timer queue brings it.
    let pass = TimerMessage::Sweep {
        sweep: SweepPass::HalfMinute,
    };
    (sqs.send_message())
        .queue_url(&settings.timer_queue_url)
        .message_body(serde_json::to_string(&pass).unwrap())
        .send()
        .await
        .unwrap();
    while pump_both(&delivery, &sqs).await > 0 {}

    // ── The sweeper ───────────────────────────────────────────────────────────────────
    // A failed timer waits in the system-failures queue; a bulk retry of the failed task.
    let failures_url = settings.system_failures_queue_url.clone().unwrap();
    let lost = TimerMessage::Sweep {
        sweep: SweepPass::HalfMinute,
    };
    (sqs.send_message())
        .queue_url(&failures_url)
        .message_body(serde_json::to_string(&lost).unwrap())
        .send()
        .await
        .unwrap();
    let bulk = json!({"action": "retry", "filter": {"url_prefix": rx.url("/fail")}});
    let job = api.call("POST", "/v1/tasks/bulk", Some(bulk)).await;
    let job = job["id"].as_str().expect("a bulk job").to_string();
    // Bulk jobs that select by business key: one cancels an ordered task (its place in
    // the line given up), one releases a held task due far ahead (its minute armed).
    api.create(json!({"url": rx.url("/bulk-canceled"), "order_key": "account-3", "key": "bulk-cancel", "delay": "1h"}))
        .await;
    let cancel = json!({"action": "cancel", "filter": {"key": "bulk-cancel"}});
    api.call("POST", "/v1/tasks/bulk", Some(cancel)).await;
    let far_held = api
        .create(json!({"url": rx.url("/far-held"), "delay": "37m", "hold": {"timeout": "2h"}, "key": "far-held"}))
        .await;
    let release = json!({"action": "release", "filter": {"key": "far-held"}});
    api.call("POST", "/v1/tasks/bulk", Some(release)).await;
    api.call("GET", &format!("/v1/bulk-jobs/{job}"), None).await;
    api.call("GET", "/v1/bulk-jobs", None).await;
    let engine = &sweeper.backend.engine;
    check_bucket_fires(engine, &sweeper.backend.buckets).await;
    let failures = sweeper.backend.system_failures();
    handle_sweep(engine, failures.as_ref(), &sweeper.backend.timer)
        .await
        .expect("a sweep");
    // The unarmed task and the dead letter owed are overdue by the sweep's lag only later:
    // sweep ahead to repair them.
    sweep(engine, failures.as_ref(), chrono::Duration::minutes(10))
        .await
        .expect("a sweep ahead");
    engine
        .run_bulk_jobs(&bulk_runner(), Duration::from_secs(20))
        .await
        .expect("bulk jobs");
    delivery.proxy.lift_all();
    deliver_until(&api, &delivery, &sqs, &[&unarmed], "succeeded").await;
    assert_eq!(api.status(&far).await, "scheduled");
    assert_eq!(
        api.status(&far_held).await,
        "scheduled",
        "released by the bulk job"
    );

    // ── The check ─────────────────────────────────────────────────────────────────────
    let mut requests: Vec<IamRequest> = [&api_fn, &delivery, &sweeper]
        .iter()
        .flat_map(|f| f.requests())
        .collect();
    for line in summary(&requests) {
        println!("{line}");
    }
    // What the scenario must have made, or the check proves less than it says.
    let made = |function: &str, action: &str, what: &dyn Fn(&IamRequest) -> bool| {
        assert!(
            requests
                .iter()
                .any(|r| r.function == function && r.action == action && what(r)),
            "the scenario made no {action} by the {function} function of this kind"
        );
    };
    let leading = |prefix: &'static str| {
        move |r: &IamRequest| {
            (r.context
                .get("dynamodb:LeadingKeys")
                .and_then(Value::as_array))
            .is_some_and(|keys| {
                keys.iter()
                    .any(|k| k.as_str().is_some_and(|k| k.starts_with(prefix)))
            })
        }
    };
    made("api", "dynamodb:UpdateItem", &leading("N#"));
    made("sweeper", "dynamodb:PutItem", &leading("SWEEP"));
    made("sweeper", "dynamodb:PutItem", &leading("BUCKET"));
    made("delivery", "dynamodb:PutItem", &leading("BUCKET"));
    made("delivery", "scheduler:CreateSchedule", &|_| true);
    made("sweeper", "sqs:SendMessage", &|r| {
        r.resource == Resource::Queue("dead-letters".into())
    });
    made("delivery", "sqs:SendMessage", &|r| {
        r.resource == Resource::Queue("slow".into())
    });
    made("delivery", "sqs:SendMessage", &|r| {
        r.resource == Resource::Queue("dead-letters".into())
    });
    made("api", "scheduler:CreateSchedule", &|_| true);
    made("api", "dynamodb:GetItem", &leading("READY"));
    made("api", "dynamodb:DeleteItem", &leading("OL#"));
    made("delivery", "dynamodb:PutItem", &leading("OL#"));
    made("sweeper", "dynamodb:DeleteItem", &leading("OL#"));
    made("sweeper", "dynamodb:Query", &|r| {
        r.resource == Resource::Index("by_key".into())
    });
    made("sweeper", "scheduler:CreateSchedule", &|_| true);
    made("sweeper", "sqs:ReceiveMessage", &|_| true);
    requests.extend(probes(tenant.as_str()));

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let infra = root.join("infra");
    let template = synthesized_stack(&infra);
    let calls = std::env::temp_dir().join(format!("boomerang-iam-{}.json", ulid::Ulid::new()));
    std::fs::write(&calls, serde_json::to_vec_pretty(&requests).unwrap()).unwrap();
    let checker = infra.join("iam");
    if !checker
        .join("node_modules/@cloud-copilot/iam-simulate")
        .exists()
    {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&checker)
            .status()
            .expect("npm installs the IAM evaluator");
        assert!(status.success(), "npm ci in infra/iam failed");
    }
    let output = Command::new("node")
        .arg(checker.join("check-calls.mjs"))
        .arg(&template)
        .arg(&calls)
        .output()
        .expect("node runs the IAM check");
    let _ = std::fs::remove_file(&calls);
    let printed = String::from_utf8_lossy(&output.stdout);
    println!("{printed}{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the IAM check failed (above)");
    assert!(printed.contains("denied as they must be"), "{printed}");
}
