//! The HTTP under the client: hyper's client over rustls (the platform's roots), one
//! deadline per call. The API needs no more than a method, a URL, a few headers, a JSON
//! body and the answer's status and text, so the client carries no more than that (and
//! none of a server's layers): it follows no redirect and uses no proxy from the
//! environment; the API's URL is the one to call.

use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use url::Url;

use boomerang_core::error_chain::error_chain;

/// Why a call got no answer, or no whole one.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The platform's certificate roots could not be loaded.
    #[error("TLS setup")]
    Tls(#[source] std::io::Error),
    /// The request could not be made (a header that is not a header value).
    #[error("cannot build the request")]
    Request(#[from] http::Error),
    /// No connection (refused, unknown host), or one that failed before the answer.
    #[error("request failed")]
    Send(#[source] hyper_util::client::legacy::Error),
    /// The request may have been acted on: the answer did not come in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The answer was cut short while it was read.
    #[error("reading the answer")]
    Read(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl TransportError {
    /// Whether the API was never reached: no connection was made, so nothing was sent.
    /// Any other failure may have come after the request was acted on.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Send(e) if e.is_connect())
    }

    /// The error and its causes, as one line.
    pub fn explain(&self) -> String {
        error_chain(self)
    }
}

/// The largest answer read: far beyond any page the API sends.
const MAX_ANSWER: usize = 16 << 20;

/// One request to the API.
pub struct Call {
    method: Method,
    url: Url,
    bearer: String,
    headers: Vec<(HeaderName, String)>,
    /// A JSON body, if any.
    json: Option<Vec<u8>>,
}

impl Call {
    /// `method` on `url`, with `bearer` as its key.
    pub fn new(method: Method, url: Url, bearer: &str) -> Self {
        Self {
            method,
            url,
            bearer: bearer.to_string(),
            headers: Vec::new(),
            json: None,
        }
    }

    pub fn header(mut self, name: HeaderName, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }

    pub fn json<T: serde::Serialize + ?Sized>(mut self, body: &T) -> serde_json::Result<Self> {
        self.json = Some(serde_json::to_vec(body)?);
        Ok(self)
    }
}

#[derive(Clone)]
pub struct Transport {
    http: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
}

impl Transport {
    /// Plain HTTP or HTTPS (a deployed API is behind HTTPS), each call given `timeout` to
    /// answer in full.
    pub fn new(timeout: Duration) -> Result<Self, TransportError> {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let https = HttpsConnectorBuilder::new()
            .with_provider_and_platform_verifier(provider)
            .map_err(TransportError::Tls)?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            http: HyperClient::builder(TokioExecutor::new()).build(https),
            timeout,
        })
    }

    /// Sends `call`; the answer's status and body as text.
    pub async fn send(&self, call: Call) -> Result<(u16, String), TransportError> {
        let request = request(call)?;
        let exchange = async {
            let response = (self.http.request(request).await).map_err(TransportError::Send)?;
            let status = response.status().as_u16();
            let limited = http_body_util::Limited::new(response.into_body(), MAX_ANSWER);
            let body = (limited.collect().await).map_err(TransportError::Read)?;
            Ok((
                status,
                String::from_utf8_lossy(&body.to_bytes()).into_owned(),
            ))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| TransportError::Timeout(self.timeout))?
    }
}

fn request(call: Call) -> Result<Request<Full<Bytes>>, TransportError> {
    let mut builder = Request::builder()
        .method(call.method)
        .uri(call.url.as_str())
        .header(AUTHORIZATION, format!("Bearer {}", call.bearer));
    for (name, value) in call.headers {
        builder = builder.header(name, value);
    }
    let body = match call.json {
        Some(json) => {
            builder = builder.header(CONTENT_TYPE, "application/json");
            Full::new(Bytes::from(json))
        }
        None => Full::new(Bytes::new()),
    };
    Ok(builder.body(body)?)
}
