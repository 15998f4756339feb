//! Replace-by-key (debounce): a registration with `on_key: replace` takes the place of the
//! key's pending task instead of adding one. While none of that task's attempts has begun,
//! it is replaced in one conditional write (its spec, and its fire time, which moves to the
//! new registration's but never past the first registration plus `max_delay`); once one
//! has begun, the registration makes a new task, which becomes the key's newest in one
//! atomic write with it. Either write loses to a concurrent one and is tried again, so a
//! burst of registrations leaves exactly one pending task.

use std::time::Duration;

use super::register::{NewTask, Registration};
use crate::domain::invalid::within;
use crate::domain::limits::{MAX_SCHEDULE_AHEAD, MIN_STEP};
use crate::domain::time::checked_add;
use crate::domain::{BusinessKey, Invalid, Task, TenantId, TraceParent};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::metrics::MetricEvent;
use crate::ports::StoreError;

/// A registration as a client asks for it: a task added, or the pending task of its key
/// replaced.
#[derive(Clone, Debug)]
pub enum Submission {
    Add(NewTask),
    Replace(Replacement),
}

/// A registration that replaces its key's pending task. Made only by
/// [`Submission::replacing`], so it has a key, and neither an idempotency key nor a hold.
#[derive(Clone, Debug)]
pub struct Replacement {
    task: NewTask,
    key: BusinessKey,
    max_delay: Option<Duration>,
}

impl Replacement {
    /// The replaced task fires at most this long after the first registration it
    /// replaced, however often it is replaced.
    pub fn max_delay(&self) -> Option<Duration> {
        self.max_delay
    }
}

impl Submission {
    /// This registration, made in the caller's trace (if it sent one).
    pub fn traced(self, caller: Option<&TraceParent>) -> Self {
        match self {
            Submission::Add(task) => Submission::Add(task.traced(caller)),
            Submission::Replace(r) => Submission::Replace(Replacement {
                task: r.task.traced(caller),
                ..r
            }),
        }
    }

    /// `task` replacing its key's pending task: it needs a key, and takes neither an
    /// idempotency key (a repeat replaces the task again) nor a hold.
    pub fn replacing(task: NewTask, max_delay: Option<Duration>) -> Result<Self, Invalid> {
        let Some(key) = task.spec.key.clone() else {
            return Err(Invalid::new(
                "key",
                "`on_key: replace` replaces the task of a key: give `key`",
            ));
        };
        if task.idempotency_key.is_some() {
            return Err(Invalid::new(
                "idempotency_key",
                "not with `on_key: replace` (a repeat replaces the task again)",
            ));
        }
        if task.spec.hold.is_some() {
            return Err(Invalid::new("hold", "not with `on_key: replace`"));
        }
        let max_delay = max_delay
            .map(|d| within("max_delay", d, MIN_STEP, MAX_SCHEDULE_AHEAD))
            .transpose()?;
        Ok(Submission::Replace(Replacement {
            task,
            key,
            max_delay,
        }))
    }
}

impl Engine {
    /// Registers what a client submitted: a task added ([`Engine::register`]), or put in
    /// the place of its key's pending task.
    pub async fn submit(
        &self,
        tenant: &TenantId,
        submission: Submission,
    ) -> Result<Registration, EngineError> {
        match submission {
            Submission::Add(task) => self.register(tenant, task).await,
            Submission::Replace(replacement) => self.replace_by_key(tenant, replacement).await,
        }
    }

    /// Registers a task under its key, replacing the key's pending task if it has one
    /// (`created: false` then, and the task is the replaced one, as it now stands).
    async fn replace_by_key(
        &self,
        tenant: &TenantId,
        replacement: Replacement,
    ) -> Result<Registration, EngineError> {
        let Replacement {
            task: new,
            key,
            max_delay,
        } = replacement;
        let fresh = self.prepare(tenant, new).await?;
        loop {
            let newest = self.ports.store.keyed.keyed(tenant, &key).await?;
            if let Some(old) = &newest {
                if let Some(done) = self.try_replace(old, &fresh, max_delay).await? {
                    return Ok(done);
                }
                if old.is_untried() {
                    continue; // a concurrent write changed it: read it again
                }
            }
            self.admit_pending(tenant, 1).await?;
            let mut task = fresh.clone();
            let due = task.next_attempt_at.unwrap_or(task.created_at);
            if let Some(latest) = max_delay.and_then(|d| checked_add(task.created_at, d)) {
                task.next_attempt_at = Some(due.min(latest));
                task.round_started_at = due.min(latest);
            }
            self.take_place(&mut task).await?;
            self.arm_before_write(&mut task).await;
            let created = (self.ports.store.keyed)
                .create_keyed(&task, newest.map(|t| t.id))
                .await;
            if matches!(created, Err(StoreError::Conflict)) {
                self.give_up_place(&task).await;
            }
            match created {
                Ok(()) => {
                    self.arm_after_write(&task).await;
                    self.record(MetricEvent::Registered { count: 1 });
                    return Ok(Registration {
                        task,
                        created: true,
                    });
                }
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Replaces `old` with `fresh` if none of its attempts has begun. `Ok(None)`: it cannot
    /// be replaced (it has been attempted), or a concurrent write changed it first.
    async fn try_replace(
        &self,
        old: &Task,
        fresh: &Task,
        max_delay: Option<Duration>,
    ) -> Result<Option<Registration>, EngineError> {
        let now = self.ports.clock.now();
        let latest = max_delay.and_then(|d| checked_add(old.created_at, d));
        let due = fresh.next_attempt_at.unwrap_or(now);
        let Ok(mut next) = old.replace(fresh.spec.clone(), due, latest, now) else {
            return Ok(None);
        };
        // A replacement keeps the replaced task's place in its key's line.
        next.spec.order = old.spec.order.clone();
        // A fire time that moves later needs no timer of its own: the one armed for the
        // earlier time fires early and is armed again for the task's time then. So a burst
        // of replacements costs no timer each (on AWS, no queue message each).
        let later = next.next_attempt_at >= old.next_attempt_at;
        let covered = later && (old.timer_armed || !self.ports.timer.durable());
        if covered {
            next.timer_armed = old.timer_armed;
        } else {
            self.arm_before_write(&mut next).await;
        }
        match self
            .ports
            .store
            .keyed
            .replace_keyed(&next, old.version)
            .await
        {
            Ok(()) => {
                tracing::debug!(task = %next.id, "task replaced by a newer registration of its key");
                if !covered {
                    self.arm_after_write(&next).await;
                }
                Ok(Some(Registration {
                    task: next,
                    created: false,
                }))
            }
            Err(StoreError::Conflict) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
