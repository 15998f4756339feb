//! AWS calls as IAM sees them: each call a recording proxy passed on
//! ([`crate::fault_proxy::Recorded`]) becomes the authorization requests AWS would make of
//! the caller's role: the action, the resource (named by its part in the stack, so that the
//! IAM check can find the same resource in the synthesized template), and the condition
//! keys the call carries (DynamoDB's leading keys, attributes and return values; the
//! service a role is passed to).
//!
//! The check itself (`infra/iam/check-calls.mjs`) evaluates these with an IAM policy
//! evaluator against the functions' roles.

use std::collections::BTreeSet;

use boomerang_aws::AwsSettings;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::fault_proxy::{Recorded, Service};

/// The stack's resources a request can name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    /// The table.
    Table,
    /// One of the table's indexes, by name.
    Index(String),
    /// One of the queues: `timer`, `slow`, `dead-letters` or `system-failures`.
    Queue(String),
    /// A schedule in the schedule group, by name.
    Schedule(String),
    /// The role Scheduler invokes with.
    SchedulerRole,
}

/// What a request is expected to get: the calls the functions made must be allowed; a
/// probe of what a function must never do, denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Allow,
    Deny,
}

/// One authorization request of one function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IamRequest {
    /// `api`, `delivery` or `sweeper`.
    pub function: String,
    /// `dynamodb:PutItem`, `sqs:SendMessage`, …
    pub action: String,
    pub resource: Resource,
    /// Condition keys and their values (a list for multivalued keys).
    pub context: std::collections::BTreeMap<String, Value>,
    pub expect: Expect,
    /// Why a probe must be denied, or which call a request comes from.
    pub about: String,
}

/// The requests of the calls `function` made, one per distinct request (a scenario
/// repeats the same call many times).
pub fn requests_of(function: &str, settings: &AwsSettings, calls: &[Recorded]) -> Vec<IamRequest> {
    // Keyed by the request as JSON, which orders them too.
    let mut out = std::collections::BTreeMap::new();
    for call in calls {
        let body: Value = serde_json::from_slice(&call.body).unwrap_or(Value::Null);
        for request in requests_of_call(function, settings, call, &body) {
            out.insert(serde_json::to_string(&request).unwrap(), request);
        }
    }
    out.into_values().collect()
}

fn requests_of_call(
    function: &str,
    settings: &AwsSettings,
    call: &Recorded,
    body: &Value,
) -> Vec<IamRequest> {
    let op = call.call.operation.as_str();
    let request = |action: String, resource: Resource, context: Map<String, Value>| IamRequest {
        function: function.to_string(),
        action,
        resource,
        context: context.into_iter().collect(),
        expect: Expect::Allow,
        about: op.to_string(),
    };
    match call.call.service {
        Some(Service::DynamoDb) => dynamodb(op, body)
            .into_iter()
            .map(|(resource, context)| request(format!("dynamodb:{op}"), resource, context))
            .collect(),
        Some(Service::Sqs) => {
            let url = body["QueueUrl"].as_str().unwrap_or_default();
            // A batch is authorized as the action it batches: IAM has no batch actions.
            let action = op.strip_suffix("Batch").unwrap_or(op);
            vec![request(
                format!("sqs:{action}"),
                Resource::Queue(queue_name(settings, url)),
                Map::new(),
            )]
        }
        Some(Service::Scheduler) => {
            // `/schedules/<name>`; the group is in the body (create) or the query.
            let name = call.path.trim_start_matches("/schedules/").to_string();
            let mut requests = vec![request(
                format!("scheduler:{op}"),
                Resource::Schedule(name),
                Map::new(),
            )];
            // Creating a schedule passes its target's role to Scheduler.
            if body["Target"]["RoleArn"].is_string() {
                let context = Map::from_iter([(
                    "iam:PassedToService".to_string(),
                    json!("scheduler.amazonaws.com"),
                )]);
                requests.push(request(
                    "iam:PassRole".into(),
                    Resource::SchedulerRole,
                    context,
                ));
            }
            requests
        }
        None => panic!("a call to no AWS service the functions use: {op}"),
    }
}

/// The queue a URL names, by its part in the stack.
fn queue_name(settings: &AwsSettings, url: &str) -> String {
    let known = [
        (Some(settings.timer_queue_url.as_str()), "timer"),
        (settings.slow_queue_url.as_deref(), "slow"),
        (
            Some(settings.dead_letter_queue_url.as_str()),
            "dead-letters",
        ),
        (
            settings.system_failures_queue_url.as_deref(),
            "system-failures",
        ),
    ];
    known
        .iter()
        .find(|(u, _)| *u == Some(url))
        .map(|(_, name)| name.to_string())
        .unwrap_or_else(|| panic!("a queue the stack does not have: {url}"))
}

/// The resource and condition keys of a DynamoDB call: one request, or for a batch
/// (whose keys all go in one request's leading keys) one.
fn dynamodb(op: &str, body: &Value) -> Vec<(Resource, Map<String, Value>)> {
    let mut context = Map::new();
    let resource = match body["IndexName"].as_str() {
        Some(index) => Resource::Index(index.to_string()),
        None => Resource::Table,
    };
    let partition = |item: &Value| item["pk"]["S"].as_str().map(str::to_string);
    let leading: Vec<String> = match op {
        "GetItem" | "UpdateItem" | "DeleteItem" => partition(&body["Key"]).into_iter().collect(),
        "PutItem" => partition(&body["Item"]).into_iter().collect(),
        "Query" => query_partition(body).into_iter().collect(),
        "BatchGetItem" => (body["RequestItems"].as_object().into_iter())
            .flat_map(|tables| tables.values())
            .flat_map(|t| t["Keys"].as_array().cloned().unwrap_or_default())
            .filter_map(|k| partition(&k))
            .collect(),
        "BatchWriteItem" => (body["RequestItems"].as_object().into_iter())
            .flat_map(|tables| tables.values())
            .flat_map(|t| t.as_array().cloned().unwrap_or_default())
            .filter_map(|w| {
                partition(&w["PutRequest"]["Item"])
                    .or_else(|| partition(&w["DeleteRequest"]["Key"]))
            })
            .collect(),
        other => panic!("a DynamoDB operation the functions are not expected to call: {other}"),
    };
    let leading: BTreeSet<String> = leading.into_iter().collect();
    // A query of an index is keyed by the index's own partition, not the table's.
    if resource == Resource::Table {
        context.insert("dynamodb:LeadingKeys".into(), json!(leading));
    }
    let attributes = attributes(op, body);
    if !attributes.is_empty() {
        context.insert("dynamodb:Attributes".into(), json!(attributes));
    }
    if let Some(rv) = body["ReturnValues"].as_str() {
        context.insert("dynamodb:ReturnValues".into(), json!(rv));
    }
    vec![(resource, context)]
}

/// The partition a query of the table reads: the value its key condition binds to `pk`.
fn query_partition(body: &Value) -> Option<String> {
    let condition = body["KeyConditionExpression"].as_str()?;
    let names = &body["ExpressionAttributeNames"];
    let first = condition
        .split(" AND ")
        .next()?
        .trim()
        .trim_matches(['(', ')']);
    let (name, value) = first.split_once('=')?;
    let (name, value) = (name.trim(), value.trim());
    let name = names[name].as_str().unwrap_or(name);
    (name == "pk")
        .then(|| {
            body["ExpressionAttributeValues"][value]["S"]
                .as_str()
                .map(str::to_string)
        })
        .flatten()
}

/// The top-level attributes a write names: a put's item's, an update's key and every name
/// its expressions use (by placeholder or as written).
fn attributes(op: &str, body: &Value) -> BTreeSet<String> {
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    match op {
        "PutItem" => keys(&body["Item"]).into_iter().collect(),
        "UpdateItem" => {
            let mut names: BTreeSet<String> = keys(&body["Key"]).into_iter().collect();
            let placeholders = &body["ExpressionAttributeNames"];
            for expression in ["UpdateExpression", "ConditionExpression"] {
                for name in expression_names(body[expression].as_str().unwrap_or_default()) {
                    match name.strip_prefix('#') {
                        Some(_) => names.extend(placeholders[&name].as_str().map(str::to_string)),
                        None => {
                            names.insert(name);
                        }
                    }
                }
            }
            names
        }
        _ => BTreeSet::new(),
    }
}

/// The attribute names an expression uses: `#placeholders` and bare names, without the
/// expression's keywords, functions and `:values`.
fn expression_names(expression: &str) -> Vec<String> {
    const WORDS: &[&str] = &[
        "SET",
        "REMOVE",
        "ADD",
        "DELETE",
        "AND",
        "OR",
        "NOT",
        "IN",
        "BETWEEN",
        "attribute_exists",
        "attribute_not_exists",
        "attribute_type",
        "begins_with",
        "contains",
        "size",
        "if_not_exists",
        "list_append",
    ];
    let mut names = Vec::new();
    let mut word = String::new();
    // A name after a `.` is a part of a path: IAM sees only the path's top level.
    let mut in_path = false;
    let mut flush = |word: &mut String, in_path: bool| {
        let w = std::mem::take(word);
        let first = w.chars().next();
        if !in_path
            && first.is_some_and(|c| c == '#' || c.is_ascii_alphabetic())
            && !WORDS.contains(&w.as_str())
        {
            names.push(w);
        }
    };
    let mut in_value = false;
    for c in expression.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '#' {
            if !in_value {
                word.push(c);
            }
            continue;
        }
        flush(&mut word, in_path);
        in_value = c == ':';
        in_path = c == '.';
    }
    flush(&mut word, in_path);
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_names_its_attributes_but_not_its_words_or_values() {
        let names = expression_names(
            "SET #s = :s, version = version + :one REMOVE lease ADD #n :n \
             (attribute_not_exists(#set) AND #one = :old_one) OR size(body) > :max \
             AND attempts.last = :a",
        );
        assert_eq!(
            names,
            ["#s", "version", "version", "lease", "#n", "#set", "#one", "body", "attempts"]
        );
    }

    #[test]
    fn a_query_of_the_table_reads_the_partition_its_condition_binds() {
        let body = json!({
            "KeyConditionExpression": "#pk = :pk AND begins_with(sk, :p)",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": {":pk": {"S": "P#acme"}, ":p": {"S": "x"}}
        });
        assert_eq!(query_partition(&body).as_deref(), Some("P#acme"));
        let bare = json!({
            "KeyConditionExpression": "pk = :v",
            "ExpressionAttributeValues": {":v": {"S": "BULK"}}
        });
        assert_eq!(query_partition(&bare).as_deref(), Some("BULK"));
    }
}
