//! What API Gateway's access log costs per request: the stack's access-log format (the
//! same file the CDK stack reads) rendered with a request's values. Each log event has its
//! own timestamp, so the format carries no time of its own.

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};

use super::functions::LOG_EVENT_OVERHEAD;

const FORMAT: &str = include_str!("../../../infra/lib/access-log-format.json");

/// One request, as the access log sees it.
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub status: u16,
    pub latency_ms: u64,
}

/// The bytes CloudWatch Logs ingests for one access-log line (the line and the per-event
/// overhead). API Gateway writes `-` for an empty variable.
pub fn bytes(request: &Request) -> Result<usize> {
    let format: Map<String, Value> =
        serde_json::from_str(FORMAT).context("infra/lib/access-log-format.json")?;
    let mut line = Map::new();
    for (key, variable) in format {
        let value = match variable.as_str().unwrap_or_default() {
            // HTTP API request ids are 16 characters, e.g. `Kf7dtjs0oAMEMeA=`.
            "$context.requestId" => "Kf7dtjs0oAMEMeA=".to_string(),
            "$context.identity.sourceIp" => "203.0.113.10".to_string(),
            "$context.httpMethod" => request.method.to_string(),
            "$context.path" => request.path.to_string(),
            "$context.status" => request.status.to_string(),
            "$context.responseLatency" => request.latency_ms.to_string(),
            "$context.integrationErrorMessage" => "-".to_string(),
            other => {
                bail!("the access-log format uses {other}, which the cost meter cannot price yet")
            }
        };
        line.insert(key, Value::String(value));
    }
    Ok(Value::Object(line).to_string().len() + LOG_EVENT_OVERHEAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_line_is_priced_from_the_stack_format() {
        let request = Request {
            method: "POST",
            path: "/v1/tasks",
            status: 201,
            latency_ms: 25,
        };
        let line = r#"{"requestId":"Kf7dtjs0oAMEMeA=","ip":"203.0.113.10","method":"POST","path":"/v1/tasks","status":"201","latency":"25","integrationError":"-"}"#;
        assert_eq!(bytes(&request).unwrap(), line.len() + LOG_EVENT_OVERHEAD);
    }
}
