//! What a bulk retry costs: failed tasks retried by one `POST /v1/tasks/bulk`, the job run
//! as the sweeper runs it (paging the tenant's task partitions, one conditional write and
//! one timer per task), and the retries delivered. Counted per task retried, in this
//! process only (the sweeper's time is timed here, as for its month).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use axum::http::StatusCode;
use boomerang_core::domain::{BulkAction, BulkPlan, TaskFilter, TenantId};
use boomerang_core::engine::bulk_runner;
use serde_json::json;

use super::{order_event, request, Bench, Run, Via};
use crate::cost::prices::billed;

impl Bench {
    /// Registers `tasks` callbacks that fail their one attempt, lets them fail, then
    /// retries them all in bulk; the window holds only the bulk request, the job and the
    /// retries.
    pub(super) async fn bulk_retry(&self, tasks: usize) -> Result<Option<Run>> {
        let Via::InProcess { sweeper, .. } = &self.via else {
            return Ok(None);
        };
        let engine = &sweeper.engine;
        let prefix = format!("{}/fail-once?bulk={}", self.receiver.url, ulid::Ulid::new());
        let mut setup = Run::default();
        for i in 0..tasks {
            let body = json!({"url": format!("{prefix}&i={i}"), "body": order_event(i),
                              "retry": {"schedule": ["1s"], "max_attempts": 1}});
            self.register(&mut setup, &body, None, &self.api_key)
                .await?;
        }
        let plan = BulkPlan::new(
            BulkAction::Retry,
            TaskFilter {
                url_prefix: Some(prefix.clone()),
                ..TaskFilter::default()
            },
            Some(1_000),
            false,
        )?;
        let tenant = TenantId::parse("acme")?;
        let deadline = Instant::now() + Duration::from_secs(180);
        while engine.preview_bulk(&tenant, &plan).await?.count < tasks as u64 {
            self.poll_once(&mut setup).await?;
            if Instant::now() > deadline {
                bail!("the first attempts did not all fail within 3 minutes");
            }
        }

        let window = self.open_window();
        let mut run = Run::default();
        let delivered = self.receiver.succeeded.load(Ordering::SeqCst);
        let body = json!({"action": "retry", "filter": {"url_prefix": prefix}, "per_second": 1000});
        let (status, answer, seconds) = self
            .call("POST", "/v1/tasks/bulk", Some(&body), None)
            .await?;
        if status != StatusCode::ACCEPTED {
            bail!("the bulk retry answered {status}: {answer}");
        }
        run.api(&request("POST", "/v1/tasks/bulk", 202, seconds), seconds)?;
        // The sweeper's run of the job, billed as the delivery function's time (the same
        // memory); its invocation is the minute's run, counted in the sweeper's month.
        let started = Instant::now();
        let left = engine
            .run_bulk_jobs(&bulk_runner(), Duration::from_secs(120))
            .await?;
        if left > 0 {
            bail!("the bulk job did not finish in one run");
        }
        run.delivery_seconds += billed(started.elapsed().as_secs_f64());
        self.deliver(&mut run, delivered + tasks).await?;
        run.callbacks = tasks;
        self.close_window(window, &mut run);
        Ok(Some(run))
    }
}
