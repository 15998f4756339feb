//! The CLI's HTTP client: one request, its answer as JSON, and the three ways it can go
//! wrong that the exit codes tell apart.

use std::path::Path;
use std::time::Duration;

use reqwest::{Method, Url};
use serde_json::Value;

/// Why a command did not get its answer.
#[derive(Debug)]
pub enum ApiError {
    /// The API answered with a problem.
    Refused {
        status: u16,
        detail: String,
    },
    /// No answer: refused connection, unknown host, timeout.
    Unreachable(String),
    /// A flag's value cannot make a request (say, a header without a colon).
    Usage(String),
    Other(anyhow::Error),
}

pub struct Api {
    base: Url,
    key: String,
    http: reqwest::Client,
}

impl Api {
    /// The API at `url`, with `api_key`, or else the key the local server keeps in
    /// `data_dir`. Refuses (with what to do about it) a bad URL or no key at all.
    pub fn connect(url: &str, api_key: Option<String>, data_dir: &Path) -> Result<Api, String> {
        let base = Url::parse(url).map_err(|e| format!("--url {url}: {e}"))?;
        let key = match api_key {
            Some(key) => key,
            None => boomerang_embedded::tenants::credentials::stored_api_key(data_dir)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!(
                        "no API key: pass --api-key (or BOOMERANG_API_KEY), or --data-dir of \
                         the local server ({} has none)",
                        data_dir.display()
                    )
                })?,
        };
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Api { base, key, http })
    }

    pub async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, ApiError> {
        self.call(Method::GET, path, query).await
    }

    pub async fn post(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, ApiError> {
        self.call(Method::POST, path, query).await
    }

    /// A request without a body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<Value, ApiError> {
        self.send(method, path, query, None, None).await
    }

    /// `POST /v1/tasks`.
    pub async fn create(
        &self,
        task: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<Value, ApiError> {
        self.send(Method::POST, "/v1/tasks", &[], Some(task), idempotency_key)
            .await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Value, ApiError> {
        let mut url = self
            .base
            .join(path)
            .map_err(|e| ApiError::Other(e.into()))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let mut request = self.http.request(method, url).bearer_auth(&self.key);
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let response = request.send().await.map_err(unreachable_or_other)?;
        let status = response.status();
        let text = response.text().await.map_err(unreachable_or_other)?;
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if status.is_success() {
            return Ok(value);
        }
        let detail = value["detail"]
            .as_str()
            .or_else(|| value.as_str())
            .unwrap_or("no detail")
            .to_string();
        Err(ApiError::Refused {
            status: status.as_u16(),
            detail,
        })
    }
}

fn unreachable_or_other(e: reqwest::Error) -> ApiError {
    if e.is_connect() || e.is_timeout() || e.is_request() {
        // The error and its causes: "error sending request…: … Connection refused".
        let mut why = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            why = format!("{why}: {cause}");
            source = cause.source();
        }
        ApiError::Unreachable(why)
    } else {
        ApiError::Other(e.into())
    }
}
