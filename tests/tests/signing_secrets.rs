//! End-to-end: a signing-secret rotation without downtime, through the API of the real
//! `boomerang serve`, on both backends. Deliveries are checked with the stock Python
//! `standardwebhooks` library: during the overlap a receiver that knows only the old
//! secret and one that knows only the new both accept every delivery; after the old one is
//! retired, only the new one does. Bad requests are refused naming the field; a secret set
//! by `--signing-secret` cannot be rotated; rotated secrets outlive a restart.

use std::time::Duration;

use boomerang_api::request::{DurationText, RotationRequest};
use boomerang_api::view::SigningSecretsView;
use boomerang_core::domain::{SecretId, SigningSecret};
use boomerang_e2e::standard_webhooks::verified_by;
use boomerang_e2e::{
    callback, on_every_backend, wait_for, Backend, Receiver, Server, ServerOptions,
};
use reqwest::Method;
use serde_json::json;

on_every_backend!(during_a_rotation_either_secret_verifies_and_after_retirement_only_the_new);

const WAIT: Duration = Duration::from_secs(60);
/// Tasks registered in each phase.
const EACH: usize = 4;

/// Registers `EACH` tasks under `/{phase}/…` and waits until they were all delivered.
async fn deliver_phase(server: &Server, rx: &Receiver, phase: &str) {
    for i in 0..EACH {
        let task = callback(rx.url(&format!("/{phase}/{i}")));
        server.api().create(&task, None).await.unwrap();
    }
    let prefix = format!("/{phase}/");
    wait_for(&format!("the {phase} deliveries"), WAIT, || async {
        let n = (rx.received().iter())
            .filter(|r| r.path.starts_with(&prefix))
            .count();
        (n >= EACH).then_some(())
    })
    .await;
}

/// For each delivery of `phase`: whether the old secret, and the new, verify it.
fn verdicts(
    rx: &Receiver,
    phase: &str,
    old: &SigningSecret,
    new: &SigningSecret,
) -> Vec<Vec<bool>> {
    let prefix = format!("/{phase}/");
    let deliveries: Vec<_> = (rx.received().into_iter())
        .filter(|r| r.path.starts_with(&prefix))
        .collect();
    verified_by(&[old, new], &deliveries)
}

fn secret(view: &SigningSecretsView, i: usize) -> SigningSecret {
    SigningSecret::parse(&view.secrets[i].secret).unwrap()
}

async fn during_a_rotation_either_secret_verifies_and_after_retirement_only_the_new(
    backend: Backend,
) {
    let rx = Receiver::always(200).await;
    let mut server = Server::start(ServerOptions {
        generated_credentials: true,
        ..ServerOptions::on(backend)
    });
    let old = server.secret.clone();
    let before = server.api().signing_secrets().await.unwrap();
    assert_eq!(before.secrets.len(), 1);
    assert_eq!(secret(&before, 0), old);
    deliver_phase(&server, &rx, "before").await;

    let rotation = RotationRequest {
        grace_period: Some(DurationText::from(Duration::from_secs(3600))),
    };
    let rotated = server.api().rotate_signing_secret(&rotation).await.unwrap();
    assert_eq!(rotated.secrets.len(), 2, "{rotated:?}");
    let new = secret(&rotated, 0);
    assert_eq!(secret(&rotated, 1), old);
    assert!(rotated.secrets[0].expires_at.is_none());
    assert!(rotated.secrets[1].expires_at.is_some());
    deliver_phase(&server, &rx, "overlap").await;

    // Bad requests, and retiring the only secret, are refused naming the field.
    let path = "/v1/signing-secrets";
    server
        .refuses_naming(
            Method::POST,
            path,
            &[
                (json!({"grace_period": "31days"}), "grace_period"),
                (json!({"grace_period": "soon"}), "grace_period"),
                (json!({"grace": "1h"}), "grace"),
            ],
        )
        .await;
    let (status, problem) = server
        .send_raw(
            Method::DELETE,
            "/v1/signing-secrets/not-an-id",
            &json!(null),
        )
        .await;
    assert_eq!(status, 404, "{problem:?}");

    let old_id = SecretId::of(&old);
    let retired = server.api().retire_signing_secret(&old_id).await.unwrap();
    assert_eq!(retired.secrets.len(), 1);
    assert_eq!(secret(&retired, 0), new);
    let (status, problem) = server
        .send_raw(
            Method::DELETE,
            &format!("{path}/{}", SecretId::of(&new)),
            &json!(null),
        )
        .await;
    assert_eq!(status, 422, "{problem:?}");
    assert_eq!(problem.unwrap().field.as_deref(), Some("id"));
    deliver_phase(&server, &rx, "after").await;

    let all = |verdict: Vec<bool>| vec![verdict; EACH];
    assert_eq!(verdicts(&rx, "before", &old, &new), all(vec![true, false]));
    assert_eq!(verdicts(&rx, "overlap", &old, &new), all(vec![true, true]));
    assert_eq!(verdicts(&rx, "after", &old, &new), all(vec![false, true]));

    // The secrets in force are kept where the backend keeps them.
    server.kill9_and_restart();
    let kept = server.api().signing_secrets().await.unwrap();
    assert_eq!(kept, retired);
}

/// A secret the operator set with `--signing-secret` is the only one, and stays.
#[tokio::test]
async fn a_secret_given_by_flag_cannot_be_rotated() {
    let server = Server::start(ServerOptions::on(Backend::Embedded));
    let (status, problem) = server
        .send_raw(Method::POST, "/v1/signing-secrets", &json!({}))
        .await;
    assert_eq!(status, 409, "{problem:?}");
    let secrets = server.api().signing_secrets().await.unwrap();
    assert_eq!(secrets.secrets.len(), 1);
    assert_eq!(secret(&secrets, 0), server.secret);
}
