//! Registration requests as tests write them, and what their answers hold.

use boomerang_api::request::{
    AlertRequest, Choice, FlowRequest, HoldRequest, RetryField, RetryRequest, TaskRequest,
};
use boomerang_api::view::TaskView;
use serde_json::Value;

/// The status code of each attempt a task view lists, in order.
pub fn status_codes(task: &TaskView) -> Vec<Option<u16>> {
    task.attempts
        .iter()
        .flatten()
        .map(|a| a.status_code)
        .collect()
}

/// A callback to `url`, with nothing else set: the typed registration request, to fill in
/// with [`Callback`]'s setters.
pub fn callback(url: impl Into<String>) -> TaskRequest {
    TaskRequest {
        url: Some(url.into()),
        ..TaskRequest::default()
    }
}

/// Setters for the registration request, so that a test reads like the request it sends.
pub trait Callback: Sized {
    fn delay(self, delay: &str) -> Self;
    fn fire_at(self, at: &str) -> Self;
    fn body(self, body: Value) -> Self;
    fn header(self, name: &str, value: &str) -> Self;
    fn metadata(self, name: &str, value: &str) -> Self;
    fn key(self, key: &str) -> Self;
    fn timeout(self, timeout: &str) -> Self;
    fn expect_body(self, body: &str) -> Self;
    fn retry(self, retry: RetryRequest) -> Self;
    fn policy(self, name: &str) -> Self;
    fn template(self, name: &str) -> Self;
    fn hold(self, hold: HoldRequest) -> Self;
    fn on_failure(self, url: &str) -> Self;
    fn notify(self, notify: &str) -> Self;
    fn flow(self, flow: FlowRequest) -> Self;
}

impl Callback for TaskRequest {
    fn template(self, name: &str) -> Self {
        Self {
            template: Some(name.into()),
            ..self
        }
    }

    fn flow(self, flow: FlowRequest) -> Self {
        Self {
            flow: Some(flow),
            ..self
        }
    }
    fn delay(self, delay: &str) -> Self {
        Self {
            delay: Some(delay.parse().expect("a duration")),
            ..self
        }
    }
    fn fire_at(self, at: &str) -> Self {
        Self {
            fire_at: Some(at.parse().expect("an RFC 3339 time")),
            ..self
        }
    }
    fn body(self, body: Value) -> Self {
        Self {
            body: Some(body),
            ..self
        }
    }
    fn header(mut self, name: &str, value: &str) -> Self {
        let headers = self.headers.get_or_insert_with(Default::default);
        headers.insert(name.into(), value.into());
        self
    }
    fn metadata(mut self, name: &str, value: &str) -> Self {
        let metadata = self.metadata.get_or_insert_with(Default::default);
        metadata.insert(name.into(), value.into());
        self
    }
    fn key(self, key: &str) -> Self {
        Self {
            key: Some(key.into()),
            ..self
        }
    }
    fn timeout(self, timeout: &str) -> Self {
        Self {
            timeout: Some(timeout.parse().expect("a duration")),
            ..self
        }
    }
    fn expect_body(self, body: &str) -> Self {
        Self {
            expect_body: Some(body.into()),
            ..self
        }
    }
    fn retry(self, retry: RetryRequest) -> Self {
        Self {
            retry: Some(RetryField::Inline(retry)),
            ..self
        }
    }
    fn policy(self, name: &str) -> Self {
        Self {
            retry: Some(RetryField::Named(name.into())),
            ..self
        }
    }
    fn hold(self, hold: HoldRequest) -> Self {
        Self {
            hold: Some(hold),
            ..self
        }
    }
    fn on_failure(self, url: &str) -> Self {
        Self {
            on_failure: Some(AlertRequest {
                url: Some(url.into()),
                headers: None,
            }),
            ..self
        }
    }
    fn notify(self, notify: &str) -> Self {
        Self {
            notify: Some(Choice::parse(notify).expect("`final`, `every` or `never`")),
            ..self
        }
    }
}

/// A retry policy that waits `steps` between attempts.
pub fn schedule(steps: &[&str]) -> RetryRequest {
    RetryRequest {
        schedule: Some(
            steps
                .iter()
                .map(|s| s.parse().expect("a duration"))
                .collect(),
        ),
        ..RetryRequest::default()
    }
}

/// [`schedule`], with at most `n` attempts.
pub fn schedule_max(steps: &[&str], n: i64) -> RetryRequest {
    RetryRequest {
        max_attempts: Some(Some(n)),
        ..schedule(steps)
    }
}
