//! What the CLI prints: the API's JSON with `--json`, else readable blocks and tables.

use boomerang_api::view::SigningSecretsView;
use boomerang_api::view::{AttemptView, KeyedStatusView, TaskView};
use boomerang_api::view::{BreakerSettingsView, BreakerView, BreakersView};
use boomerang_api::view::{BulkJobView, BulkJobsView, BulkPreviewView};
use boomerang_api::view::{FlowStateView, FlowsView, TemplateView, TemplatesView};
use boomerang_api::view::{OrderKeyView, OrderKeysView};
use boomerang_core::domain::{Status, TaskId};
use chrono::{DateTime, Utc};
use serde::Serialize;

pub struct Output {
    pub json: bool,
}

/// What an action by key did, as the CLI shows it: its answer, the ids done (`canceled`,
/// `released`), those left with their state, and whether more tasks have the key.
pub struct ByKey<'a, T: Serialize> {
    pub answer: &'a T,
    pub verb: &'static str,
    pub done: &'a [TaskId],
    pub left: &'a [KeyedStatusView],
    pub more: bool,
}

impl Output {
    /// A task: its state, request, and every attempt with its lateness.
    pub fn task(&self, task: &TaskView) {
        if self.json {
            return print_json(task);
        }
        say!("{}  {}", task.id, task.status.as_str());
        say!("  {} {}", task.method, task.url);
        let field = |name: &str, value: String| {
            if !value.is_empty() {
                say!("  {name:<11}{value}");
            }
        };
        field("key", task.key.clone().unwrap_or_default());
        field("created", short_time(Some(task.created_at)));
        if matches!(task.status, Status::Scheduled | Status::Held) {
            field("next", short_time(task.next_attempt_at));
        }
        if let Some(hold) = &task.hold {
            let unknown = name_of(&hold.on_unknown);
            let then = match &hold.check_url {
                Some(url) => format!(
                    "then ask {url}, else {unknown} (after {} checks)",
                    hold.max_checks
                ),
                // Nobody to ask: the task's fate when the hold times out is `on_unknown`.
                None => format!("then {unknown}"),
            };
            field("hold", format!("{}, {then}", hold.timeout));
            field("check at", short_time(task.check_at));
            let checks = task.checks.len();
            field(
                "checks",
                if checks > 0 {
                    checks.to_string()
                } else {
                    String::new()
                },
            );
        }
        field("last error", task.last_error.clone().unwrap_or_default());
        let attempts = task.attempts.as_deref().unwrap_or_default();
        if !attempts.is_empty() {
            say!("  attempts");
            for attempt in attempts {
                say!("    {}", attempt_line(attempt));
            }
        }
    }

    /// A page (or all pages) of tasks as a table; says how to get the next page.
    pub fn list(&self, tasks: &[TaskView], next_cursor: Option<&str>) {
        if self.json {
            return print_json(&serde_json::json!({ "tasks": tasks, "next_cursor": next_cursor }));
        }
        say!(
            "{:<26}  {:<10}  {:<24}  {:<16}  URL",
            "ID",
            "STATUS",
            "NEXT / UPDATED",
            "KEY"
        );
        for task in tasks {
            let when = match task.status {
                Status::Scheduled | Status::Held => task.next_attempt_at,
                _ => Some(task.updated_at),
            };
            say!(
                "{:<26}  {:<10}  {:<24}  {:<16}  {}",
                task.id,
                task.status.as_str(),
                short_time(when),
                task.key.as_deref().unwrap_or_default(),
                task.url,
            );
        }
        if let Some(cursor) = next_cursor {
            eprintln!("more: --all, or the API with cursor={cursor}");
        }
    }

    /// The busy or paused flows as a table.
    pub fn flows(&self, flows: &FlowsView) {
        if self.json {
            return print_json(flows);
        }
        say!("{:<8}  {:>9}  {:>9}  KEY", "STATE", "WAITING", "IN FLIGHT");
        for flow in &flows.flows {
            say!("{}", flow_line(flow));
        }
    }

    /// One flow, as a line of the table.
    pub fn flow(&self, flow: &FlowStateView) {
        if self.json {
            return print_json(flow);
        }
        say!("{}", flow_line(flow));
    }

    /// The breaker settings, then the open breakers as a table.
    pub fn breakers(&self, breakers: &BreakersView) {
        if self.json {
            return print_json(breakers);
        }
        self.breaker_settings(&breakers.settings);
        say!(
            "{:<8}  {:<20}  {:<20}  {:>6}  DESTINATION",
            "STATE",
            "OPENED",
            "NEXT PROBE",
            "FAILED"
        );
        for b in &breakers.open {
            say!("{}", breaker_line(b));
        }
    }

    /// One breaker, as a line of the table.
    pub fn breaker(&self, breaker: &BreakerView) {
        if self.json {
            return print_json(breaker);
        }
        say!("{}", breaker_line(breaker));
    }

    pub fn breaker_settings(&self, s: &BreakerSettingsView) {
        if self.json {
            return print_json(s);
        }
        say!(
            "opens after {} failed calls in a row spanning {}; probes after {}, doubling to {}",
            s.failures,
            s.span,
            s.first_probe,
            s.max_probe
        );
    }

    /// A page of order keys, one line each.
    pub fn order_keys(&self, page: &OrderKeysView) {
        if self.json {
            return print_json(page);
        }
        say!(
            "{:>7}  {:<26}  {:>6}  {:<10}  KEY",
            "BACKLOG",
            "HEAD",
            "PLACE",
            "STATUS"
        );
        for key in &page.keys {
            say!("{}", order_key_line(key));
        }
        if let Some(next) = &page.next_cursor {
            say!("(more: --after {next})");
        }
    }

    /// One order key.
    pub fn order_key(&self, key: &OrderKeyView) {
        if self.json {
            return print_json(key);
        }
        say!(
            "{:>7}  {:<26}  {:>6}  {:<10}  KEY",
            "BACKLOG",
            "HEAD",
            "PLACE",
            "STATUS"
        );
        say!("{}", order_key_line(key));
    }

    /// The signing secrets in force, newest first.
    pub fn signing_secrets(&self, secrets: &SigningSecretsView) {
        if self.json {
            return print_json(secrets);
        }
        say!("{:<16}  {:<20}  {:<20}  SECRET", "ID", "ADDED", "EXPIRES");
        for s in &secrets.secrets {
            let time = |t: Option<DateTime<Utc>>, none: &str| {
                t.map_or(none.to_string(), |t| {
                    t.format("%Y-%m-%d %H:%M:%S").to_string()
                })
            };
            say!(
                "{:<16}  {:<20}  {:<20}  {}",
                s.id,
                time(s.created_at, "-"),
                time(s.expires_at, "never"),
                s.secret
            );
        }
    }

    /// What a bulk action would do: the count, and a sample as the task list shows it.
    pub fn bulk_preview(&self, preview: &BulkPreviewView) {
        if self.json {
            return print_json(preview);
        }
        let bound = if preview.complete { "" } else { "at least " };
        say!(
            "{} would take {bound}{} tasks (nothing was changed); a sample:",
            preview.action,
            preview.count
        );
        self.list(&preview.sample, None);
    }

    /// Bulk jobs as a table: what each does and how far it is.
    pub fn bulk_jobs(&self, jobs: &BulkJobsView) {
        if self.json {
            return print_json(jobs);
        }
        say!("{}", bulk_header());
        for job in &jobs.jobs {
            say!("{}", bulk_line(job));
        }
    }

    /// One bulk job, as a line of the table.
    pub fn bulk_job(&self, job: &BulkJobView) {
        if self.json {
            return print_json(job);
        }
        say!("{}", bulk_line(job));
    }

    /// The templates as a table: name, where their tasks go, and what they rule.
    pub fn templates(&self, templates: &TemplatesView) {
        if self.json {
            return print_json(templates);
        }
        say!("{:<24}  {:<40}  EXPECT_BODY", "NAME", "URL");
        for t in &templates.templates {
            let s = &t.settings;
            let url = (s.url.as_deref().map(str::to_owned))
                .or_else(|| s.url_base.as_deref().map(|base| format!("{base}/…")))
                .unwrap_or_else(|| "-".into());
            let expect = s.expect_body.as_deref().unwrap_or("-");
            say!("{:<24}  {url:<40}  {expect}", t.name);
        }
    }

    /// One template: its settings as JSON, whichever the output (they are a document).
    pub fn template(&self, template: &TemplateView) {
        print_json(template)
    }

    /// What a cancel or release by key did.
    pub fn by_key<T: Serialize>(&self, outcome: ByKey<'_, T>) {
        if self.json {
            return print_json(outcome.answer);
        }
        let verb = outcome.verb;
        say!("{verb} {}", outcome.done.len());
        for id in outcome.done {
            say!("  {id}");
        }
        if !outcome.left.is_empty() {
            say!("not {verb} {}", outcome.left.len());
            for task in outcome.left {
                say!("  {}  {}", task.id, task.status.as_str());
            }
        }
        if outcome.more {
            say!("more tasks have the key: run it again");
        }
    }

    /// One attempt, as `watch` sees it recorded.
    pub fn attempt_progress(&self, attempt: &AttemptView) {
        if self.json {
            say!("{}", one_line(attempt));
        } else {
            say!("attempt {}", attempt_line(attempt));
        }
    }

    /// The task's state changed (as `watch` saw it).
    pub fn status_change(&self, task: &TaskView) {
        if self.json {
            return;
        }
        let status = task.status.as_str();
        match task.status {
            Status::Scheduled | Status::Held => say!(
                "{status}: next attempt at {}",
                task.next_attempt_at
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
                    .unwrap_or_default()
            ),
            _ => say!("{status}"),
        }
    }

    /// `watch` saw the task end.
    pub fn watched_end(&self, task: &TaskView) {
        if self.json {
            say!("{}", one_line(task));
        }
    }
}

/// `#2   due 2026-11-23 10:00:03.120  +4ms late  took 35ms  retrying   HTTP 500`
fn attempt_line(a: &AttemptView) -> String {
    let result = match (a.status_code, a.error.as_deref()) {
        (Some(code), _) => format!("HTTP {code}"),
        (None, Some(error)) => error.to_string(),
        (None, None) => String::new(),
    };
    format!(
        "#{:<3} due {}  {:>7} late  took {:>6}  {:<9}  {}",
        a.number,
        short_time(Some(a.scheduled_at)),
        format!("+{}ms", a.lateness_ms),
        format!("{}ms", a.duration_ms),
        name_of(&a.outcome),
        result,
    )
}

/// `2026-11-23 19:12:59.654`, or nothing.
fn short_time(t: Option<DateTime<Utc>>) -> String {
    t.map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_default()
}

/// A value of one of the API's enums as the API writes it (`retrying`, `cancel`).
fn flow_line(flow: &FlowStateView) -> String {
    let state = if flow.paused { "paused" } else { "running" };
    format!(
        "{state:<8}  {:>9}  {:>9}  {}",
        flow.waiting, flow.in_flight, flow.key
    )
}

fn name_of<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn one_line<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

pub(super) fn print_json<T: Serialize>(v: &T) {
    match serde_json::to_string_pretty(v) {
        Ok(text) => say!("{text}"),
        Err(e) => eprintln!("error: cannot print the answer as JSON: {e}"),
    }
}

fn bulk_header() -> String {
    format!(
        "{:<26}  {:<7}  {:<8}  {:>7}  {:>7}  {:>7}  {:>7}  CREATED",
        "JOB", "ACTION", "STATE", "READ", "MATCHED", "DONE", "SKIPPED"
    )
}

fn bulk_line(job: &BulkJobView) -> String {
    let p = &job.progress;
    format!(
        "{:<26}  {:<7}  {:<8}  {:>7}  {:>7}  {:>7}  {:>7}  {}",
        job.id,
        job.action,
        job.state,
        p.read,
        p.matched,
        p.done,
        p.skipped,
        job.created_at.format("%F %T")
    )
}

fn breaker_line(b: &BreakerView) -> String {
    let at = |t: Option<DateTime<Utc>>| t.map_or("-".into(), |t| t.format("%F %T").to_string());
    let next = match b.by_hand {
        true => "by hand".to_string(),
        false => at(b.next_probe_at),
    };
    format!(
        "{:<8}  {:<20}  {:<20}  {:>6}  {}",
        b.state,
        at(b.opened_at),
        next,
        b.probes_failed,
        b.destination
    )
}

fn order_key_line(key: &OrderKeyView) -> String {
    let (task, place, status) = match &key.head {
        Some(h) => {
            let status = match h.blocked {
                true => format!("{} (blocks)", h.status),
                false => h.status.clone(),
            };
            (h.task_id.to_string(), h.place.to_string(), status)
        }
        None => ("-".into(), "-".into(), "-".into()),
    };
    format!(
        "{:>7}  {task:<26}  {place:>6}  {status:<10}  {}",
        key.backlog, key.key
    )
}
