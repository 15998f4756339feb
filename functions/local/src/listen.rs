//! `boomerang listen`: a tiny receiver that verifies each delivery's signature and prints it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use boomerang_core::domain::SigningSecret;
use boomerang_webhook::client::HEADER_ATTEMPT;
use boomerang_webhook::signing;

/// What signatures are checked with.
pub enum VerifyWith {
    Nothing,
    /// One secret, given.
    Secret(SigningSecret),
    /// The secrets in force that `serve` keeps in this data directory, read again for each
    /// delivery, so a rotation is followed without a restart.
    DataDir(PathBuf),
}

impl VerifyWith {
    /// The secrets to verify with (`None`: signatures are not checked). A data directory
    /// whose secrets cannot be read gives none, so nothing verifies: a receiver never
    /// accepts unchecked what it was told to check.
    fn secrets(&self) -> Option<Vec<SigningSecret>> {
        match self {
            VerifyWith::Nothing => None,
            VerifyWith::Secret(secret) => Some(vec![secret.clone()]),
            VerifyWith::DataDir(dir) => {
                let kept = boomerang_embedded::tenants::credentials::stored_secrets(dir);
                let secrets = kept.ok().flatten();
                Some(secrets.map_or_else(Vec::new, |s| s.signing(chrono::Utc::now())))
            }
        }
    }
}

pub struct ListenConfig {
    pub port: u16,
    pub verify: VerifyWith,
    /// The status to answer with (e.g. 500 to watch retries happen).
    pub status: StatusCode,
}

pub async fn run(config: ListenConfig) -> Result<()> {
    let addr = SocketAddr::from(([127, 0, 0, 1], config.port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    println!("Listening for callbacks on http://{local}/ (any path)");
    match &config.verify {
        VerifyWith::Nothing => println!("No signing secret: signatures are not verified."),
        _ => println!("Verifying Standard Webhooks signatures."),
    }
    let config = Arc::new(config);
    let app = axum::Router::new().fallback(move |method, uri, headers, body| {
        let config = config.clone();
        async move { receive(&config, method, uri, headers, body) }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

fn receive(
    config: &ListenConfig,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let id = header(signing::HEADER_ID);
    // Valid if any secret in force verifies it (during a rotation, either does).
    let verdict = config.verify.secrets().map(|secrets| {
        let check = |secret: &SigningSecret| {
            signing::verify(
                secret,
                &id,
                &header(signing::HEADER_TIMESTAMP),
                &header(signing::HEADER_SIGNATURE),
                &body,
                chrono::Utc::now().timestamp(),
            )
        };
        let verdicts: Vec<_> = secrets.iter().map(check).collect();
        match verdicts.iter().any(Result::is_ok) {
            true => Ok(()),
            // Reported as the newest secret saw it.
            false => (verdicts.into_iter().next()).unwrap_or(Err(signing::VerifyError::Mismatch)),
        }
    });
    let signature = match &verdict {
        None => "not checked".to_string(),
        Some(Ok(())) => "valid".to_string(),
        Some(Err(e)) => format!("INVALID ({e})"),
    };
    println!(
        "[{}] {method} {uri}  task={id} attempt={} signature={signature}\n{}",
        chrono::Utc::now().format("%H:%M:%S%.3f"),
        header(HEADER_ATTEMPT),
        String::from_utf8_lossy(&body)
    );
    match verdict {
        Some(Err(_)) => (StatusCode::UNAUTHORIZED, "invalid signature"),
        _ => (config.status, "success"),
    }
}
