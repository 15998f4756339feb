//! What the sweeper costs a month on an idle table: EventBridge runs it once a minute,
//! and each run queues a pass half a minute later that the delivery function runs. Both
//! are measured here, in this process on the metered clients, and priced per month.

use std::time::Instant;

use anyhow::Result;
use boomerang_aws::lambda::{handle_sweep, Delivery};
use boomerang_aws::messages::{SweepPass, TimerMessage};
use boomerang_aws::system_failures::SystemFailures;
use boomerang_aws::AwsTimer;
use boomerang_core::engine::Engine;

use super::meter::Meter;
use super::prices::*;

/// Minutes in a 30-day month: that many runs, and as many passes.
const MINUTES_PER_MONTH: f64 = 30.0 * 24.0 * 60.0;
/// Runs (and passes) measured; the figures are their mean.
const MEASURED: usize = 20;
/// The sweeper's memory in the CDK stack.
const SWEEPER_MEMORY_MB: f64 = 256.0;
/// One JSON line per run or pass ("sweep finished", with Lambda's fields); the platform's
/// START/END/REPORT lines are logged only at WARN.
const LOG_BYTES_PER_RUN: f64 = 400.0;

/// Dollars a month, by component.
pub struct Month {
    pub dynamodb: f64,
    pub sqs: f64,
    pub lambda: f64,
    pub logs: f64,
}

impl Month {
    pub fn total(&self) -> f64 {
        self.dynamodb + self.sqs + self.lambda + self.logs
    }
}

pub struct Sweeper {
    pub engine: std::sync::Arc<Engine>,
    pub timer: std::sync::Arc<AwsTimer>,
    pub failures: Option<SystemFailures>,
}

impl Sweeper {
    /// Runs the sweeper and its pass [`MEASURED`] times each, after one unmeasured run
    /// that reads what the scenarios left behind, and prices a month of them.
    pub async fn month(&self, meter: &Meter, delivery: &Delivery) -> Result<Month> {
        self.run_and_pass(delivery).await?;
        let before = meter.tally();
        let mut seconds = 0.0;
        for _ in 0..MEASURED {
            seconds += self.run_and_pass(delivery).await?;
        }
        let t = meter.tally().minus(&before);
        let per_run = MINUTES_PER_MONTH / MEASURED as f64;
        // Each pass is also received and deleted, in a batch of the mapping: count both.
        let pass_receipts = 2.0 * MINUTES_PER_MONTH;
        let invocations = 2.0 * MINUTES_PER_MONTH;
        let gb_seconds = seconds * per_run * SWEEPER_MEMORY_MB / 1024.0;
        Ok(Month {
            dynamodb: per_run
                * (t.write_units() * DYNAMODB_PER_MILLION_WRITE_UNITS
                    + t.read_units * DYNAMODB_PER_MILLION_READ_UNITS)
                / 1e6,
            sqs: (per_run * t.requests_of("SQS") + pass_receipts) * SQS_PER_MILLION_REQUESTS / 1e6,
            lambda: invocations * LAMBDA_PER_MILLION_REQUESTS / 1e6
                + gb_seconds * LAMBDA_PER_GB_SECOND,
            logs: invocations * LOG_BYTES_PER_RUN / 1e9 * LOGS_PER_GB,
        })
    }

    /// One minute's run and its pass; the seconds they took, each billed to the ms.
    async fn run_and_pass(&self, delivery: &Delivery) -> Result<f64> {
        let started = Instant::now();
        handle_sweep(&self.engine, self.failures.as_ref(), &self.timer).await?;
        let run = billed(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let pass = TimerMessage::Sweep {
            sweep: SweepPass::HalfMinute,
        };
        delivery.message(pass, None).await?;
        Ok(run + billed(started.elapsed().as_secs_f64()))
    }
}
