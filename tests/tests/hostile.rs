//! Hostile input against the real binary, over raw TCP where a client library would tidy
//! the request up: every one gets an HTTP answer (4xx, with a problem body where the API
//! made it), never a dropped connection, and nothing is stored. The harness also fails the
//! test if any request reached the Router's catch-panic layer.

use std::time::Duration;

use boomerang_api::Problem;
use boomerang_client::ListParams;
use boomerang_e2e::{Server, ServerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `head` + `body` as one HTTP/1.1 request on a fresh connection and returns the
/// status and the body of the answer. Panics if the server closes without answering.
async fn raw(server: &Server, head: &str, body: &[u8]) -> (u16, String) {
    let addr = server.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("{head}Host: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .expect("the server answers in time")
        .expect("the connection is readable");
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("the connection was dropped without an answer: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn post(server: &Server, extra_headers: &str, body: &[u8]) -> String {
    format!(
        "POST /v1/tasks HTTP/1.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{extra_headers}",
        server.api_key,
        body.len()
    )
}

#[tokio::test]
async fn hostile_requests_get_an_answer_and_store_nothing() {
    let server = Server::start(ServerOptions::default());
    let url = "https://example.com/hook";
    let deep = format!(
        r#"{{"url":"{url}","body":{}1{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let json_cases: Vec<(String, &str, u16, Option<&str>)> = vec![
        (
            format!(r#"{{"url":"{url}","delay":"300000y"}}"#),
            "",
            422,
            Some("delay"),
        ),
        (
            format!(r#"{{"url":"{url}","delay":"18446744073709551615s"}}"#),
            "",
            422,
            Some("delay"),
        ),
        (
            format!(r#"{{"url":"{url}","delay":"366days"}}"#),
            "",
            422,
            Some("delay"),
        ),
        (
            format!(r#"{{"url":"{url}","fire_at":"9999-12-31T23:59:59Z"}}"#),
            "",
            422,
            Some("fire_at"),
        ),
        (
            format!(r#"{{"url":"{url}","timeout":"300000y"}}"#),
            "",
            422,
            Some("timeout"),
        ),
        (
            format!(r#"{{"url":"{url}","retry":{{"max_duration":"300000y"}}}}"#),
            "",
            422,
            Some("retry.max_duration"),
        ),
        (
            format!(
                r#"{{"url":"{url}","retry":{{"backoff":"linear","interval":"1s","max_interval":"300000y"}}}}"#
            ),
            "",
            422,
            Some("retry.max_interval"),
        ),
        (
            format!(r#"{{"url":"{url}","retry":{{"schedule":["1s","300000y"]}}}}"#),
            "",
            422,
            Some("retry.schedule[1]"),
        ),
        (
            format!(r#"{{"url":"{url}","retry":{{"max_attempts":1e400}}}}"#),
            "",
            400,
            None,
        ),
        (format!(r#"{{"url":"{url}"}} xyz"#), "", 400, None),
        (
            format!(r#"{{"url":"{url}"}}{{"url":"{url}"}}"#),
            "",
            400,
            None,
        ),
        (deep, "", 400, None),
        ("\u{feff}{}".to_string(), "", 400, None),
        (
            format!(r#"{{"url":"{url}"}}"#),
            "Idempotency-Key: caf\u{e9}\r\n",
            422,
            Some("idempotency_key"),
        ),
    ];
    for (body, headers, want, field) in json_cases {
        let (status, answer) = raw(
            &server,
            &post(&server, headers, body.as_bytes()),
            body.as_bytes(),
        )
        .await;
        assert_eq!(status, want, "{} → {answer}", &body[..body.len().min(120)]);
        let problem: Problem = serde_json::from_str(&answer).expect("a problem body");
        assert_eq!(problem.status, want);
        assert_eq!(problem.field.as_deref(), field, "{answer}");
    }

    // Bytes that are not UTF-8, and odd framing: still an answer.
    let not_utf8: &[u8] = b"{\"url\":\"\xff\xfe\"}";
    let (status, _) = raw(&server, &post(&server, "", not_utf8), not_utf8).await;
    assert_eq!(status, 400);
    let (status, _) = raw(
        &server,
        &format!(
            "POST /v1/tasks HTTP/1.1\r\nAuthorization: Bearer {}\r\nContent-Length: 5\r\nContent-Length: 7\r\n",
            server.api_key
        ),
        b"{}",
    )
    .await;
    assert_eq!(status, 400, "conflicting lengths");
    let (status, _) = raw(
        &server,
        "POST /v1/tasks HTTP/1.1\r\nAuthorization: Bearer \u{1}\u{7f}\r\nContent-Length: 2\r\n",
        b"{}",
    )
    .await;
    assert!(
        (400..500).contains(&status),
        "control characters in a header: {status}"
    );

    // Paths and query strings that no parameter type can hold: a problem, never axum's
    // plain-text rejection.
    let key = &server.api_key;
    let long_key = format!("GET /v1/tasks?key={}", "k".repeat(256));
    let odd_targets = [
        ("GET /v1/tasks/%FF", 404, None),
        ("POST /v1/tasks/%FF%FE/release", 404, None),
        ("GET /v1/policies/%FF", 404, None),
        ("PUT /v1/policies/%FF", 422, Some("name")),
        ("GET /v1/tasks?status=failed&status=held", 400, None),
        ("DELETE /v1/tasks?key=a&key=b", 400, None),
        ("DELETE /v1/tasks?key=%00", 422, Some("key")),
        ("GET /v1/tasks?status=lost", 422, Some("status")),
        ("GET /v1/tasks?key=a%0Ab", 422, Some("key")),
        (&long_key, 422, Some("key")),
    ];
    for (target, want, field) in odd_targets {
        let head =
            format!("{target} HTTP/1.1\r\nAuthorization: Bearer {key}\r\nContent-Length: 2\r\n");
        let (status, answer) = raw(&server, &head, b"{}").await;
        assert_eq!(status, want, "{target} → {answer}");
        let problem: Problem = serde_json::from_str(&answer)
            .unwrap_or_else(|_| panic!("{target}: not a problem body: {answer}"));
        assert_eq!(problem.field.as_deref(), field, "{target} → {answer}");
    }

    let page = server
        .api()
        .list(&ListParams {
            limit: Some(100),
            ..ListParams::default()
        })
        .await
        .unwrap();
    assert!(page.tasks.is_empty(), "nothing was stored");
}

/// Settings out of range stop `serve` at start-up with an error naming the flag, instead of
/// a server that stalls (no delivery permits) or overflows later.
#[test]
fn out_of_range_settings_stop_serve_at_start_up() {
    let data_dir = std::env::temp_dir().join(format!("boomerang-flags-{}", std::process::id()));
    let cases = [
        (
            vec!["--sweep-interval", "0s"],
            "--sweep-interval must be between",
        ),
        (vec!["--concurrency", "0"], "--concurrency must be between"),
        (
            vec!["--lease-margin", "100000y"],
            "--lease-margin must be between",
        ),
        (vec!["--lease-margin", "584942417355y"], "--lease-margin"),
    ];
    for (flags, message) in cases {
        let out = std::process::Command::new(boomerang_e2e::binary())
            .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(&data_dir)
            .args(&flags)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} was accepted");
        assert!(stderr.contains(message), "{flags:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// A `--concurrency` the open-file limit cannot hold (2 files per delivery, and the
/// server's own) stops `serve` at start-up instead of running out of files under load.
#[test]
fn a_concurrency_the_open_file_limit_cannot_hold_stops_serve() {
    let data_dir = std::env::temp_dir().join(format!("boomerang-files-{}", std::process::id()));
    let serve = |concurrency: &str| {
        std::process::Command::new("prlimit")
            .args(["--nofile=1024:1024", "--"])
            .arg(boomerang_e2e::binary())
            .args(["serve", "--addr", "192.0.2.1:9", "--data-dir"])
            .arg(&data_dir)
            .args(["--concurrency", concurrency])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap()
    };
    let out = serve("1000");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--concurrency 1000 needs an open-file limit of at least 2144"),
        "{stderr}"
    );
    // One that fits goes on to bind (a documentation address, not this machine's: it
    // stops there instead).
    let out = serve("400");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("binding 192.0.2.1:9"), "{stderr}");
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// So does a `--max-connections` the limit cannot hold beside the deliveries.
#[test]
fn a_max_connections_the_open_file_limit_cannot_hold_stops_serve() {
    let data_dir = std::env::temp_dir().join(format!("boomerang-conns-{}", std::process::id()));
    let serve = |max_connections: &str| {
        std::process::Command::new("prlimit")
            .args(["--nofile=1024:1024", "--"])
            .arg(boomerang_e2e::binary())
            .args(["serve", "--addr", "192.0.2.1:9", "--data-dir"])
            .arg(&data_dir)
            .args(["--concurrency", "128", "--max-connections", max_connections])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap()
    };
    let out = serve("2000");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--max-connections 2000 needs an open-file limit of at least 2384"),
        "{stderr}"
    );
    let out = serve("640");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("binding 192.0.2.1:9"), "{stderr}");
    let _ = std::fs::remove_dir_all(&data_dir);
}
