//! The Lambda event dispatch: the delivery handler (an SQS batch from the timer queue or
//! the slow lane's, or a Scheduler input, read once into a [`DeliveryEvent`]; each timer
//! message carries an attempt for `Engine::deliver_by`, a bucket for its fire, or a sweep
//! pass; the local trigger emulation uses it too) and the sweeper's handler; `start`
//! builds what every function runs on from its environment.

mod events;
pub mod start;

use std::sync::Arc;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse};
use futures_util::future::{join, join_all};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::buckets::{BucketError, BucketFire};
use crate::messages::{SweepPass, TimerMessage};
use crate::settings::SWEEP_LAG;
use crate::system_failures::{Redrive, SystemFailures};
use crate::timer::AwsTimer;
use boomerang_core::domain::AttemptRef;
use boomerang_core::engine::{Engine, EngineError, Route};
use boomerang_core::metrics::MetricEvent;
use boomerang_core::ports::StoreError;
pub use events::{DeliveryEvent, QueueBatch, QueueRecord, RecordBody};

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("bucket fire failed: {0}")]
    Bucket(#[from] BucketError),
    /// Failing the invocation makes SQS redeliver the whole batch, which is safe.
    #[error("cannot encode the batch response: {0}")]
    Encode(#[from] serde_json::Error),
}

/// What the delivery function runs: attempts through the engine, buckets through their
/// fire.
#[derive(Clone)]
pub struct Delivery {
    pub engine: Arc<Engine>,
    pub buckets: Arc<BucketFire>,
}

impl Delivery {
    /// The delivery Lambda's handler: an SQS batch, answered with its partial failures, or
    /// a Scheduler input (answered with nothing). Attempts record `worker` (the
    /// invocation's request id) as their worker; `None`: this process.
    pub async fn handle(
        &self,
        event: DeliveryEvent,
        worker: Option<&str>,
    ) -> Result<Value, HandlerError> {
        match event {
            DeliveryEvent::Queue(batch) => {
                let response = self.queue(&batch, worker).await;
                Ok(serde_json::to_value(response)?)
            }
            // An error fails the invocation: with Lambda's async retries off, the event goes
            // to the on-failure destination, and the sweeper hands it back.
            DeliveryEvent::Scheduled(message) => {
                self.message(message, worker).await?;
                Ok(Value::Null)
            }
            DeliveryEvent::Foreign(value) => {
                let text = value.to_string();
                tracing::warn!(event = %truncate(&text), "ignoring an event that is not ours");
                Ok(Value::Null)
            }
        }
    }

    /// Handles an SQS batch; the answer lists only the records that failed for a transient
    /// reason, so SQS redelivers just those.
    pub async fn queue(&self, batch: &QueueBatch, worker: Option<&str>) -> SqsBatchResponse {
        // A batch holds at most 10 records (the slow lane's, 16): handle them concurrently.
        let results = join_all(batch.records.iter().map(|r| self.record(r, worker))).await;
        let mut response = SqsBatchResponse::default();
        for failed in results.into_iter().flatten() {
            let mut item = BatchItemFailure::default();
            item.item_identifier = failed;
            response.batch_item_failures.push(item);
        }
        response
    }

    /// The message id if the record should be retried. A body that is not ours is logged
    /// and acknowledged (retrying it could never help).
    async fn record(&self, record: &QueueRecord, worker: Option<&str>) -> Option<String> {
        let id = &record.message_id;
        let message = match &record.body {
            RecordBody::Timer(message) => message.clone(),
            RecordBody::Foreign(body) => {
                tracing::warn!(message = %id, body = %truncate(body), "ignoring a timer message that is not ours");
                return None;
            }
        };
        match self.message(message, worker).await {
            Ok(()) => None,
            Err(e) => {
                tracing::error!(message = %id, error = %e, "timer message failed; SQS will redeliver");
                Some(id.clone())
            }
        }
    }

    /// Delivers one attempt that came by `route` (the timer queue, or the slow lane's).
    async fn attempt(
        &self,
        attempt: AttemptRef,
        route: Route,
        worker: Option<&str>,
    ) -> Result<(), HandlerError> {
        let (task, number) = (attempt.task_id, attempt.attempt);
        let worker = worker.unwrap_or(self.engine.worker());
        let outcome = self.engine.deliver_by(attempt, worker, route).await?;
        tracing::debug!(task = %task, attempt = %number, ?route, ?outcome, "timer fired");
        Ok(())
    }

    /// Handles one timer message; only transient failures are errors.
    pub async fn message(
        &self,
        message: TimerMessage,
        worker: Option<&str>,
    ) -> Result<(), HandlerError> {
        match message {
            TimerMessage::Attempt(attempt) => self.attempt(attempt, Route::Shared, worker).await?,
            TimerMessage::Slow { slow } => self.attempt(slow, Route::SlowLane, worker).await?,
            // Boxed, as the sweep below: inline, the delivery function's future nests too
            // deep for the compiler to lay out (it stops at its query depth limit).
            TimerMessage::Bucket { bucket } => {
                let minute = bucket.minute;
                match Box::pin(self.buckets.run(bucket)).await {
                    // A cursor no page ever wrote: retrying could never help. The check
                    // fires the minute's partition again if its chain never ended.
                    Err(BucketError::Store(StoreError::Corrupt(e))) => {
                        tracing::error!(error = %e, %minute, "dropping bucket work with a broken cursor");
                        self.engine.record(MetricEvent::SetAside { count: 1 });
                    }
                    Ok(report) if report.set_aside > 0 => {
                        let count = report.set_aside;
                        self.engine.record(MetricEvent::SetAside { count });
                    }
                    outcome => {
                        outcome?;
                    }
                }
            }
            // The pass hands nothing back from the system-failures queue: the minute's run
            // does, and only the sweeper may read it.
            TimerMessage::Sweep { .. } => {
                Box::pin(sweep(&self.engine, None, -SWEEP_LAG)).await?;
            }
        }
        Ok(())
    }
}

/// The sweeper Lambda's handler: re-arms work overdue by more than [`SWEEP_LAG`] (its timer
/// was lost), and dead letters not yet acknowledged; then hands the timers in the
/// system-failures queue back to the timer queue, and queues the next half-minute pass.
pub async fn handle_sweep(
    engine: &Engine,
    failures: Option<&SystemFailures>,
    timer: &AwsTimer,
) -> Result<Value, HandlerError> {
    let report = sweep(engine, failures, -SWEEP_LAG).await?;
    let pass = TimerMessage::Sweep {
        sweep: SweepPass::HalfMinute,
    };
    // Without it a lost timer waits for the next minute's run: late, not lost.
    if let Err(e) = timer.send(&pass, HALF_MINUTE_PASS_DELAY).await {
        tracing::warn!(error = %e, "could not queue the half-minute sweep");
    }
    Ok(serde_json::to_value(report)?)
}

/// Fires again each minute's bucket whose fire never finished; a fired minute counts as a
/// repair. A failure is logged and counted (`{"bucket_check_failed": 1}`, which the stack
/// alarms on): the next run checks the same minutes again, so a check that keeps failing
/// is seen rather than a cursor that silently stands still.
pub async fn check_bucket_fires(engine: &Engine, buckets: &BucketFire) {
    match buckets.check(engine.now()).await {
        Ok(report) => {
            if report.fired > 0 {
                engine.record(MetricEvent::SweepRepaired {
                    count: report.fired,
                });
            }
            if report.set_aside > 0 {
                engine.record(MetricEvent::SetAside {
                    count: report.set_aside,
                });
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "could not check the minutes' bucket fires; the next run checks them again");
            engine.record(MetricEvent::BucketCheckFailed);
        }
    }
}

/// How long after a sweeper run its half-minute pass runs: with [`SWEEP_LAG`], a lost
/// timer is re-armed at most about 45 seconds late.
pub const HALF_MINUTE_PASS_DELAY: i32 = 30;

/// How long a run (or a half-minute pass) goes on sweeping while each sweep finds work, or
/// finds work it cannot arm yet (tried again a second later: the outage that failed it
/// may end meanwhile, and the repair then follows within seconds rather than at the next
/// pass): a sweep reads at most a batch a shard, so a backlog of lost timers would
/// otherwise take a run per batch, two a minute. With two runs a minute, sweeps are under
/// way for two thirds of the time while there is repair work. Short enough that the run
/// has ended before its half-minute pass begins, and well inside the sweeper function's
/// 60-second timeout.
pub const SWEEP_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// How long a sweeper run goes on handing back the system-failures queue's timers while
/// it has a backlog (no read starts after it): longer than the sweep's budget, since the
/// queue is read only by the minute's run (the delivery function that runs the half-minute
/// pass has no access to it), and well inside the function's 60-second timeout. An empty
/// queue ends the redrive at once.
pub const REDRIVE_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// What one run of the sweeper did: the function's answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweeperReport {
    pub rearmed: usize,
    pub leases_taken_over: usize,
    pub dead_letters_resent: usize,
    pub timers_redriven: usize,
}

/// [`handle_sweep`] with the cutoff `lookahead` from now (the trigger emulation sets its
/// own lag): sweeps for up to [`SWEEP_BUDGET`] while there is work, and hands back the
/// failed timers meanwhile.
pub async fn sweep(
    engine: &Engine,
    failures: Option<&SystemFailures>,
    lookahead: chrono::Duration,
) -> Result<SweeperReport, EngineError> {
    // The two touch nothing of each other's: the index's work, and the failed timers.
    let redrive = async {
        let Some(f) = failures else {
            return Redrive::default();
        };
        f.redrive(engine, REDRIVE_BUDGET).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "could not read the system-failures queue");
            Redrive {
                redriven: 0,
                failed: 1,
            }
        })
    };
    let (report, redrive) = join(engine.sweep_within(lookahead, SWEEP_BUDGET), redrive).await;
    let redriven = redrive.redriven;
    if redriven > 0 {
        engine.record(MetricEvent::SweepRepaired { count: redriven });
    }
    if redrive.failed > 0 {
        tracing::error!(
            failed = redrive.failed,
            "timers in the system-failures queue could not be handed back; the next run tries again"
        );
        engine.record(MetricEvent::RedriveFailed {
            count: redrive.failed,
        });
    }
    let report = report?;
    tracing::info!(
        rearmed = report.rearmed,
        leases_taken_over = report.leases_taken_over,
        dead_letters_resent = report.dead_letters_resent,
        timers_redriven = redriven,
        "sweep finished"
    );
    Ok(SweeperReport {
        rearmed: report.rearmed,
        leases_taken_over: report.leases_taken_over,
        dead_letters_resent: report.dead_letters_resent,
        timers_redriven: redriven,
    })
}

fn truncate(s: &str) -> &str {
    let end = s.char_indices().nth(200).map_or(s.len(), |(i, _)| i);
    &s[..end]
}
