//! Schedules: recurring callbacks. Each occurrence is an ordinary task; when one comes due,
//! its schedule says whether it calls and which occurrence follows, and the engine
//! registers that one before the call ([`Engine::occurrence_due`]). An occurrence's task
//! is registered under an idempotency key of its slot, so workers that race to register it
//! (a repeated timer fire, a lease taken over) make one task.

use chrono::{DateTime, Utc};

use super::error::{EngineError, Missing};
use super::state::Engine;
use super::tasks::NewTask;
use crate::domain::{
    CatchUp, Invalid, Occurrence, Recurrence, Schedule, ScheduleId, ScheduleRefusal, Status, Task,
    TenantId,
};
use crate::ports::{SchedulePage, StoreError};

/// Why an occurrence due while its tenant is over its limit of unfinished tasks is skipped.
const OVER_PENDING: &str = "the tenant has as many unfinished tasks as it may";

/// A validated `POST /v1/schedules`.
#[derive(Clone, Debug)]
pub struct NewSchedule {
    pub recurrence: Recurrence,
    pub start_at: Option<DateTime<Utc>>,
    pub end_at: Option<DateTime<Utc>>,
    pub catch_up: CatchUp,
    /// What each occurrence calls (its `when`, idempotency key and hold are unused).
    pub task: NewTask,
}

impl Engine {
    /// The time by the engine's clock: what a schedule's next occurrence is counted from
    /// when it is shown.
    pub fn now(&self) -> DateTime<Utc> {
        self.ports.clock.now()
    }

    /// Stores a schedule and registers its first occurrence. The schedule is written first,
    /// so an occurrence always finds it; if the occurrence cannot be registered, the
    /// schedule is removed again and the error returned.
    pub async fn create_schedule(
        &self,
        tenant: &TenantId,
        new: NewSchedule,
    ) -> Result<Schedule, EngineError> {
        let mut spec = new.task.spec;
        self.check_destinations(&spec)?;
        self.apply_policy(tenant, &new.task.retry_from, &mut spec)
            .await?;
        if spec.flow.is_some() && self.ports.store.flows.is_none() {
            return Err(crate::engine::tasks::no_flows());
        }
        let now = self.ports.clock.now();
        let schedule = Schedule::new(
            tenant.clone(),
            new.recurrence,
            new.start_at,
            new.end_at,
            new.catch_up,
            spec,
            now,
        )
        // The recurrence was read (and a pattern that matches no date refused) with the
        // request; what is left to refuse here is an end before the first occurrence.
        .map_err(|e| Invalid::new("end_at", e.detail))?;
        self.ports
            .store
            .schedules
            .create_schedule(&schedule)
            .await?;
        if let Some(first) = schedule.first(now) {
            if let Err(e) = self.register_occurrence(&schedule, first).await {
                let _ = self
                    .ports
                    .store
                    .schedules
                    .delete_schedule(tenant, &schedule.id)
                    .await;
                return Err(e);
            }
        }
        tracing::info!(schedule = %schedule.id, tenant = %tenant, "schedule created");
        Ok(schedule)
    }

    pub async fn schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<Schedule, EngineError> {
        self.ports
            .store
            .schedules
            .schedule(tenant, id)
            .await?
            .ok_or(EngineError::NotFound(Missing::Schedule))
    }

    pub async fn schedules(
        &self,
        tenant: &TenantId,
        cursor: Option<ScheduleId>,
        limit: u32,
    ) -> Result<SchedulePage, EngineError> {
        Ok(self
            .ports
            .store
            .schedules
            .schedules(tenant, cursor, limit)
            .await?)
    }

    /// Pauses a schedule: its pending occurrence is skipped when it comes due, and none
    /// follows until it is resumed.
    pub async fn pause_schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<Schedule, EngineError> {
        self.change_schedule(tenant, id, Schedule::pause).await
    }

    /// Resumes a paused schedule from its next slot to come (slots that passed while it was
    /// paused do not fire).
    pub async fn resume_schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<Schedule, EngineError> {
        let schedule = self.change_schedule(tenant, id, Schedule::resume).await?;
        if let Some(first) = schedule.first(self.ports.clock.now()) {
            self.register_occurrence(&schedule, first).await?;
        }
        Ok(schedule)
    }

    /// Deletes a schedule: its pending occurrence is skipped when it comes due (an
    /// occurrence already under way finishes).
    pub async fn delete_schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<(), EngineError> {
        match self
            .ports
            .store
            .schedules
            .delete_schedule(tenant, id)
            .await?
        {
            true => Ok(()),
            false => Err(EngineError::NotFound(Missing::Schedule)),
        }
    }

    async fn change_schedule<F>(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
        change: F,
    ) -> Result<Schedule, EngineError>
    where
        F: Fn(&Schedule, DateTime<Utc>) -> Result<Schedule, ScheduleRefusal>,
    {
        loop {
            let schedule = self.schedule(tenant, id).await?;
            let next = change(&schedule, self.ports.clock.now())?;
            match self
                .ports
                .store
                .schedules
                .update_schedule(&next, schedule.version)
                .await
            {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// An occurrence's first attempt is due: registers the occurrence that follows it and
    /// says whether this one calls (`Some(why)`: it is skipped). Only a due, untried
    /// occurrence comes here; registering the next one first means a crash after it loses
    /// nothing (the next is registered once, whoever gets there).
    pub(in crate::engine) async fn occurrence_due(
        &self,
        task: &Task,
        occurrence: &Occurrence,
    ) -> Result<Option<&'static str>, EngineError> {
        let found = self
            .ports
            .store
            .schedules
            .schedule(&task.tenant, &occurrence.schedule)
            .await?;
        let Some(schedule) = found else {
            return Ok(Some("its schedule was deleted"));
        };
        let step = schedule.step(occurrence.at, self.ports.clock.now());
        let skipped = match step.skipped {
            Some(why) => Some(why),
            None => self.over_pending(&task.tenant).await?,
        };
        if let Some(next) = step.next {
            self.register_occurrence(&schedule, next).await?;
        }
        Ok(skipped)
    }

    /// Occurrences still retrying pile up behind a receiver that is down: past the
    /// tenant's limit of unfinished tasks (this occurrence included), one is skipped
    /// rather than called, and its schedule goes on.
    async fn over_pending(&self, tenant: &TenantId) -> Result<Option<&'static str>, EngineError> {
        match self.admit_pending(tenant, 0).await {
            Ok(()) => Ok(None),
            Err(EngineError::Limited { .. }) => Ok(Some(OVER_PENDING)),
            Err(e) => Err(e),
        }
    }

    /// Registers one occurrence of `schedule` as a task, once per slot. Owed by a schedule
    /// the tenant already has, it is not refused for the tenant's limit of unfinished
    /// tasks: the occurrence skips when it comes due instead ([`Self::occurrence_due`]).
    async fn register_occurrence(
        &self,
        schedule: &Schedule,
        occurrence: Occurrence,
    ) -> Result<(), EngineError> {
        let mut spec = schedule.spec.clone();
        let key = occurrence.idempotency_key();
        let at = occurrence.at;
        spec.occurrence = Some(occurrence);
        let now = self.ports.clock.now();
        let task = Task::new_scheduled(
            schedule.tenant.clone(),
            spec,
            Some(key),
            String::new(),
            at.max(now),
            now,
        );
        self.register_prepared(task).await?;
        Ok(())
    }

    /// Skips a due occurrence: it ends canceled, with the reason as its last error.
    /// `None` when a concurrent write got there first.
    pub(in crate::engine) async fn skip_occurrence(
        &self,
        task: &Task,
        why: &str,
    ) -> Result<Option<Status>, EngineError> {
        let mut skipped = task
            .cancel(self.ports.clock.now())
            .map_err(EngineError::Conflict)?;
        skipped.last_error = Some(format!("skipped: {why}"));
        match self.ports.store.tasks.update(&skipped, task.version).await {
            Ok(()) => {
                self.pass_turn(task, &skipped).await;
                tracing::info!(task = %task.id, reason = why, "occurrence skipped");
                Ok(Some(skipped.status))
            }
            Err(StoreError::Conflict) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl From<ScheduleRefusal> for EngineError {
    fn from(refusal: ScheduleRefusal) -> Self {
        EngineError::ScheduleConflict(refusal)
    }
}
