//! A fault-injecting proxy between the AWS backend and an emulator, on loopback: the
//! backend's endpoint points here, and each call is passed on to the emulator unless a
//! rule in force answers for it: a throttle, a server error, an outage, or a delay before
//! passing it on. The AWS failures a test needs, made by the real SDK talking to a real
//! emulator, with no fake of the AWS API.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// Which AWS API a call is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    DynamoDb,
    Sqs,
    Scheduler,
}

/// A call as the proxy sees it: its service and operation (`SendMessage`, `PutItem`,
/// `CreateSchedule`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub service: Option<Service>,
    pub operation: String,
}

/// What a rule does to a call it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The service's throttling error (400 `ThrottlingException`, or DynamoDB's
    /// `ProvisionedThroughputExceededException`): the SDK backs off and tries again.
    Throttle,
    /// 500 `InternalFailure`.
    ServerError,
    /// 503 `ServiceUnavailable`, for every call the rule matches: the service is down.
    Outage,
    /// The call is passed on this much later.
    Latency(Duration),
}

/// A fault for the calls of one service (and operations, if named), to a share of them,
/// until a deadline.
#[derive(Clone, Debug)]
pub struct Rule {
    pub service: Service,
    /// Only these operations; empty: every one of the service's.
    pub operations: Vec<&'static str>,
    pub fault: Fault,
    /// The share of matching calls it answers (0 to 1), drawn at random per call.
    pub share: f64,
    pub until: Instant,
    /// Only calls whose request body holds this text (a key, a task id); `None`: any.
    pub containing: Option<String>,
}

impl Rule {
    /// `fault` for every call of `service` for `lasting`, from now.
    pub fn every(service: Service, fault: Fault, lasting: Duration) -> Self {
        Rule {
            service,
            operations: Vec::new(),
            fault,
            share: 1.0,
            until: Instant::now() + lasting,
            containing: None,
        }
    }

    /// Only the calls of these operations.
    pub fn on(mut self, operations: &[&'static str]) -> Self {
        self.operations = operations.to_vec();
        self
    }

    /// Only this share of the calls (0 to 1).
    pub fn share(mut self, share: f64) -> Self {
        self.share = share;
        self
    }

    /// Only the calls whose body holds `text`: the calls about one item.
    pub fn containing(mut self, text: &str) -> Self {
        self.containing = Some(text.to_string());
        self
    }

    fn matches(&self, call: &Call, body: &[u8], now: Instant) -> bool {
        now < self.until
            && call.service == Some(self.service)
            && (self.operations.is_empty() || self.operations.contains(&call.operation.as_str()))
            && (self.containing.as_ref()).is_none_or(|text| holds(body, text.as_bytes()))
            && rand::random::<f64>() < self.share
    }
}

/// A call the proxy passed through, kept when it records ([`FaultProxy::recording`]): what
/// the IAM check reads to know which actions, resources and keys a function used.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub call: Call,
    /// The request's path (Scheduler's REST API names its schedule there).
    pub path: String,
    pub body: Bytes,
}

#[derive(Default)]
struct State {
    /// Every call passed through, when recording.
    recorded: Option<Vec<Recorded>>,
    rules: Vec<Rule>,
    /// Faults answered so far (a delay counts too), by operation.
    injected: Vec<(String, Fault)>,
}

/// The proxy: serving on `url` until dropped, passing calls on to its upstream.
pub struct FaultProxy {
    pub url: String,
    state: Arc<Mutex<State>>,
    server: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// A proxy on a free loopback port in front of `upstream` (`http://127.0.0.1:port`).
    pub async fn start(upstream: &str) -> FaultProxy {
        Self::serve(upstream, State::default()).await
    }

    /// A proxy that also keeps every call it passes on ([`FaultProxy::recorded`]).
    pub async fn recording(upstream: &str) -> FaultProxy {
        let state = State {
            recorded: Some(Vec::new()),
            ..State::default()
        };
        Self::serve(upstream, state).await
    }

    async fn serve(upstream: &str, state: State) -> FaultProxy {
        let state = Arc::new(Mutex::new(state));
        let forward = Forward {
            upstream: upstream.trim_end_matches('/').to_string(),
            // Straight to the upstream, whatever proxy the environment names.
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
            state: state.clone(),
        };
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let forward = forward.clone();
                async move { forward.handle(method, uri, headers, body).await }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FaultProxy { url, state, server }
    }

    /// Puts `rule` in force (beside the others).
    pub fn inject(&self, rule: Rule) {
        self.lock().rules.push(rule);
    }

    /// Ends every rule in force now.
    pub fn lift_all(&self) {
        let now = Instant::now();
        for rule in &mut self.lock().rules {
            rule.until = rule.until.min(now);
        }
    }

    /// The calls passed on so far, in order (none unless made by [`FaultProxy::recording`]).
    pub fn recorded(&self) -> Vec<Recorded> {
        self.lock().recorded.clone().unwrap_or_default()
    }

    /// How many calls a fault was injected into so far.
    pub fn injected(&self) -> usize {
        self.lock().injected.len()
    }

    /// How many calls of `operation` a fault was injected into so far.
    pub fn injected_into(&self, operation: &str) -> usize {
        (self.lock().injected.iter())
            .filter(|(op, _)| op == operation)
            .count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[derive(Clone)]
struct Forward {
    upstream: String,
    http: reqwest::Client,
    state: Arc<Mutex<State>>,
}

impl Forward {
    async fn handle(&self, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
        let call = call_of(&method, &uri, &headers);
        self.record(&call, &uri, &body);
        match self.fault_for(&call, &body) {
            Some(Fault::Latency(d)) => tokio::time::sleep(d).await,
            Some(fault) => return answer(&call, fault),
            None => {}
        }
        self.pass_on(method, uri, headers, body).await
    }

    fn record(&self, call: &Call, uri: &Uri, body: &Bytes) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(recorded) = &mut state.recorded {
            recorded.push(Recorded {
                call: call.clone(),
                path: uri.path().to_string(),
                body: body.clone(),
            });
        }
    }

    /// The fault of the first rule in force that matches, recorded.
    fn fault_for(&self, call: &Call, body: &[u8]) -> Option<Fault> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let fault = state
            .rules
            .iter()
            .find(|r| r.matches(call, body, now))?
            .fault;
        state.injected.push((call.operation.clone(), fault));
        Some(fault)
    }

    async fn pass_on(&self, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.upstream));
        for (name, value) in &headers {
            if !hop_by_hop(name) {
                request = request.header(name, value);
            }
        }
        let answer = match request.body(body).send().await {
            Ok(answer) => answer,
            Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
        };
        let status = answer.status();
        let mut out = HeaderMap::new();
        for (name, value) in answer.headers() {
            if !hop_by_hop(name) {
                out.append(name.clone(), value.clone());
            }
        }
        let body = answer.bytes().await.unwrap_or_default();
        (status, out, body).into_response()
    }
}

fn holds(body: &[u8], text: &[u8]) -> bool {
    !text.is_empty() && body.windows(text.len()).any(|w| w == text)
}

/// Headers that belong to one connection (or that the client sets again for the upstream).
/// `host` is the upstream's once passed on, so a request's SigV4 signature no longer
/// matches it: the emulators do not check signatures.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host" | "connection" | "content-length" | "transfer-encoding" | "keep-alive"
    )
}

/// The service and operation of a call: named by `X-Amz-Target` on the JSON protocols
/// (DynamoDB, SQS), by method and path on Scheduler's REST one.
fn call_of(method: &Method, uri: &Uri, headers: &HeaderMap) -> Call {
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        let (prefix, operation) = target.split_once('.').unwrap_or(("", target));
        let service = match prefix {
            p if p.starts_with("DynamoDB") => Some(Service::DynamoDb),
            p if p.starts_with("AmazonSQS") => Some(Service::Sqs),
            _ => None,
        };
        return Call {
            service,
            operation: operation.to_string(),
        };
    }
    let path = uri.path();
    let operation = match (method.as_str(), path) {
        (_, p) if p.starts_with("/schedule-groups") => format!("{method} schedule-group"),
        ("POST", p) if p.starts_with("/schedules/") => "CreateSchedule".into(),
        ("PUT", p) if p.starts_with("/schedules/") => "UpdateSchedule".into(),
        ("DELETE", p) if p.starts_with("/schedules/") => "DeleteSchedule".into(),
        ("GET", p) if p.starts_with("/schedules") => "GetSchedule".into(),
        _ => {
            return Call {
                service: None,
                operation: format!("{method} {path}"),
            }
        }
    };
    Call {
        service: Some(Service::Scheduler),
        operation,
    }
}

/// The error a service answers with for `fault`, in its protocol's shape: the SDK reads
/// the error's type from the body's `__type` (JSON protocols) or from `x-amzn-errortype`
/// (REST), and retries throttles and 5xx.
fn answer(call: &Call, fault: Fault) -> Response {
    let (status, kind) = match fault {
        Fault::Throttle if call.service == Some(Service::DynamoDb) => (
            StatusCode::BAD_REQUEST,
            "ProvisionedThroughputExceededException",
        ),
        Fault::Throttle if call.service == Some(Service::Scheduler) => {
            (StatusCode::TOO_MANY_REQUESTS, "ThrottlingException")
        }
        Fault::Throttle => (StatusCode::BAD_REQUEST, "ThrottlingException"),
        Fault::ServerError => (StatusCode::INTERNAL_SERVER_ERROR, "InternalFailure"),
        Fault::Outage => (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable"),
        Fault::Latency(_) => unreachable!("a delayed call is passed on, not answered"),
    };
    let body = serde_json::json!({ "__type": kind, "message": "injected by the test's proxy" });
    let mut headers = HeaderMap::new();
    headers.insert("x-amzn-errortype", HeaderValue::from_static(kind));
    headers.insert(
        "content-type",
        HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    (status, headers, body.to_string()).into_response()
}
