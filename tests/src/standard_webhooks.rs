//! Deliveries checked with the stock Python `standardwebhooks` library (in the emulators'
//! virtualenv, which `scripts/emulators.sh` names in `BOOMERANG_TEST_PYTHON`), as a
//! receiver written against it would check them.

use std::io::Write;
use std::process::{Command, Stdio};

use boomerang_core::domain::SigningSecret;

use super::receiver::Received;

/// For each delivery, for each of `secrets`: whether `Webhook(secret).verify` accepts it.
pub fn verified_by(secrets: &[&SigningSecret], deliveries: &[Received]) -> Vec<Vec<bool>> {
    let python = std::env::var("BOOMERANG_TEST_PYTHON")
        .expect("BOOMERANG_TEST_PYTHON: run the tests under scripts/emulators.sh");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/verify/standard_webhooks.py");
    let deliveries: Vec<serde_json::Value> = (deliveries.iter())
        .map(|r| {
            let headers: serde_json::Map<String, serde_json::Value> = (r.headers.iter())
                .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.into())))
                .collect();
            let body = String::from_utf8(r.body.to_vec()).expect("a text body");
            serde_json::json!({ "headers": headers, "body": body })
        })
        .collect();
    let secrets: Vec<String> = secrets.iter().map(|s| s.expose()).collect();
    let input = serde_json::json!({ "secrets": secrets, "deliveries": deliveries });
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the verifier starts");
    let mut stdin = child.stdin.take().expect("its stdin");
    stdin.write_all(input.to_string().as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().expect("the verifier ends");
    assert!(out.status.success(), "the verifier failed");
    serde_json::from_slice(&out.stdout).expect("a list per delivery")
}
