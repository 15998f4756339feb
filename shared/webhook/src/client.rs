//! The one HTTP client that calls webhooks: signing, timeouts, no redirects, SSRF guard.

use std::error::Error as StdError;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

use super::destination::DestinationPolicy;
use super::signing;
use boomerang_core::engine::DEFAULT_PER_DESTINATION;
use boomerang_core::ports::{WebhookCall, WebhookError, WebhookResult, Webhooks};

/// How much of a response body is kept in the attempt log.
pub const EXCERPT_BYTES: usize = 1024;
pub const HEADER_ATTEMPT: &str = "boomerang-attempt";

pub struct HttpWebhooks {
    client: reqwest::Client,
    policy: Arc<DestinationPolicy>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct ClientBuildError(String);

impl HttpWebhooks {
    pub fn new(policy: DestinationPolicy) -> Result<Self, ClientBuildError> {
        let policy = Arc::new(policy);
        let client = reqwest::Client::builder()
            .user_agent(concat!("Boomerang/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve names itself, past the guard below.
            .no_proxy()
            // Attempts are counted and logged by the engine; no hidden re-sends here.
            .retry(reqwest::retry::never())
            .connect_timeout(Duration::from_secs(10))
            // The engine bounds the calls in flight to one destination; idle connections
            // are reused up to that bound, and closed after a while unused.
            .pool_max_idle_per_host(DEFAULT_PER_DESTINATION)
            .pool_idle_timeout(Duration::from_secs(30))
            .dns_resolver(Arc::new(GuardedResolver(policy.clone())))
            .build()
            .map_err(|e| ClientBuildError(e.to_string()))?;
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
        let url = match self.policy.check_url(&spec.request.url) {
            Ok(url) => url,
            Err(why) => return failed(WebhookError::Refused(why)),
        };
        let headers = match build_headers(call) {
            Ok(h) => h,
            Err(why) => return failed(WebhookError::Refused(why)),
        };
        let method = match reqwest::Method::from_bytes(spec.request.method.as_bytes()) {
            Ok(m) => m,
            Err(_) => return failed(WebhookError::Refused("invalid method".into())),
        };
        let request = self
            .client
            .request(method, url)
            .timeout(spec.timeout)
            .headers(headers)
            .body(spec.request.body.clone());
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return failed(classify(&e, spec.timeout)),
        };
        let status = response.status().as_u16();
        let retry_after = match status {
            429 | 503 => parse_retry_after(response.headers()),
            _ => None,
        };
        let want = spec.expect_body.as_ref().map(|b| b.len());
        let (body, complete) = match read_prefix(response, want).await {
            Ok(read) => read,
            Err(e) => return failed(classify(&e, spec.timeout)),
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
            signing::sign(call.secret, &id, ts, body),
        ),
        (HEADER_ATTEMPT, call.attempt.attempt.number().to_string()),
    ];
    for (name, value) in fixed {
        let value = HeaderValue::from_str(&value).map_err(|e| e.to_string())?;
        headers.insert(HeaderName::from_static(name), value);
    }
    Ok(headers)
}

/// Reads enough of the body for the excerpt and an `expect_body` comparison, and no more.
/// Returns the bytes and whether they are the whole body.
async fn read_prefix(
    mut response: reqwest::Response,
    expect_len: Option<usize>,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let limit = EXCERPT_BYTES.max(expect_len.map_or(0, |n| n + 1));
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > limit {
            body.truncate(limit);
            return Ok((body, false));
        }
    }
    Ok((body, true))
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

fn classify(e: &reqwest::Error, timeout: Duration) -> WebhookError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(refused) = err.downcast_ref::<RefusedAddress>() {
            return WebhookError::Refused(refused.0.clone());
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if is_local_exhaustion(io) {
                return WebhookError::Local(error_chain(e));
            }
        }
        source = err.source();
    }
    if e.is_timeout() {
        return WebhookError::Transport(format!("timed out after {}s", timeout.as_secs()));
    }
    WebhookError::Transport(error_chain(e))
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

/// "outer: cause: root cause", since reqwest's own message hides the interesting part.
fn error_chain(e: &dyn StdError) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(err) = source {
        let s = err.to_string();
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        source = err.source();
    }
    text.chars().take(500).collect()
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RefusedAddress(String);

/// Resolves names, then drops every address the policy refuses; if none is left the call
/// fails with [`RefusedAddress`]. The connection only ever uses the checked addresses.
struct GuardedResolver(Arc<DestinationPolicy>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refusals = Vec::new();
            let allowed: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|a| match policy.check_ip(a.ip()) {
                    Ok(()) => true,
                    Err(why) => {
                        refusals.push(why);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let why = refusals
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "no addresses".into());
                return Err(
                    Box::new(RefusedAddress(format!("{host} resolves to {why}")))
                        as Box<dyn StdError + Send + Sync>,
                );
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
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
