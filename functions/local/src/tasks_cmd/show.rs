//! What the CLI prints: the API's JSON with `--json`, else readable blocks and tables.

use serde_json::Value;

pub struct Output {
    pub json: bool,
}

impl Output {
    /// A task: its state, request, and every attempt with its lateness.
    pub fn task(&self, task: &Value) {
        if self.json {
            return print_json(task);
        }
        println!("{}  {}", text(&task["id"]), text(&task["status"]));
        println!("  {} {}", text(&task["method"]), text(&task["url"]));
        let field = |name: &str, value: String| {
            if !value.is_empty() {
                println!("  {name:<11}{value}");
            }
        };
        field("key", text(&task["key"]));
        field("created", short_time(&text(&task["created_at"])));
        if matches!(text(&task["status"]).as_str(), "scheduled" | "held") {
            field("next", short_time(&text(&task["next_attempt_at"])));
        }
        if !task["hold"].is_null() {
            let hold = &task["hold"];
            field(
                "hold",
                format!(
                    "{}, then ask {}, else {} (after {} checks)",
                    text(&hold["timeout"]),
                    or(&hold["check_url"], "nobody"),
                    text(&hold["on_unknown"]),
                    text(&hold["max_checks"]),
                ),
            );
            field("check at", short_time(&text(&task["check_at"])));
            let checks = task["checks"].as_array().map_or(0, Vec::len);
            field(
                "checks",
                if checks > 0 {
                    checks.to_string()
                } else {
                    String::new()
                },
            );
        }
        field("last error", text(&task["last_error"]));
        let attempts = task["attempts"].as_array().cloned().unwrap_or_default();
        if !attempts.is_empty() {
            println!("  attempts");
            for attempt in &attempts {
                println!("    {}", attempt_line(attempt));
            }
        }
    }

    /// A page (or all pages) of tasks as a table; says how to get the next page.
    pub fn list(&self, tasks: &[Value], next_cursor: Option<&str>) {
        if self.json {
            return print_json(&serde_json::json!({ "tasks": tasks, "next_cursor": next_cursor }));
        }
        println!(
            "{:<26}  {:<10}  {:<24}  {:<16}  URL",
            "ID", "STATUS", "NEXT / UPDATED", "KEY"
        );
        for task in tasks {
            let when = match text(&task["status"]).as_str() {
                "scheduled" | "held" => text(&task["next_attempt_at"]),
                _ => text(&task["updated_at"]),
            };
            println!(
                "{:<26}  {:<10}  {:<24}  {:<16}  {}",
                text(&task["id"]),
                text(&task["status"]),
                short_time(&when),
                text(&task["key"]),
                text(&task["url"]),
            );
        }
        if let Some(cursor) = next_cursor {
            eprintln!("more: --all, or the API with cursor={cursor}");
        }
    }

    /// What a cancel or release by key did (`verb`: canceled, released).
    pub fn by_key(&self, outcome: &Value, verb: &str) {
        if self.json {
            return print_json(outcome);
        }
        let done = outcome[verb].as_array().cloned().unwrap_or_default();
        println!("{verb} {}", done.len());
        for id in &done {
            println!("  {}", text(id));
        }
        let left = outcome[format!("not_{verb}")]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !left.is_empty() {
            println!("not {verb} {}", left.len());
            for task in &left {
                println!("  {}  {}", text(&task["id"]), text(&task["status"]));
            }
        }
        if outcome["more"] == Value::Bool(true) {
            println!("more tasks have the key: run it again");
        }
    }

    /// One attempt, as `watch` sees it recorded.
    pub fn attempt_progress(&self, attempt: &Value) {
        if self.json {
            println!("{attempt}");
        } else {
            println!("attempt {}", attempt_line(attempt));
        }
    }

    /// The task's state changed (as `watch` saw it).
    pub fn status_change(&self, task: &Value) {
        if self.json {
            return;
        }
        let status = text(&task["status"]);
        match status.as_str() {
            "scheduled" | "held" => println!(
                "{status}: next attempt at {}",
                text(&task["next_attempt_at"])
            ),
            _ => println!("{status}"),
        }
    }

    /// `watch` saw the task end.
    pub fn watched_end(&self, task: &Value) {
        if self.json {
            println!("{task}");
        }
    }
}

/// `#2   due 2026-11-23 10:00:03.120  +4ms late  took 35ms  retrying   HTTP 500`
fn attempt_line(a: &Value) -> String {
    let result = match (a["status_code"].as_u64(), a["error"].as_str()) {
        (Some(code), _) => format!("HTTP {code}"),
        (None, Some(error)) => error.to_string(),
        (None, None) => String::new(),
    };
    format!(
        "#{:<3} due {}  {:>7} late  took {:>6}  {:<9}  {}",
        text(&a["number"]),
        short_time(&text(&a["scheduled_at"])),
        format!("+{}ms", text(&a["lateness_ms"])),
        format!("{}ms", text(&a["duration_ms"])),
        text(&a["outcome"]),
        result,
    )
}

/// `2026-11-23T19:12:59.654452887Z` → `2026-11-23 19:12:59.654`.
fn short_time(t: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(t) {
        Ok(t) => t.format("%Y-%m-%d %H:%M:%S%.3f").to_string(),
        Err(_) => t.to_string(),
    }
}

/// A JSON value as plain text ("" for null).
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn or(v: &Value, default: &str) -> String {
    match text(v) {
        t if t.is_empty() => default.to_string(),
        t => t,
    }
}

fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
}
