//! Held tasks: release (by business key in `tasks/keys.rs`), and the check-back when the caller
//! goes silent (see [`crate::domain::hold`]).

use super::delivery::{DeliverOutcome, Ended, Step, LOCAL_RETRY};
use super::error::EngineError;
use super::state::Engine;
use crate::domain::held::judge_check;
use crate::domain::{
    AttemptRef, CheckAnswer, CheckRecord, Refusal, Status, Task, TaskId, TenantId,
};
use crate::metrics::MetricEvent;
use crate::ports::{StoreError, WebhookError};

/// What a release did.
#[derive(Debug)]
pub struct Release {
    pub task: Task,
    /// False when the task had been released before (the request was a repeat).
    pub released_now: bool,
}

impl Engine {
    /// Releases a held task for delivery. Releasing a task released before is a repeat,
    /// answered with the task as it is; a canceled one is refused.
    pub async fn release(&self, tenant: &TenantId, id: &TaskId) -> Result<Release, EngineError> {
        match self.transition(tenant, id, Task::release).await {
            Ok(task) => {
                tracing::info!(task = %task.id, "held task released");
                self.arm_written(&task).await;
                Ok(Release {
                    task,
                    released_now: true,
                })
            }
            Err(EngineError::Conflict(Refusal::Released(_))) => Ok(Release {
                task: self.owned_task(tenant, id).await?,
                released_now: false,
            }),
            Err(e) => Err(e),
        }
    }

    /// A timer fire for a held task: its hold timed out, or its next check is due. Asks
    /// the check URL (if any) and writes what the answer decides, conditionally: a release
    /// or cancel that got there first wins, and this check's result is dropped.
    pub(in crate::engine) async fn check_hold(
        &self,
        at: AttemptRef,
        task: Task,
    ) -> Result<Ended, EngineError> {
        match task.claim_check(at.attempt, self.ports.clock.now()) {
            Ok(()) => {}
            Err(Refusal::NotDue(due)) => {
                self.arm_in_place(at, due).await?;
                return Ok(Step::Done(DeliverOutcome::Early));
            }
            // Not held, or not a check's timer: perhaps a lagging read, so it is read again
            // before the fire is dropped.
            Err(_) => return Ok(Step::Reread),
        }
        let (answer, record) = match task
            .spec
            .hold
            .as_ref()
            .and_then(|h| h.check_url().map(str::to_string))
        {
            Some(url) => match self.ask(&task, url).await {
                Ok((answer, record)) => (answer, Some(record)),
                // The call never left this machine: no check was made, none is counted.
                Err(why) => {
                    tracing::warn!(
                        task = %task.id, error = why,
                        "check given back: this machine ran out of resources before the call left"
                    );
                    let again = self.ports.clock.now() + LOCAL_RETRY;
                    self.put_off_in_place(at, again).await?;
                    self.record(MetricEvent::GivenBack);
                    return Ok(Step::Done(DeliverOutcome::GivenBack));
                }
            },
            None => (CheckAnswer::Unknown("no check_url".into()), None),
        };
        let now = self.ports.clock.now();
        let mut next = task
            .after_check(&answer, record, now)
            .map_err(EngineError::Conflict)?;
        self.arm_before_write(&mut next).await;
        match self.ports.store.tasks.update(&next, task.version).await {
            Ok(()) => self.pass_turn(&task, &next).await,
            // Released or canceled meanwhile: that decision stands.
            Err(StoreError::Conflict) => return Ok(Step::Reread),
            Err(e) => return Err(e.into()),
        }
        tracing::info!(
            task = %task.id, checks = next.checks.len(), status = next.status.as_str(),
            "held task checked"
        );
        match next.status {
            Status::Scheduled => self.arm_written(&next).await,
            Status::Canceled => self.record(MetricEvent::Canceled { count: 1 }),
            _ => self.arm_after_write(&next).await,
        }
        Ok(Step::Done(DeliverOutcome::Checked(next.status)))
    }

    /// Calls the check URL (signed like every call) and judges the answer; `Err` when the
    /// call never left this machine (it ran out of a resource first).
    async fn ask(&self, task: &Task, url: String) -> Result<(CheckAnswer, CheckRecord), String> {
        let started = self.ports.clock.now();
        let result = self
            .send_signed(task.check_ref(), &task.check_spec(url), None)
            .await;
        if let Some(WebhookError::Local(why)) = &result.error {
            return Err(why.clone());
        }
        let error = result.error.as_ref().map(|e| e.to_string());
        let answer = judge_check(result.status, result.excerpt.as_deref(), error.as_deref());
        let record = CheckRecord::new(
            task.next_check(),
            started,
            self.ports.clock.now(),
            result.status,
            &answer,
        );
        Ok((answer, record))
    }
}
