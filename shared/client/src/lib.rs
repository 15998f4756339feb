#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod transport;

use std::time::Duration;

use boomerang_api::request::{
    BatchRequest, BreakerSettingsRequest, BulkRequest, DestinationRequest, PolicyRequest,
    RotationRequest, ScheduleFields, TaskRequest, TemplateRequest,
};
use boomerang_api::view::{
    BatchView, BreakerSettingsView, BreakerView, BreakersView, BulkJobView, BulkJobsView,
    BulkPreviewView, FlowStateView, FlowsView, Health, KeyCancelView, KeyReleaseView, OrderKeyView,
    OrderKeysView, PageView, PoliciesView, PolicyView, ScheduleListView, ScheduleView,
    SigningSecretsView, StatsView, TaskView, TemplateView, TemplatesView,
};
use boomerang_api::Problem;
use boomerang_core::domain::{BulkJobId, BusinessKey, ScheduleId, SecretId, Status, TaskId};
use http::header::HeaderName;
use http::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use url::Url;

pub use transport::TransportError;
use transport::{Call, Transport};

/// Why a call did not get its answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The API answered with a problem.
    #[error("{status}: {}", .problem.detail)]
    Refused {
        /// The answer's HTTP status.
        status: u16,
        /// The problem body: its `detail`, and the `field` it names when a field was bad.
        problem: Problem,
    },
    /// No connection to the API (refused, unknown host): nothing was sent.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// An answer that is not what the API documents.
    #[error("unexpected answer ({status}): {body}")]
    Unexpected {
        /// The answer's HTTP status.
        status: u16,
        /// The answer's body, as text.
        body: String,
    },
    /// The API's base URL, or a path made from an argument, is not a URL.
    #[error("bad URL: {0}")]
    Url(String),
    /// The request could not be written as JSON.
    #[error("cannot encode the request: {0}")]
    Encode(#[from] serde_json::Error),
    /// No whole answer once connected (a timeout, a connection cut short): the request
    /// may have been acted on, so a registration is retried under its idempotency key.
    #[error("{}", .0.explain())]
    Http(TransportError),
}

impl ClientError {
    /// The problem the API answered with, if it answered with one.
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            Self::Refused { problem, .. } => Some(problem),
            _ => None,
        }
    }

    /// The HTTP status of the answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Refused { status, .. } | Self::Unexpected { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// An answer and its HTTP status (a registration answers 201 when it created the task,
/// 200 when an idempotency key returned an earlier one).
#[derive(Debug)]
pub struct Answer<T> {
    /// The HTTP status.
    pub status: u16,
    /// The answer's body, read as its view type.
    pub body: T,
}

/// Which tasks a list asks for (`GET /v1/tasks`).
#[derive(Debug, Default, Clone)]
pub struct ListParams {
    /// Only tasks in this state.
    pub status: Option<Status>,
    /// Only tasks with this business key.
    pub key: Option<BusinessKey>,
    /// At most this many to a page (the API's default without it).
    pub limit: Option<u32>,
    /// The page after the one that answered this `next_cursor`.
    pub cursor: Option<String>,
}

/// The API at one base URL, called with one API key. Cloning is cheap: clones share the
/// connection pool.
#[derive(Clone)]
pub struct Client {
    base: Url,
    api_key: String,
    http: Transport,
}

impl Client {
    /// The API at `base` (`http://127.0.0.1:8080`), called with `api_key`.
    pub fn new(base: &str, api_key: impl Into<String>) -> Result<Self, ClientError> {
        let base = Url::parse(base).map_err(|e| ClientError::Url(format!("{base}: {e}")))?;
        let http = Transport::new(Duration::from_secs(30)).map_err(ClientError::Http)?;
        Ok(Self {
            base,
            api_key: api_key.into(),
            http,
        })
    }

    /// The same client for the API at another `base`.
    pub fn at(&self, base: &str) -> Result<Self, ClientError> {
        let base = Url::parse(base).map_err(|e| ClientError::Url(format!("{base}: {e}")))?;
        Ok(Self {
            base,
            ..self.clone()
        })
    }

    /// The same API with another key.
    pub fn with_key(&self, api_key: impl Into<String>) -> Self {
        Self {
            api_key: api_key.into(),
            ..self.clone()
        }
    }

    /// `POST /v1/tasks`, with an `Idempotency-Key` header if given.
    pub async fn create(
        &self,
        task: &TaskRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Answer<TaskView>, ClientError> {
        let mut request = self.request(Method::POST, "/v1/tasks", &[])?.json(task)?;
        if let Some(key) = idempotency_key {
            request = request.header(HeaderName::from_static("idempotency-key"), key);
        }
        self.answer(request).await
    }

    /// `POST /v1/tasks/batch`.
    pub async fn create_batch(&self, batch: &BatchRequest) -> Result<BatchView, ClientError> {
        self.send(Method::POST, "/v1/tasks/batch", &[], Some(batch))
            .await
    }

    /// `GET /v1/tasks/{id}`: the task and its attempts.
    pub async fn get(&self, id: &TaskId) -> Result<TaskView, ClientError> {
        self.send(Method::GET, &format!("/v1/tasks/{id}"), &[], None::<&()>)
            .await
    }

    /// `GET /v1/tasks`: one page, newest first.
    pub async fn list(&self, params: &ListParams) -> Result<PageView, ClientError> {
        let limit = params.limit.map(|l| l.to_string());
        let query: Vec<(&str, &str)> = [
            ("status", params.status.map(Status::as_str)),
            ("key", params.key.as_ref().map(BusinessKey::as_str)),
            ("limit", limit.as_deref()),
            ("cursor", params.cursor.as_deref()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
        self.send(Method::GET, "/v1/tasks", &query, None::<&()>)
            .await
    }

    /// `DELETE /v1/tasks/{id}`.
    pub async fn cancel(&self, id: &TaskId) -> Result<TaskView, ClientError> {
        self.send(Method::DELETE, &format!("/v1/tasks/{id}"), &[], None::<&()>)
            .await
    }

    /// `DELETE /v1/tasks?key=…`.
    pub async fn cancel_by_key(&self, key: &str) -> Result<KeyCancelView, ClientError> {
        self.send(Method::DELETE, "/v1/tasks", &[("key", key)], None::<&()>)
            .await
    }

    /// `POST /v1/tasks/{id}/retry`.
    pub async fn retry(&self, id: &TaskId) -> Result<TaskView, ClientError> {
        self.send(
            Method::POST,
            &format!("/v1/tasks/{id}/retry"),
            &[],
            None::<&()>,
        )
        .await
    }

    /// `POST /v1/tasks/{id}/release`.
    pub async fn release(&self, id: &TaskId) -> Result<TaskView, ClientError> {
        self.send(
            Method::POST,
            &format!("/v1/tasks/{id}/release"),
            &[],
            None::<&()>,
        )
        .await
    }

    /// `POST /v1/tasks/release?key=…`.
    pub async fn release_by_key(&self, key: &str) -> Result<KeyReleaseView, ClientError> {
        self.send(
            Method::POST,
            "/v1/tasks/release",
            &[("key", key)],
            None::<&()>,
        )
        .await
    }

    /// `PUT /v1/policies/{name}`.
    pub async fn put_policy(
        &self,
        name: &str,
        policy: &PolicyRequest,
    ) -> Result<PolicyView, ClientError> {
        self.send(
            Method::PUT,
            &format!("/v1/policies/{name}"),
            &[],
            Some(policy),
        )
        .await
    }

    /// `GET /v1/policies/{name}`.
    pub async fn policy(&self, name: &str) -> Result<PolicyView, ClientError> {
        self.send(
            Method::GET,
            &format!("/v1/policies/{name}"),
            &[],
            None::<&()>,
        )
        .await
    }

    /// `GET /v1/policies`.
    pub async fn policies(&self) -> Result<PoliciesView, ClientError> {
        self.send(Method::GET, "/v1/policies", &[], None::<&()>)
            .await
    }

    /// `DELETE /v1/policies/{name}` (204, no body).
    pub async fn delete_policy(&self, name: &str) -> Result<(), ClientError> {
        let request = self.request(Method::DELETE, &format!("/v1/policies/{name}"), &[])?;
        self.body(request).await.map(|_| ())
    }

    /// `PUT /v1/templates/{name}`.
    pub async fn put_template(
        &self,
        name: &str,
        template: &TemplateRequest,
    ) -> Result<TemplateView, ClientError> {
        let path = format!("/v1/templates/{name}");
        self.send(Method::PUT, &path, &[], Some(template)).await
    }

    /// `GET /v1/templates/{name}`.
    pub async fn template(&self, name: &str) -> Result<TemplateView, ClientError> {
        let path = format!("/v1/templates/{name}");
        self.send(Method::GET, &path, &[], None::<&()>).await
    }

    /// `GET /v1/templates`.
    pub async fn templates(&self) -> Result<TemplatesView, ClientError> {
        self.send(Method::GET, "/v1/templates", &[], None::<&()>)
            .await
    }

    /// `DELETE /v1/templates/{name}` (204, no body).
    pub async fn delete_template(&self, name: &str) -> Result<(), ClientError> {
        let request = self.request(Method::DELETE, &format!("/v1/templates/{name}"), &[])?;
        self.body(request).await.map(|_| ())
    }

    /// `POST /v1/tasks/bulk` with `dry_run`: what the action would do.
    pub async fn preview_bulk(&self, bulk: &BulkRequest) -> Result<BulkPreviewView, ClientError> {
        let bulk = BulkRequest {
            dry_run: true,
            ..bulk.clone()
        };
        self.send(Method::POST, "/v1/tasks/bulk", &[], Some(&bulk))
            .await
    }

    /// `POST /v1/tasks/bulk`: starts the action as a job.
    pub async fn start_bulk(&self, bulk: &BulkRequest) -> Result<BulkJobView, ClientError> {
        let bulk = BulkRequest {
            dry_run: false,
            ..bulk.clone()
        };
        self.send(Method::POST, "/v1/tasks/bulk", &[], Some(&bulk))
            .await
    }

    /// `GET /v1/bulk-jobs/{id}`.
    pub async fn bulk_job(&self, id: &BulkJobId) -> Result<BulkJobView, ClientError> {
        let path = format!("/v1/bulk-jobs/{id}");
        self.send(Method::GET, &path, &[], None::<&()>).await
    }

    /// `GET /v1/bulk-jobs`.
    pub async fn bulk_jobs(&self) -> Result<BulkJobsView, ClientError> {
        self.send(Method::GET, "/v1/bulk-jobs", &[], None::<&()>)
            .await
    }

    /// `GET /v1/breakers`.
    pub async fn breakers(&self) -> Result<BreakersView, ClientError> {
        self.send(Method::GET, "/v1/breakers", &[], None::<&()>)
            .await
    }

    /// `PUT /v1/breakers/settings`.
    pub async fn put_breaker_settings(
        &self,
        settings: &BreakerSettingsRequest,
    ) -> Result<BreakerSettingsView, ClientError> {
        let path = "/v1/breakers/settings";
        self.send(Method::PUT, path, &[], Some(settings)).await
    }

    /// `POST /v1/breakers/open` (`open`) or `/v1/breakers/close`.
    pub async fn set_breaker(
        &self,
        destination: &str,
        open: bool,
    ) -> Result<BreakerView, ClientError> {
        let path = if open {
            "/v1/breakers/open"
        } else {
            "/v1/breakers/close"
        };
        let body = DestinationRequest {
            destination: Some(destination.into()),
        };
        self.send(Method::POST, path, &[], Some(&body)).await
    }

    /// `GET /v1/order-keys`: a page of order keys, in key order, after `after`.
    pub async fn order_keys(
        &self,
        after: Option<&str>,
        limit: Option<u32>,
    ) -> Result<OrderKeysView, ClientError> {
        let limit = limit.map(|l| l.to_string());
        let mut query: Vec<(&str, &str)> = Vec::new();
        if let Some(after) = after {
            query.push(("after", after));
        }
        if let Some(limit) = &limit {
            query.push(("limit", limit));
        }
        self.send(Method::GET, "/v1/order-keys", &query, None::<&()>)
            .await
    }

    /// `GET /v1/order-keys/{key}`.
    pub async fn order_key(&self, key: &str) -> Result<OrderKeyView, ClientError> {
        let path = keyed_path("/v1/order-keys", key, None);
        self.send(Method::GET, &path, &[], None::<&()>).await
    }

    /// `GET /v1/signing-secrets`: the secrets in force, newest first.
    pub async fn signing_secrets(&self) -> Result<SigningSecretsView, ClientError> {
        let path = "/v1/signing-secrets";
        self.send(Method::GET, path, &[], None::<&()>).await
    }

    /// `POST /v1/signing-secrets`: a new secret, the others kept for the grace period.
    pub async fn rotate_signing_secret(
        &self,
        rotation: &RotationRequest,
    ) -> Result<SigningSecretsView, ClientError> {
        let path = "/v1/signing-secrets";
        self.send(Method::POST, path, &[], Some(rotation)).await
    }

    /// `DELETE /v1/signing-secrets/{id}`.
    pub async fn retire_signing_secret(
        &self,
        id: &SecretId,
    ) -> Result<SigningSecretsView, ClientError> {
        let path = format!("/v1/signing-secrets/{id}");
        self.send(Method::DELETE, &path, &[], None::<&()>).await
    }

    /// `GET /v1/flows`: the busy or paused flows.
    pub async fn flows(&self) -> Result<FlowsView, ClientError> {
        self.send(Method::GET, "/v1/flows", &[], None::<&()>).await
    }

    /// `GET /v1/flows/{key}`.
    pub async fn flow(&self, key: &str) -> Result<FlowStateView, ClientError> {
        self.send(Method::GET, &flow_path(key, None), &[], None::<&()>)
            .await
    }

    /// `POST /v1/flows/{key}/pause`.
    pub async fn pause_flow(&self, key: &str) -> Result<FlowStateView, ClientError> {
        let path = flow_path(key, Some("pause"));
        self.send(Method::POST, &path, &[], None::<&()>).await
    }

    /// `POST /v1/flows/{key}/resume`.
    pub async fn resume_flow(&self, key: &str) -> Result<FlowStateView, ClientError> {
        let path = flow_path(key, Some("resume"));
        self.send(Method::POST, &path, &[], None::<&()>).await
    }

    /// `POST /v1/schedules`: the schedule's own fields and the task each occurrence is.
    pub async fn create_schedule(
        &self,
        schedule: &ScheduleFields,
        task: &TaskRequest,
    ) -> Result<Answer<ScheduleView>, ClientError> {
        let mut body = serde_json::Map::new();
        for part in [serde_json::to_value(task), serde_json::to_value(schedule)] {
            if let Ok(serde_json::Value::Object(fields)) = part {
                body.extend(fields.into_iter().filter(|(_, v)| !v.is_null()));
            }
        }
        let request = self
            .request(Method::POST, "/v1/schedules", &[])?
            .json(&body)?;
        self.answer(request).await
    }

    /// `GET /v1/schedules`: one page, newest first.
    pub async fn schedules(&self, cursor: Option<&str>) -> Result<ScheduleListView, ClientError> {
        let query: Vec<(&str, &str)> = cursor.map(|c| ("cursor", c)).into_iter().collect();
        self.send(Method::GET, "/v1/schedules", &query, None::<&()>)
            .await
    }

    /// `GET /v1/schedules/{id}`.
    pub async fn schedule(&self, id: &ScheduleId) -> Result<ScheduleView, ClientError> {
        self.send(
            Method::GET,
            &format!("/v1/schedules/{id}"),
            &[],
            None::<&()>,
        )
        .await
    }

    /// `POST /v1/schedules/{id}/pause` or `…/resume`.
    pub async fn set_schedule(
        &self,
        id: &ScheduleId,
        verb: &str,
    ) -> Result<ScheduleView, ClientError> {
        let path = format!("/v1/schedules/{id}/{verb}");
        self.send(Method::POST, &path, &[], None::<&()>).await
    }

    /// `DELETE /v1/schedules/{id}` (204, no body).
    pub async fn delete_schedule(&self, id: &ScheduleId) -> Result<(), ClientError> {
        let request = self.request(Method::DELETE, &format!("/v1/schedules/{id}"), &[])?;
        self.body(request).await.map(|_| ())
    }

    /// `GET /v1/stats`.
    pub async fn stats(&self) -> Result<StatsView, ClientError> {
        self.send(Method::GET, "/v1/stats", &[], None::<&()>).await
    }

    /// `GET /healthz` (no key needed).
    pub async fn health(&self) -> Result<Health, ClientError> {
        self.send(Method::GET, "/healthz", &[], None::<&()>).await
    }

    /// `GET /metrics`: the text exposition.
    pub async fn metrics(&self) -> Result<String, ClientError> {
        let request = self.request(Method::GET, "/metrics", &[])?;
        Ok(self.body(request).await?.1)
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<Call, ClientError> {
        let mut url = self
            .base
            .join(path)
            .map_err(|e| ClientError::Url(format!("{path}: {e}")))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(Call::new(method, url, &self.api_key))
    }

    async fn send<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&B>,
    ) -> Result<T, ClientError> {
        let mut request = self.request(method, path, query)?;
        if let Some(body) = body {
            request = request.json(body)?;
        }
        Ok(self.answer(request).await?.body)
    }

    async fn answer<T: DeserializeOwned>(&self, request: Call) -> Result<Answer<T>, ClientError> {
        let (status, body) = self.body(request).await?;
        match serde_json::from_str(&body) {
            Ok(body) => Ok(Answer { status, body }),
            Err(_) => Err(ClientError::Unexpected { status, body }),
        }
    }

    /// Sends `request`; a success's status and body, or the problem it was refused with.
    async fn body(&self, request: Call) -> Result<(u16, String), ClientError> {
        let (status, body) = self.http.send(request).await.map_err(unreachable_or_http)?;
        if (200..300).contains(&status) {
            Ok((status, body))
        } else {
            Err(refused(status, body))
        }
    }
}

/// `/v1/flows/{key}` and the action after it, if any, with the key as one path segment:
/// a flow key may hold `/`, `?`, `%` or spaces, which are percent-encoded.
fn flow_path(key: &str, action: Option<&str>) -> String {
    keyed_path("/v1/flows", key, action)
}

/// `{base}/{key}` and the action after it, if any, with the key as one path segment.
fn keyed_path(base: &str, key: &str, action: Option<&str>) -> String {
    let mut url = Url::parse("http://keys.invalid").expect("a valid URL");
    url.set_path(base);
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.push(key).extend(action);
    }
    url.path().to_string()
}

/// An answer that is not a success: the problem it carries, or the body as it came.
fn refused(status: u16, body: String) -> ClientError {
    match serde_json::from_str::<Problem>(&body) {
        Ok(problem) => ClientError::Refused { status, problem },
        Err(_) => ClientError::Unexpected { status, body },
    }
}

fn unreachable_or_http(e: TransportError) -> ClientError {
    if e.is_unreachable() {
        ClientError::Unreachable(e.explain())
    } else {
        ClientError::Http(e)
    }
}

#[cfg(test)]
mod tests {
    use super::flow_path;

    #[test]
    fn a_flow_key_is_one_path_segment() {
        assert_eq!(flow_path("partner-api", None), "/v1/flows/partner-api");
        assert_eq!(
            flow_path("a/b c?d%", Some("pause")),
            "/v1/flows/a%2Fb%20c%3Fd%25/pause"
        );
    }
}
