//! The OpenAPI 3.1 document served at `/openapi.json`.
//!
//! It is generated from what the Router is built of: each handler's `#[utoipa::path]`
//! registers its route and its operation at once (`utoipa_axum::routes!`), the request and
//! view types carry their schemas, and the problems' examples come from the constructors
//! the handlers use. Routes behind the API key are marked so here, where the key check is
//! applied to them.

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Extension;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, Ref, RefOr};
use utoipa::{OpenApi, ToResponse};

use super::problem::Problem;

/// The name of the bearer-key security scheme.
pub const API_KEY: &str = "api_key";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Boomerang",
        description = "Reliable delayed callbacks. Register a callback (a URL, a request and \
            a time); Boomerang stores it, calls it on time, retries it with backoff, and \
            lets you inspect, cancel, hold, release and redrive it.\n\n\
            Every error is an RFC 9457 problem (`application/problem+json`) whose `field` \
            names the request field at fault.\n\n\
            Durations are written as `90s`, `5m`, `1h 30m`, `2days`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    tags(
        (name = "tasks", description = "Register, inspect, list, cancel and redrive callbacks."),
        (name = "bulk", description = "Bulk actions by filter: retry, cancel or release every task a filter takes, previewed or as a job with its progress."),
        (name = "holds", description = "Release held tasks (registered with `hold`)."),
        (name = "schedules", description = "Recurring callbacks: cron in a time zone, or a fixed interval."),
        (name = "policies", description = "A tenant's named policies: retries, and a flow."),
        (name = "breakers", description = "Circuit breakers: destinations that keep failing are left alone while one probe at a time tests them."),
        (name = "templates", description = "A tenant's task templates: settings its tasks take unless they give their own."),
        (name = "order-keys", description = "Ordered delivery: each order key's head (the task whose turn it is) and backlog."),
        (name = "signing-secrets", description = "The secrets deliveries are signed with, and their rotation without downtime."),
        (name = "flows", description = "A tenant's flows: what waits in them; pause and resume."),
        (name = "service", description = "Health, metrics and this document."),
        (name = "console", description = "The web console: pages that use this API."),
    ),
    components(
        schemas(Problem),
        responses(Malformed, BadQuery, Invalid, TooLarge, Unauthorized, NotFound, Conflict, Unavailable, Unready, TooMany),
    ),
)]
struct Base;

/// The document for the Router's routes: `public` as they are, and `authenticated` with the
/// API key, and the 401, 429 and 503 answers its check can give, on every operation.
pub fn document(public: Document, mut authenticated: Document) -> Document {
    for item in authenticated.paths.paths.values_mut() {
        operations_mut(item).for_each(require_api_key);
    }
    let mut doc = Base::openapi();
    doc.merge(public);
    doc.merge(authenticated);
    let scheme = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .description(Some(
            "An API key: `serve` prints where it keeps the generated one; on AWS, \
             `boomerang keys create` mints one.",
        ))
        .build();
    doc.components
        .get_or_insert_with(Default::default)
        .add_security_scheme(API_KEY, SecurityScheme::Http(scheme));
    doc
}

fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
        &mut item.head,
        &mut item.options,
        &mut item.trace,
    ]
    .into_iter()
    .flatten()
}

fn require_api_key(op: &mut Operation) {
    op.security = Some(vec![SecurityRequirement::new(
        API_KEY,
        Vec::<String>::new(),
    )]);
    let answers = [
        ("401", "Unauthorized"),
        ("429", "TooMany"),
        ("503", "Unavailable"),
    ];
    for (status, response) in answers {
        op.responses.responses.insert(
            status.to_string(),
            RefOr::Ref(Ref::from_response_name(response)),
        );
    }
}

/// The document as served: rendered on its first request, not while the Router is built
/// (an API Lambda's cold start), and then shared by every request.
#[derive(Clone)]
pub struct Served(Arc<(Document, OnceLock<Bytes>)>);

impl Served {
    pub fn new(doc: Document) -> Self {
        Self(Arc::new((doc, OnceLock::new())))
    }

    fn json(&self) -> Bytes {
        let (doc, json) = &*self.0;
        json.get_or_init(|| Bytes::from(doc.to_json().unwrap_or_default()))
            .clone()
    }
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "service", operation_id = "openapi",
    responses((status = 200, description = "This OpenAPI 3.1 document",
               content_type = "application/json", body = Object)))]
pub async fn openapi_json(Extension(doc): Extension<Served>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], doc.json())
}

/// A problem response, with an example made by the constructor the handlers use.
fn problem_response(description: &str, example: Problem) -> RefOr<Response> {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("Problem")))
        .example(serde_json::to_value(example).ok())
        .build();
    ResponseBuilder::new()
        .description(description)
        .content("application/problem+json", content)
        .into()
}

/// Declares a problem response component: `#[utoipa::path]` answers name it
/// (`(status = 422, response = Invalid)`).
macro_rules! problem_responses {
    ($($name:ident: $description:literal => $example:expr;)*) => {$(
        #[doc = $description]
        pub struct $name;
        impl<'r> ToResponse<'r> for $name {
            fn response() -> (&'r str, RefOr<Response>) {
                (stringify!($name), problem_response($description, $example))
            }
        }
    )*};
}

problem_responses! {
    Malformed: "The body is not JSON, or has more than one JSON value."
        => Problem::malformed("expected value at line 1 column 1");
    BadQuery: "The query string cannot be read: a parameter is given twice."
        => Problem::bad_query("Failed to deserialize query string: duplicate field `key`");
    Invalid: "A field breaks a rule; `field` names it (`retry.schedule[2]`)."
        => Problem::invalid("delay", "must be between 0s and 365days");
    TooLarge: "The request body is larger than 1 MiB, or a task's body larger than 256 KiB."
        => Problem::too_large("body", "requests must be at most 1024 KiB");
    Unauthorized: "No API key, or not a valid one."
        => Problem::unauthorized();
    NotFound: "No such task (or policy) for this API key."
        => Problem::not_found("no such task");
    Conflict: "The task's state does not allow this (a canceled task cannot be released)."
        => Problem::conflict("the task is canceled; only a held task can be released");
    Unavailable: "The store cannot be reached; nothing was done: send the request again \
                  after `Retry-After` seconds."
        => Problem::unavailable("the task store is unavailable");
    TooMany: "Over one of your limits (requests a second, or unfinished tasks); nothing was \
              done: try again after `Retry-After` seconds."
        => Problem::too_many("more than 5000 requests a second for this tenant", std::time::Duration::from_secs(1));
    Unready: "A check fails (the store takes no write, the disk is nearly full, the timer \
              stalled); `detail` names each."
        => Problem::unavailable("not ready: disk: 12 MiB free in the data directory, under the 64 MiB needed");
}
