//! `deliver(attempt)`: what every timer fire, in every backend, ends up calling.

use std::sync::Arc;
use std::time::Duration;

use super::flows::FlowAdmission;
use super::gate::{Entry, Lane, WorkSlot};
use super::{Engine, EngineError};
use chrono::{DateTime, Utc};

use crate::domain::limits::MAX_DESTINATION_PAUSE;
use crate::domain::{
    AttemptRef, Destination, Refusal, Status, Task, TaskSpec, Verdict, CHECK_ATTEMPT,
};
use crate::infra_retry::with_retries;
use crate::metrics::{AttemptFacts, MetricEvent};
use crate::ports::{StoreError, WebhookCall, WebhookError, WebhookResult};

/// How long a write may still be on its way after a durable timer armed ahead of it fired:
/// after the task's id was made (registration), or after the task's last write (the end
/// of the attempt before).
const WRITE_WINDOW: chrono::Duration = chrono::Duration::seconds(120);
/// The first look again comes this soon.
const RECHECK: chrono::Duration = chrono::Duration::seconds(1);
/// How soon an attempt given back for want of local resources is made again.
pub(super) const LOCAL_RETRY: chrono::Duration = chrono::Duration::seconds(1);

/// When to look again at a fire that may have overtaken its write, `age` after that write
/// began: soon at first (a write is milliseconds), then at doubling intervals, so that an
/// orphan timer (its write lost a race, say an idempotent repeat) costs a handful of looks
/// within [`WRITE_WINDOW`], not one a second.
fn recheck_after(age: chrono::Duration) -> chrono::Duration {
    age.max(RECHECK)
}

/// What a timer fire led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliverOutcome {
    /// No such task (never existed, or retention removed it).
    Unknown,
    /// The attempt was already handled, canceled, or claimed by another worker.
    Stale,
    /// The timer fired before the attempt was due; it was re-armed for the due time.
    Early,
    /// The webhook was called; the task is now in this state.
    Attempted(Status),
    /// A held task's check was made (or its hold timed out); the task is now in this
    /// state.
    Checked(Status),
    /// The call never left this machine (it ran out of open files, say): the attempt was
    /// given back, uncounted, and armed again.
    GivenBack,
    /// The task's destination asked for a pause (429 or 503 with `Retry-After`), or its
    /// flow is over a limit: the attempt was armed again for later, unclaimed and
    /// uncounted.
    Deferred,
    /// The task's destination had all its calls in flight: the attempt waits in its queue,
    /// and a delivery holding one of its slots makes it next.
    Queued,
    /// A schedule's occurrence came due but does not call (its schedule is paused or
    /// deleted, or it was missed and the schedule does not catch up): it ended canceled.
    Skipped,
    /// Deliveries are stopping (a shutdown, or the end of a Lambda's time): the attempt
    /// was not claimed and is left due, armed again at once where the timer is durable.
    Stopped,
}

impl Engine {
    /// Claims the attempt with a conditional write, calls the webhook, records the attempt
    /// and moves the task on. Safe under duplicate, early and late timer fires.
    pub async fn deliver(&self, at: AttemptRef) -> Result<DeliverOutcome, EngineError> {
        self.deliver_as(at, &self.settings.worker).await
    }

    /// The name attempts record as their worker by default.
    pub fn worker(&self) -> &str {
        &self.settings.worker
    }

    /// [`Self::deliver`], recording `worker` as the attempt's worker.
    pub async fn deliver_as(
        &self,
        at: AttemptRef,
        worker: &str,
    ) -> Result<DeliverOutcome, EngineError> {
        let slot = self.work_slot().await;
        self.deliver_in(slot, at, worker).await
    }

    /// Waits for a right to run one delivery. A caller that hands out many timer fires
    /// takes the slot before it starts each ([`Self::deliver_in`]), so that fires waiting
    /// for one cost only their ids.
    pub async fn work_slot(&self) -> WorkSlot {
        self.gate.work().await
    }

    /// [`Self::deliver_as`] in a work slot already taken. When the task's destination has
    /// all its calls in flight, the attempt joins its queue and this returns
    /// [`DeliverOutcome::Queued`] at once; otherwise this also delivers what queues up
    /// behind it before it returns.
    pub async fn deliver_in(
        &self,
        slot: WorkSlot,
        at: AttemptRef,
        worker: &str,
    ) -> Result<DeliverOutcome, EngineError> {
        self.deliver_in_then(slot, at, worker, || {}).await
    }

    /// [`Self::deliver_in`], calling `delivered` as soon as this attempt's own outcome is
    /// known: before the deliveries that queued up behind it at its destination, which may
    /// take long (a timer that keeps custody of the attempt until then lets it go).
    pub async fn deliver_in_then(
        &self,
        _slot: WorkSlot,
        at: AttemptRef,
        worker: &str,
        delivered: impl FnOnce() + Send,
    ) -> Result<DeliverOutcome, EngineError> {
        // The first read may lag the latest write (a cheaper read where the store has one).
        // That is safe: a lagging read can only show an earlier state, never a later one;
        // what it shows is claimed conditionally; and a missing task or a lost claim is read
        // again, consistently, before anything is dropped.
        let (found, consistent) = match self.ports.store.tasks.peek(&at.tenant, &at.task_id).await?
        {
            Some(task) => (Some(task), false),
            // A fire may overtake its task's write (the timer is armed first): read again,
            // consistently, before choosing the path, so that the call still takes its
            // place at its destination instead of going around the queue.
            None => (
                self.ports.store.tasks.get(&at.tenant, &at.task_id).await?,
                true,
            ),
        };
        let task = match found {
            Some(task) if task.status != Status::Held => task,
            // A held task's check goes to its own URL, ungated; a missing task is unknown.
            other => return self.deliver_found(at, other, consistent, worker).await,
        };
        let now = self.ports.clock.now();
        let (_, lane) = self.lane_of(&task).await;
        if let Some(until) = lane.paused(now) {
            return Ok(self.defer(at, until).await);
        }
        let mut lane_slot = match self.gate.enter(&lane, &at) {
            Entry::Entered(lane_slot) => lane_slot,
            Entry::Queued => return Ok(DeliverOutcome::Queued),
            Entry::Full => return Ok(self.defer(at, now + LOCAL_RETRY).await),
        };
        let outcome = self.deliver_found(at, Some(task), consistent, worker).await;
        delivered();
        while let Some(next) = lane_slot.next() {
            self.deliver_queued(next, &lane, worker).await;
        }
        outcome
    }

    /// The destination of `task`'s calls, and the lane its tenant's calls there go
    /// through, at the tenant's own limit if it has one.
    async fn lane_of(&self, task: &Task) -> (Destination, Arc<Lane>) {
        let destination = Destination::of(&task.spec.request.url);
        let limit = match self.ports.tenants.destination_limit(&task.tenant).await {
            Ok(limit) => limit,
            Err(e) => {
                tracing::warn!(tenant = %task.tenant, error = %e, "reading the tenant's destination limit failed; the server's applies");
                None
            }
        };
        let now = self.ports.clock.now();
        let lane = self.gate.lane((&task.tenant, &destination), limit, now);
        (destination, lane)
    }

    /// Delivers an attempt that waited in its destination's queue. Its task is read again
    /// (it may have changed meanwhile); an error is logged and left to the sweep, as a
    /// failed timer fire's would be.
    async fn deliver_queued(&self, at: AttemptRef, lane: &Lane, worker: &str) {
        if let Some(until) = lane.paused(self.ports.clock.now()) {
            self.defer(at, until).await;
            return;
        }
        let (task, number) = (at.task_id, at.attempt);
        let delivered = match self.ports.store.tasks.peek(&at.tenant, &at.task_id).await {
            Ok(found) => self.deliver_found(at, found, false, worker).await,
            Err(e) => Err(e.into()),
        };
        if let Err(e) = delivered {
            tracing::error!(task = %task, attempt = number, error = %e, "queued delivery failed");
        }
    }

    /// Delivers attempt `at` of the task as first read (`found`, by a `consistent` read or
    /// not), reading it again consistently where that read may have lagged.
    async fn deliver_found(
        &self,
        at: AttemptRef,
        mut found: Option<Task>,
        mut consistent: bool,
        worker: &str,
    ) -> Result<DeliverOutcome, EngineError> {
        loop {
            match found {
                Some(task) => match self.attempt(at.clone(), task, worker).await? {
                    Some(outcome) => return Ok(outcome),
                    None if consistent => return Ok(DeliverOutcome::Stale),
                    None => consistent = true,
                },
                None if consistent => return Ok(self.unknown(at).await),
                None => consistent = true,
            }
            found = self.ports.store.tasks.get(&at.tenant, &at.task_id).await?;
        }
    }

    /// Puts off an attempt whose destination asked for a pause (or whose queue is full),
    /// or whose flow is over a limit: armed again for `until`, unclaimed and uncounted.
    async fn defer(&self, at: AttemptRef, until: DateTime<Utc>) -> DeliverOutcome {
        self.put_off(at, until).await;
        self.record(MetricEvent::Deferred);
        DeliverOutcome::Deferred
    }

    /// Delivers attempt `at` of `task` as read; `None` if the claim lost to a concurrent
    /// write (or to the read's lag).
    async fn attempt(
        &self,
        at: AttemptRef,
        task: Task,
        worker: &str,
    ) -> Result<Option<DeliverOutcome>, EngineError> {
        if let Some(stopped) = self.past_stop_line(&at, &task).await {
            return Ok(Some(stopped));
        }
        if task.status == Status::Held {
            return self.check_hold(at, task).await;
        }
        if let Some(occurrence) = task.spec.occurrence.as_ref() {
            let due = task
                .next_attempt_at
                .is_some_and(|due| due <= self.ports.clock.now());
            if due && task.is_untried() && at.attempt == 1 {
                if let Some(why) = self.occurrence_due(&task, occurrence).await? {
                    let skipped = self.skip_occurrence(&task, why).await?;
                    return Ok(skipped.map(|_| DeliverOutcome::Skipped));
                }
            }
        }
        // From the claim to the call's end, the task holds one of its destination's call
        // slots: waiting for one happens before the lease starts.
        let (destination, lane) = self.lane_of(&task).await;
        let call_slot = lane.call_slot().await;
        let started = self.ports.clock.now();
        let lease = task.spec.timeout.saturating_add(self.settings.lease_margin);
        let claimed = match task.claim(at.attempt, started, lease) {
            Ok(claimed) => claimed,
            Err(Refusal::NotDue(due)) => {
                self.arm(at, due).await;
                return Ok(Some(DeliverOutcome::Early));
            }
            // The timer (or the message it is) is the custody of the attempt: if the worker
            // holding the lease dies, this re-armed fire takes the attempt over.
            Err(Refusal::Leased(until)) => {
                self.put_off(at, until).await;
                return Ok(Some(DeliverOutcome::Stale));
            }
            Err(Refusal::StaleAttempt(_)) => return Ok(Some(DeliverOutcome::Stale)),
            Err(Refusal::AttemptAhead(_)) => {
                self.ahead(at, &task).await;
                return Ok(Some(DeliverOutcome::Stale));
            }
            Err(other) => return Err(EngineError::Conflict(other)),
        };
        if task.status == Status::Delivering {
            tracing::warn!(task = %at.task_id, attempt = at.attempt, "lease expired mid-delivery; taking the attempt over");
        }
        let lease_until = started + chrono::Duration::from_std(lease).unwrap_or(RECHECK);
        let flow_slot = match self.admit_flow(&at, &task, lease_until).await? {
            FlowAdmission::Go(slot) => slot,
            FlowAdmission::Wait(until) => return Ok(Some(self.defer(at, until).await)),
        };
        let claim = self.ports.store.tasks.claim(&claimed, task.version).await;
        if let (Err(_), Some(slot)) = (&claim, &flow_slot) {
            self.free_flow_slot(&task, slot).await;
        }
        match claim {
            Ok(()) => {}
            Err(StoreError::Conflict) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let claimed = Arc::new(claimed);
        let _claimed = self.stopping.hold(&claimed);

        self.record(MetricEvent::DeliveryStarted);
        let result = self.call(&claimed).await;
        drop(call_slot);
        if let Some(slot) = &flow_slot {
            self.free_flow_slot(&task, slot).await;
        }
        self.record(MetricEvent::DeliveryFinished);
        if let Some(WebhookError::Local(why)) = &result.error {
            let again = self.ports.clock.now() + LOCAL_RETRY;
            let outcome = self.give_back(&claimed, again, why).await?;
            if outcome == DeliverOutcome::GivenBack {
                self.record(MetricEvent::GivenBack);
            }
            return Ok(Some(outcome));
        }
        let finished = self.ports.clock.now();
        self.pause_if_asked(&lane, &destination, &result, finished);
        let verdict = judge(&result, &claimed);
        let mut next = claimed
            .after_attempt(&verdict, finished, self.ports.random.draw())
            .map_err(EngineError::Conflict)?;
        let mut record =
            claimed.attempt_record(&next, started, finished, result.status, result.excerpt);
        record.worker = Some(worker.to_string());
        if let Some(notice) = claimed.notice(&next) {
            next = self.alert_before_write(next, notice, &record).await;
        }
        if next.status == Status::Failed {
            next = self.dead_letter_before_write(next).await;
        }
        self.arm_before_write(&mut next).await;
        match self
            .ports
            .store
            .tasks
            .finish_attempt(&record, &next, claimed.version)
            .await
        {
            Ok(()) => {}
            // Our lease ran out and another worker took the attempt over; its result stands.
            Err(StoreError::Conflict) => return Ok(Some(DeliverOutcome::Stale)),
            Err(e) => return Err(e.into()),
        }
        self.ports
            .metrics
            .record(MetricEvent::Attempt(AttemptFacts {
                task: at.task_id,
                attempt: at.attempt,
                outcome: record.outcome,
                http_status: record.status_code,
                lateness_ms: record.lateness_ms,
                duration_ms: record.duration_ms,
                started_at: record.started_at,
            }));
        if next.status == Status::Failed {
            tracing::warn!(
                task = %at.task_id, tenant = %next.tenant, attempts = next.attempts_in_round(),
                error = next.last_error.as_deref().unwrap_or(""),
                dead_letter_sent = !next.dead_letter_pending,
                "task failed; dead-lettered for manual handling"
            );
        }
        self.arm_after_write(&next).await;
        Ok(Some(DeliverOutcome::Attempted(next.status)))
    }

    /// A 429 or 503 with `Retry-After` speaks for the receiver, not for one task: the whole
    /// destination is paused for that long (at most [`MAX_DESTINATION_PAUSE`]).
    fn pause_if_asked(
        &self,
        lane: &Lane,
        destination: &Destination,
        result: &WebhookResult,
        now: DateTime<Utc>,
    ) {
        let (Some(429 | 503), Some(wait)) = (result.status, result.retry_after) else {
            return;
        };
        let wait = chrono::Duration::from_std(wait.min(MAX_DESTINATION_PAUSE))
            .unwrap_or(chrono::Duration::zero());
        tracing::info!(%destination, pause_ms = wait.num_milliseconds(), "destination asked for a pause");
        lane.pause(now + wait);
    }

    /// Gives back a claimed attempt: no attempt is recorded and none counted; the task is
    /// due again at `again`, for the same attempt. For a call that never left this machine,
    /// and for one still under way when a shutdown's grace ends.
    pub(super) async fn give_back(
        &self,
        claimed: &Task,
        again: DateTime<Utc>,
        why: &str,
    ) -> Result<DeliverOutcome, EngineError> {
        let now = self.ports.clock.now();
        let mut next = claimed.unclaim(again, now).map_err(EngineError::Conflict)?;
        tracing::warn!(task = %claimed.id, attempt = claimed.attempt, why, "attempt given back, uncounted");
        self.arm_before_write(&mut next).await;
        match self.ports.store.tasks.update(&next, claimed.version).await {
            Ok(()) => {}
            // Our lease ran out and another worker took the attempt over.
            Err(StoreError::Conflict) => return Ok(DeliverOutcome::Stale),
            Err(e) => return Err(e.into()),
        }
        self.arm_after_write(&next).await;
        Ok(DeliverOutcome::GivenBack)
    }

    /// A fire for a task the store does not have. With a durable timer, armed before the
    /// task is written, the write may still be on its way: a young task's first timer (its
    /// first attempt's, or a held task's check) is looked at again a little later instead
    /// of being dropped.
    async fn unknown(&self, at: AttemptRef) -> DeliverOutcome {
        let now = self.ports.clock.now();
        let age = now.signed_duration_since(at.task_id.created_at());
        // A task's first timer: its first attempt's, or a held task's check.
        let first = matches!(at.attempt, 1 | CHECK_ATTEMPT);
        if self.ports.timer.durable() && first && age < WRITE_WINDOW {
            tracing::debug!(task = %at.task_id, "timer fired before its task was stored; looking again");
            self.arm(at, now + recheck_after(age)).await;
        } else {
            tracing::info!(task = %at.task_id, attempt = at.attempt, "timer fired for an unknown task");
        }
        DeliverOutcome::Unknown
    }

    /// A fire for an attempt after the task's current one: with a durable timer, armed
    /// before the write that finishes the attempt before it, that write may still be on its
    /// way. While the task was written recently, it is looked at again a little later; a
    /// timer whose write never happened (it lost a race) is dropped after that.
    async fn ahead(&self, at: AttemptRef, task: &Task) {
        let now = self.ports.clock.now();
        let age = now.signed_duration_since(task.updated_at);
        if self.ports.timer.durable() && age < WRITE_WINDOW {
            self.arm(at, now + recheck_after(age)).await;
        }
    }

    async fn call(&self, task: &Task) -> WebhookResult {
        self.send_signed(task.attempt_ref(task.attempt), &task.spec)
            .await
    }

    /// Makes the call `spec` describes, signed with the tenant's secret, as attempt `at`
    /// (a delivery attempt, or a held task's check).
    pub(super) async fn send_signed(&self, at: AttemptRef, spec: &TaskSpec) -> WebhookResult {
        let secret = match self.ports.tenants.signing_secret(&at.tenant).await {
            Ok(Some(secret)) => secret,
            Ok(None) => {
                return transport_error(format!("tenant {} has no signing secret", at.tenant))
            }
            Err(e) => return transport_error(e.to_string()),
        };
        let call = WebhookCall {
            attempt: at,
            spec,
            secret: &secret,
            timestamp: self.ports.clock.now(),
        };
        self.ports.webhooks.send(&call).await
    }

    /// Sends the dead letter of a task that just failed, before the task is written: the
    /// task is then written with its letter already acknowledged, or, if the queue stays
    /// down, still pending for the sweep to resend. (A crash in between re-runs the attempt
    /// after its lease, and may send a second letter with the same task id.)
    async fn dead_letter_before_write(&self, failed: Task) -> Task {
        if !self.send_dead_letter(&failed).await {
            return failed;
        }
        match failed.dead_letter_sent(self.ports.clock.now()) {
            Ok(done) => done,
            Err(_) => failed,
        }
    }

    /// Sends a task's dead letter (retried); false if the queue stayed down.
    async fn send_dead_letter(&self, task: &Task) -> bool {
        let letter = task.dead_letter();
        let sent = with_retries(
            "dead-letter send",
            self.settings.dead_letter_tries,
            Duration::from_millis(200),
            || self.ports.dead_letters.send(&letter),
        )
        .await;
        if let Err(e) = &sent {
            tracing::error!(task = %task.id, error = %e, "dead letter not sent; the sweeper will retry");
        }
        sent.is_ok()
    }

    /// The sweep's resend of a stored task's pending dead letter, then the flag is
    /// cleared. Returns false if the queue is still down.
    pub(super) async fn dead_letter(&self, task: Task) -> Result<bool, EngineError> {
        if !self.send_dead_letter(&task).await {
            return Ok(false);
        }
        // Refused: a retry moved the task on meanwhile; nothing is left to acknowledge.
        let Ok(done) = task.dead_letter_sent(self.ports.clock.now()) else {
            return Ok(true);
        };
        match self.ports.store.tasks.update(&done, task.version).await {
            Ok(()) | Err(StoreError::Conflict) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}

/// How the response (or its absence) is judged, by the task's own rules.
fn judge(result: &WebhookResult, task: &Task) -> Verdict {
    let policy = &task.spec.retry;
    match (&result.error, result.status) {
        (Some(WebhookError::Refused(why)), _) => {
            Verdict::Fail(format!("destination refused: {why}"))
        }
        (Some(WebhookError::Transport(why) | WebhookError::Local(why)), _) => Verdict::Retry {
            error: why.clone(),
            retry_after: None,
        },
        (None, Some(code)) if (200..300).contains(&code) && result.body_matches => Verdict::Success,
        (None, Some(code)) if (200..300).contains(&code) => Verdict::Retry {
            error: format!("HTTP {code} but the body did not match expect_body"),
            retry_after: None,
        },
        (None, Some(code)) if policy.is_permanent(code) => {
            Verdict::Fail(format!("HTTP {code} (permanent)"))
        }
        (None, Some(code)) => Verdict::Retry {
            error: format!("HTTP {code}"),
            retry_after: result.retry_after,
        },
        (None, None) => Verdict::Retry {
            error: "no response".into(),
            retry_after: None,
        },
    }
}

fn transport_error(why: String) -> WebhookResult {
    WebhookResult {
        error: Some(WebhookError::Transport(why)),
        ..WebhookResult::default()
    }
}
