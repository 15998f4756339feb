//! Failure alerts: raised as ordinary tasks when a task fails (see [`crate::domain::alert`]).
//!
//! A final alert is registered before the failed task is written, with an idempotency key
//! of its own, and the task is written linked to it. If it cannot be registered (the store
//! refused the write), the task is written owing it, and the sweep registers it later; a
//! repeat finds the same alert. A "retrying" notice (`notify: every`) or a success notice
//! (`on_success`) that cannot be registered is logged and skipped: the final failure's
//! alert is the one that must arrive.

use crate::domain::notice::alert_spec;
use crate::domain::{AlertTarget, AttemptRecord, Notice, Task, TaskId, TaskTrace, TenantId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::engine::tasks::{FireTime, NewTask, RetrySource};
use crate::ports::StoreError;

/// What became of an alert.
enum Raised {
    /// Registered (or found registered by an earlier try).
    Alert(TaskId),
    /// Nowhere to send it: no destination, or one that is refused. Nothing is owed.
    Nowhere,
    /// Not registered now; worth another try.
    Later,
}

impl Engine {
    /// Where `task`'s alert `notice` goes: a success to its own `on_success` only; a
    /// failure to its own `on_failure`, else its tenant's default, else the server's.
    async fn alert_target(
        &self,
        task: &Task,
        notice: Notice,
    ) -> Result<Option<AlertTarget>, EngineError> {
        if let Notice::Succeeded { .. } = notice {
            return Ok(task.spec.on_success.clone());
        }
        if let Some(own) = &task.spec.on_failure {
            return Ok(Some(own.clone()));
        }
        self.default_alert_target(&task.tenant).await
    }

    /// Where a tenant's alerts go when nothing names a destination: its own default,
    /// else the server's.
    pub(in crate::engine) async fn default_alert_target(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<AlertTarget>, EngineError> {
        match self.ports.tenants.alert_target(tenant).await {
            Ok(Some(tenant)) => Ok(Some(tenant)),
            Ok(None) => Ok(self.settings.alert.clone()),
            Err(e) => Err(EngineError::Store(StoreError::Unavailable(e.into()))),
        }
    }

    /// Registers the alert `notice` about `task` (as it is about to be written), listing its
    /// attempts: those stored, and `latest`, not yet stored.
    async fn raise(&self, task: &Task, notice: Notice, latest: Option<&AttemptRecord>) -> Raised {
        match self.try_raise(task, notice, latest).await {
            Ok(Some(id)) => Raised::Alert(id),
            Ok(None) => Raised::Nowhere,
            Err(EngineError::Invalid(refused)) => {
                tracing::error!(
                    task = %task.id, error = %refused,
                    "alert destination refused; no alert sent"
                );
                Raised::Nowhere
            }
            Err(e) => {
                tracing::error!(task = %task.id, error = %e, "could not register the alert");
                Raised::Later
            }
        }
    }

    async fn try_raise(
        &self,
        task: &Task,
        notice: Notice,
        latest: Option<&AttemptRecord>,
    ) -> Result<Option<TaskId>, EngineError> {
        let Some(target) = self.alert_target(task, notice).await? else {
            return Ok(None);
        };
        let mut attempts = self
            .ports
            .store
            .tasks
            .attempts(&task.tenant, &task.id)
            .await?;
        attempts.extend(latest.cloned());
        let body = task.alert_body(notice, &attempts, self.ports.clock.now());
        let mut spec = alert_spec(task.id, &target, &body);
        // An alert about a traced task is part of its trace.
        spec.trace = task.spec.trace.as_ref().map(TaskTrace::on_behalf);
        let new = NewTask {
            spec,
            retry_from: RetrySource::Default,
            when: FireTime::Now,
            idempotency_key: Some(task.alert_idempotency_key(notice)),
            // Every repeat of a notice is the same alert, whatever its summary says now.
            request_hash: "alert".into(),
        };
        // Not held to the tenant's limit of unfinished tasks: the alert is owed.
        let prepared = self.prepare(&task.tenant, new).await?;
        let registration = self.register_prepared(prepared).await?;
        tracing::info!(
            task = %task.id, alert = %registration.task.id, attempt = notice.attempt(),
            "alert raised"
        );
        Ok(Some(registration.task.id))
    }

    /// `next` (a task just out of an attempt, not yet written) with the alert its attempt
    /// calls for raised and linked, or still owed if it could not be.
    pub(in crate::engine) async fn alert_before_write(
        &self,
        next: Task,
        notice: Notice,
        record: &AttemptRecord,
    ) -> Task {
        match self.raise(&next, notice, Some(record)).await {
            Raised::Alert(id) => next.with_alert(id, notice),
            Raised::Nowhere => Task {
                alert_pending: false,
                ..next
            },
            Raised::Later => next,
        }
    }

    /// The sweep's registration of an alert a failed task still owes. Returns false if it
    /// still cannot be registered.
    pub(in crate::engine) async fn owed_alert(&self, task: Task) -> Result<bool, EngineError> {
        let Some(notice) = task.owed_alert() else {
            return Ok(true);
        };
        let alert = match self.raise(&task, notice, None).await {
            Raised::Alert(id) => Some(id),
            Raised::Nowhere => None,
            Raised::Later => return Ok(false),
        };
        let Ok(settled) = task.alert_settled(alert, self.ports.clock.now()) else {
            return Ok(true);
        };
        match self.ports.store.tasks.update(&settled, task.version).await {
            // Lost to a concurrent write (a redrive): the next sweep looks again if need be.
            Ok(()) | Err(StoreError::Conflict) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}
