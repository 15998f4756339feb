//! `boomerang listen`: a tiny receiver that verifies each delivery's signature and prints it.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use boomerang_core::domain::SigningSecret;
use boomerang_webhook::client::HEADER_ATTEMPT;
use boomerang_webhook::signing;

pub struct ListenConfig {
    pub port: u16,
    pub secret: Option<SigningSecret>,
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
    match &config.secret {
        Some(_) => println!("Verifying Standard Webhooks signatures."),
        None => println!("No signing secret: signatures are not verified."),
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
    let verdict = config.secret.as_ref().map(|secret| {
        signing::verify(
            secret,
            &id,
            &header(signing::HEADER_TIMESTAMP),
            &header(signing::HEADER_SIGNATURE),
            &body,
            chrono::Utc::now().timestamp(),
        )
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
