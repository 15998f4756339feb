//! Trace context from the real Lambda binaries: the `api` and `delivery` functions run
//! under cargo-lambda's runtime emulator (`cargo lambda watch --only-lambda-apis`), on
//! moto, with the standard `OTEL_EXPORTER_OTLP_*` variables pointing at a collector in the
//! test. A Lambda's process is frozen between invocations, so each function must send its
//! spans before an invocation ends: the registration's span from the API function, the
//! attempt's from the delivery function, both in the caller's trace, and the receiver
//! gets the attempt's `traceparent`.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsBatchResponse;
use boomerang_aws::bootstrap::env_vars;
use boomerang_aws::triggers::poll_queue;
use boomerang_core::domain::TenantId;
use boomerang_e2e::aws::{fresh_moto_resources, moto, moto_endpoint};
use boomerang_e2e::otlp::{collected_spans, CollectedSpan};
use boomerang_e2e::{header, wait_for, Receiver};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

/// The emulator and the function binaries, stopped when dropped.
struct Functions {
    children: Vec<Child>,
    port: u16,
    logs: PathBuf,
}

impl Drop for Functions {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Functions {
    /// `cargo lambda watch` on a free port, and each of `names` (this workspace's debug
    /// builds) polling it for its invocations with `env`.
    async fn start(names: &[&str], env: &[(String, String)]) -> Functions {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let logs = std::env::temp_dir().join(format!("boomerang-lambda-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&logs).unwrap();
        let log_dir = logs.clone();
        let log = move |name: &str| File::create(log_dir.join(format!("{name}.log"))).unwrap();
        let emulator = Command::new("cargo")
            .args([
                "lambda",
                "watch",
                "--only-lambda-apis",
                "-A",
                "127.0.0.1",
                "-P",
            ])
            .arg(port.to_string())
            .stdout(log("emulator"))
            .stderr(Stdio::from(log("emulator.err")))
            .spawn()
            .expect("cargo lambda (the test command installs it: scripts/build-lambdas.sh)");
        let mut functions = Functions {
            children: vec![emulator],
            port,
            logs,
        };
        wait_for("cargo lambda watch", WAIT, || async {
            let up = tokio::net::TcpStream::connect(("127.0.0.1", port)).await;
            up.is_ok().then_some(())
        })
        .await;
        let bin_dir = boomerang_e2e::binary().parent().unwrap().to_path_buf();
        for name in names {
            let out = log(name);
            let child = Command::new(bin_dir.join(name))
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .env(
                    "AWS_LAMBDA_RUNTIME_API",
                    format!("http://127.0.0.1:{port}/.rt/{name}"),
                )
                .env("AWS_LAMBDA_FUNCTION_NAME", name)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .unwrap_or_else(|e| panic!("{name} (cargo build --workspace): {e}"));
            functions.children.push(child);
        }
        functions
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.logs.join(format!("{name}.log"))).unwrap_or_default()
    }
}

#[tokio::test]
async fn the_lambda_functions_export_their_spans_before_each_invocation_ends() {
    let collector = Receiver::always(200).await;
    let rx = Receiver::always(200).await;
    let settings = fresh_moto_resources("ltrace").await;
    let tenants =
        boomerang_aws::DynamoTenants::new(aws_sdk_dynamodb::Client::new(&moto()), &settings.table);
    let minted = (tenants.mint_key(&TenantId::parse("traced").unwrap()).await).expect("a key");
    let mut env: Vec<(String, String)> = (env_vars(&settings).into_iter())
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    for (k, v) in [
        ("AWS_ENDPOINT_URL", moto_endpoint()),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
        // The receiver is on loopback.
        ("BOOMERANG_DEV", "true".into()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url("")),
        ("OTEL_SERVICE_NAME", "boomerang-lambda-e2e".into()),
    ] {
        env.push((k.to_string(), v));
    }
    let functions = Functions::start(&["api", "delivery"], &env).await;

    // Registered through the API function's URL, in the caller's trace.
    let http = reqwest::Client::new();
    let answer = http
        .post(functions.url("/lambda-url/api/v1/tasks"))
        .bearer_auth(&minted.api_key)
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"))
        .json(&json!({"url": rx.url("/traced"), "body": {"order": 42}}))
        .send()
        .await
        .expect("the API function answers");
    let status = answer.status();
    let task: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(status, 201, "{task}: {}", functions.log("api"));
    let task_id = task["id"].as_str().unwrap().to_string();

    // The timer queue's message, handed to the delivery function as SQS would.
    let sqs = aws_sdk_sqs::Client::new(&moto());
    let invocations = functions.url("/2015-03-31/functions/delivery/invocations");
    wait_for("the attempt delivered", WAIT, || async {
        let (http, invocations) = (&http, &invocations);
        let handed = poll_queue(&sqs, &settings.timer_queue_url, |batch| async move {
            let invoke = http
                .post(invocations)
                .json(&batch)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let answer: SqsBatchResponse = invoke.json().await.map_err(|e| e.to_string())?;
            Ok(answer)
        })
        .await;
        let handed = handed.unwrap_or_else(|e| panic!("{e}: {}", functions.log("delivery")));
        (handed > 0 && !rx.received().is_empty()).then_some(())
    })
    .await;
    let call = &rx.received()[0];
    let traceparent = header(call, "traceparent");
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.get(1), Some(&TRACE_ID), "{traceparent}");

    // Both spans reached the collector while the functions waited for their next event.
    let spans = wait_for(
        "the registration's and the attempt's spans",
        WAIT,
        || async {
            let spans: Vec<CollectedSpan> = (collected_spans(&collector).into_iter())
                .filter(|s| s.trace_id == TRACE_ID)
                .collect();
            (spans.len() >= 2).then_some(spans)
        },
    )
    .await;
    let named = |name: &str| {
        (spans.iter().find(|s| s.name == name))
            .unwrap_or_else(|| panic!("no {name} span: {spans:#?}"))
    };
    let registration = named("boomerang register");
    assert_eq!(registration.parent_span_id, CALLER_SPAN);
    assert_eq!(
        registration.attribute("boomerang.task.id"),
        Some(task_id.as_str())
    );
    assert_eq!(registration.service, "boomerang-lambda-e2e");
    let attempt = named("boomerang attempt");
    assert_eq!(attempt.parent_span_id, registration.span_id);
    assert_eq!(
        attempt.span_id, parts[2],
        "the receiver's parent is the attempt's span"
    );
    assert_eq!(attempt.attribute("boomerang.outcome"), Some("succeeded"));
}
