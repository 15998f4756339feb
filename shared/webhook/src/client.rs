//! The one HTTP client that calls webhooks: signing, timeouts, no redirects, no proxy,
//! the SSRF guard, and connections bounded per destination ([`crate::connector`]).

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, RETRY_AFTER, USER_AGENT};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::connector::{GuardedResolver, RefusedAddress, SlotConnector};
use super::destination::DestinationPolicy;
use super::signing;
use boomerang_core::error_chain::error_chain;
use boomerang_core::ports::{WebhookCall, WebhookError, WebhookResult, Webhooks};

/// How much of a response body is kept in the attempt log.
pub const EXCERPT_BYTES: usize = 1024;
pub const HEADER_ATTEMPT: &str = "boomerang-attempt";
/// W3C Trace Context: the span a traced task's call is made in, and the vendors' state.
pub const HEADER_TRACEPARENT: &str = "traceparent";
pub const HEADER_TRACESTATE: &str = "tracestate";
const USER_AGENT_VALUE: &str = concat!("Boomerang/", env!("CARGO_PKG_VERSION"));
/// How long a connection's set-up (its name, its connect and its TLS handshake) may take
/// once it has its slot; the TCP connect is given this much too, shared among the
/// addresses tried.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an idle connection is kept for reuse.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Probes on idle connections, so a peer that vanished is noticed.
const TCP_KEEPALIVE: Duration = Duration::from_secs(15);

type Connector = SlotConnector<HttpsConnector<HttpConnector<GuardedResolver>>>;

pub struct HttpWebhooks {
    client: Client<Connector, Full<Bytes>>,
    policy: Arc<DestinationPolicy>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct ClientBuildError(String);

impl HttpWebhooks {
    /// Calls within `policy`, with at most `connections` connections to one destination
    /// (scheme, host and port), those being set up included; up to half of them are kept
    /// idle for reuse, closed after 30 s unused. HTTP/1.1; redirects are not followed, and
    /// no proxy is used (a proxy would resolve names itself, past the guard).
    pub fn new(policy: DestinationPolicy, connections: usize) -> Result<Self, ClientBuildError> {
        let policy = Arc::new(policy);
        let mut http = HttpConnector::new_with_resolver(GuardedResolver(policy.clone()));
        // `https://` URLs pass through to the TLS layer above.
        http.enforce_http(false);
        http.set_connect_timeout(Some(SETUP_TIMEOUT));
        http.set_keepalive(Some(TCP_KEEPALIVE));
        // Webhook calls are small requests that want their answer at once.
        http.set_nodelay(true);
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let https = HttpsConnectorBuilder::new()
            .with_provider_and_platform_verifier(provider)
            .map_err(|e| ClientBuildError(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            // Without a timer the pool never closes its idle connections.
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_max_idle_per_host(connections.div_ceil(2))
            .build(SlotConnector::new(https, connections, SETUP_TIMEOUT));
        Ok(Self { client, policy })
    }
}

#[async_trait]
impl Webhooks for HttpWebhooks {
    fn check_destination(&self, url: &str) -> Result<(), String> {
        self.policy.check_url(url).map(|_| ())
    }

    async fn send(&self, call: &WebhookCall<'_>) -> WebhookResult {
        let spec = call.spec;
        let request = match self.request(call) {
            Ok(request) => request,
            Err(why) => return failed(WebhookError::Refused(why)),
        };
        let want = spec.expect_body.as_ref().map(|b| b.len());
        // The call's timeout covers it all: the connect, the request and the body read.
        let answer = async {
            let response = self.client.request(request).await.map_err(Box::new)?;
            let status = response.status().as_u16();
            let retry_after = match status {
                429 | 503 => parse_retry_after(response.headers()),
                _ => None,
            };
            let read = read_prefix(response.into_body(), want).await?;
            Ok::<_, Box<dyn StdError + Send + Sync>>((status, retry_after, read))
        };
        let (status, retry_after, (body, complete)) =
            match tokio::time::timeout(spec.timeout, answer).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(e)) => return failed(classify(e.as_ref())),
                Err(_) => {
                    let after = spec.timeout.as_secs();
                    return failed(WebhookError::Transport(format!("timed out after {after}s")));
                }
            };
        let excerpt = &body[..body.len().min(EXCERPT_BYTES)];
        WebhookResult {
            status: Some(status),
            excerpt: Some(String::from_utf8_lossy(excerpt).into_owned()),
            body_matches: spec
                .expect_body
                .as_ref()
                .is_none_or(|e| complete && body == e.as_bytes()),
            retry_after,
            error: None,
        }
    }
}

impl HttpWebhooks {
    /// The signed request of `call`, or why it cannot be sent.
    fn request(&self, call: &WebhookCall<'_>) -> Result<Request<Full<Bytes>>, String> {
        let spec = call.spec;
        let url = self.policy.check_url(&spec.request.url)?;
        let uri: Uri = url
            .as_str()
            .parse()
            .map_err(|e: http::uri::InvalidUri| e.to_string())?;
        let method = Method::from_bytes(spec.request.method.as_bytes())
            .map_err(|_| "invalid method".to_string())?;
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header(USER_AGENT, USER_AGENT_VALUE)
            .header(ACCEPT, "*/*")
            .body(Full::new(Bytes::from(spec.request.body.clone())))
            .map_err(|e| e.to_string())?;
        request.headers_mut().extend(build_headers(call)?);
        Ok(request)
    }
}

fn build_headers(call: &WebhookCall<'_>) -> Result<HeaderMap, String> {
    let body = call.spec.request.body.as_bytes();
    let id = call.attempt.task_id.to_string();
    let ts = call.timestamp.timestamp();
    let mut headers = HeaderMap::new();
    for (name, value) in &call.spec.request.headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
        let value = HeaderValue::from_str(value).map_err(|e| e.to_string())?;
        headers.append(name, value);
    }
    let fixed = [
        (signing::HEADER_ID, id.clone()),
        (signing::HEADER_TIMESTAMP, ts.to_string()),
        (
            signing::HEADER_SIGNATURE,
            signing::sign_all(call.secrets, &id, ts, body),
        ),
        (HEADER_ATTEMPT, call.attempt.attempt.number().to_string()),
    ];
    for (name, value) in fixed {
        let value = HeaderValue::from_str(&value).map_err(|e| e.to_string())?;
        headers.insert(HeaderName::from_static(name), value);
    }
    // A traced task's call names the attempt's span as the receiver's parent; the task's
    // own `traceparent` header, if it set one, gives way.
    if let Some(parent) = call.parent {
        let traceparent = HeaderValue::from_str(&parent.header()).map_err(|e| e.to_string())?;
        headers.insert(HeaderName::from_static(HEADER_TRACEPARENT), traceparent);
        headers.remove(HEADER_TRACESTATE);
        if let Some(state) = &parent.state {
            let state = HeaderValue::from_str(state).map_err(|e| e.to_string())?;
            headers.insert(HeaderName::from_static(HEADER_TRACESTATE), state);
        }
    }
    Ok(headers)
}

/// Reads enough of the body for the excerpt and an `expect_body` comparison, and no more.
/// Returns the bytes and whether they are the whole body.
async fn read_prefix(
    mut body: Incoming,
    expect_len: Option<usize>,
) -> Result<(Vec<u8>, bool), hyper::Error> {
    let limit = EXCERPT_BYTES.max(expect_len.map_or(0, |n| n + 1));
    let mut read = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(chunk) = frame?.into_data() else {
            continue; // trailers
        };
        read.extend_from_slice(&chunk);
        if read.len() > limit {
            read.truncate(limit);
            return Ok((read, false));
        }
    }
    Ok((read, true))
}

/// `Retry-After` as delay-seconds or an HTTP date.
fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let raw = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = raw.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(raw).ok()?;
    (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .ok()
}

fn failed(error: WebhookError) -> WebhookResult {
    WebhookResult {
        error: Some(error),
        ..WebhookResult::default()
    }
}

fn classify(e: &(dyn StdError + 'static)) -> WebhookError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(refused) = err.downcast_ref::<RefusedAddress>() {
            return WebhookError::Refused(refused.0.clone());
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if is_local_exhaustion(io) {
                return WebhookError::Local(short_chain(e));
            }
        }
        source = err.source();
    }
    WebhookError::Transport(short_chain(e))
}

/// The error and its causes, at most 500 characters: it is kept with the attempt.
fn short_chain(e: &dyn StdError) -> String {
    error_chain(e).chars().take(500).collect()
}

/// Whether an I/O error says this machine ran out of something before a request could
/// leave it (open files, local ports, buffers, memory), rather than anything about the
/// receiver.
fn is_local_exhaustion(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL | libc::ENOBUFS | libc::ENOMEM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_out_of_files_or_ports_is_local_and_a_refused_connection_is_not() {
        for local in [
            libc::EMFILE,
            libc::ENFILE,
            libc::EADDRNOTAVAIL,
            libc::ENOBUFS,
        ] {
            let e = std::io::Error::from_raw_os_error(local);
            assert!(is_local_exhaustion(&e), "{e}");
        }
        for remote in [libc::ECONNREFUSED, libc::ECONNRESET, libc::EHOSTUNREACH] {
            let e = std::io::Error::from_raw_os_error(remote);
            assert!(!is_local_exhaustion(&e), "{e}");
        }
    }
}
