//! One attempt, as the steps it goes through in order:
//!
//! 1. [`Engine::check_stop_line`]: no call starts that could not end before the stop line;
//! 2. a held task's timer is its check ([`Engine::check_hold`]), not a call;
//! 3. [`Engine::take_occurrence`]: a schedule's due occurrence registers the next one,
//!    and may be skipped;
//! 4. [`Engine::take_lane`]: one of the destination's call slots, waited for before the
//!    lease starts; then the stop line again, which the wait may have outlasted (a
//!    shutdown begun meanwhile starts no call);
//! 5. [`Engine::take_claim`]: the lifecycle's claim, in memory (an early, leased, stale or
//!    ahead fire ends here);
//! 6. [`Engine::take_slots`]: its tenant's limit at the destination where every instance
//!    shares it, the task's flow limits, and the destination's circuit breaker (an open
//!    one puts the attempt off, using up no attempt, unless this call is its probe);
//! 7. [`Engine::write_claim`]: the claim's conditional write (a probe claimed for a call
//!    that is not made is given back); then the claim is held for a shutdown's drain to
//!    see, and a drain begun since the stop line's check gives the attempt back uncalled;
//!    a call that could no longer end within the lease is not made (put off to the lease's
//!    end);
//! 8. [`Engine::call_claimed`]: the call, with the slots freed when it ends;
//! 9. [`Engine::give_back_local`]: a call that never left this machine is given back;
//! 10. [`Engine::record_verdict`]: the verdict on the response, and the attempt's record;
//! 11. [`Engine::alert_if_owed`]: a notice the attempt owes becomes an alert task;
//! 12. [`Engine::dead_letter_if_failed`]: a failed task's dead letter;
//! 13. [`Engine::arm_and_write`]: the next attempt armed around the attempt's write;
//! 14. [`Engine::note_breaker`]: the call's health, told to the destination's breaker.
//!
//! Each step returns a [`Step`]: go on with what it made, read the task again, or done.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::breaker_gate::breaker_health;
use super::call::judge;
use super::deliver::{Place, LOCAL_RETRY};
use super::destination_gate::HeldSlots;
use super::flow_gate::{FlowAdmission, FlowSlot};
use super::gate::CallSlot;
use super::outcome::{proceed, DeliverOutcome, Ended, Step};
use crate::domain::{
    Attempt, AttemptRecord, AttemptRef, Refusal, SpanId, Status, Task, TraceParent,
};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::metrics::{AttemptFacts, MetricEvent};
use crate::ports::{StoreError, WebhookError, WebhookResult};

/// Whether a call of `claimed` started at `now` ends (by its timeout) within the lease.
fn call_fits_lease(now: DateTime<Utc>, claimed: &Task, lease_until: DateTime<Utc>) -> bool {
    chrono::Duration::from_std(claimed.spec.timeout)
        .ok()
        .and_then(|timeout| now.checked_add_signed(timeout))
        .is_some_and(|ends| ends <= lease_until)
}

/// A lease that cannot be told in chrono's terms is taken as this long.
const LEASE_FALLBACK: chrono::Duration = chrono::Duration::seconds(1);

/// The place a call takes at its destination: held from the claim to the call's end.
pub(in crate::engine) struct Seat {
    pub(in crate::engine) place: Place,
    slot: CallSlot,
}

/// A claim made in memory, not yet written.
#[derive(Debug)]
pub(in crate::engine) struct Claim {
    pub(in crate::engine) claimed: Task,
    /// When the attempt started (its lease counts from here).
    pub(in crate::engine) started: DateTime<Utc>,
    pub(in crate::engine) lease_until: DateTime<Utc>,
    /// The version of the task as read: the claim's write is conditional on it.
    pub(in crate::engine) read: u64,
}

impl Engine {
    /// Delivers attempt `at` of `task` as read, step by step; [`Step::Reread`] if the
    /// task as read was not the task as stored (a lost claim, or a lagging read).
    pub(super) async fn attempt(
        &self,
        at: AttemptRef,
        task: Task,
        worker: &str,
    ) -> Result<Ended, EngineError> {
        proceed!(self.check_stop_line(&at, &task).await?);
        if task.status == Status::Held {
            return self.check_hold(at, task).await;
        }
        proceed!(self.take_occurrence(&at, &task).await?);
        proceed!(self.take_turn(&at, &task).await?);
        let seat = self.take_lane(&at, &task).await;
        proceed!(self.check_stop_line(&at, &task).await?);
        let claim = proceed!(self.take_claim(&at, &task).await?);
        let lease_until = claim.lease_until;
        let slots = proceed!((self.take_slots(&at, &task, &seat.place, lease_until)).await?);
        let probe = slots.probe;
        let written = self.write_claim(&claim, &slots).await;
        if !matches!(written, Ok(Step::Continue(()))) {
            self.release_probe(&task, &seat.place, probe).await;
        }
        proceed!(written?);
        let Claim {
            claimed, started, ..
        } = claim;
        let claimed = Arc::new(claimed);
        // Until the attempt is written, a shutdown's drain may give it back.
        let _held = self.stopping.hold(&claimed);
        // A drain begun after the stop line's check and before the hold did not see this
        // attempt, and waits for no call of it: none is made.
        if self.stopping.halted() {
            return self.give_back_uncalled(&claimed, &seat.place, &slots).await;
        }
        // Steps that took so long (a slow write, a starved machine) that the call could
        // no longer end within the lease make no call: past its lease the attempt is any
        // delivery's to take over, and two would call at once. It fires again then.
        if !call_fits_lease(self.ports.clock.now(), &claimed, lease_until) {
            tracing::warn!(task = %claimed.id, attempt = claimed.attempt, "the claim took longer than its lease allows for; the attempt is made when its lease ends");
            self.free_slots(&claimed, &slots).await;
            self.release_probe(&claimed, &seat.place, slots.probe).await;
            self.put_off_in_place(at.clone(), lease_until).await?;
            return Ok(Step::Done(DeliverOutcome::Stale));
        }
        let call_started = self.ports.clock.now();
        // The attempt's span, in the task's trace: the receiver is told it is the parent.
        let traced = (claimed.spec.trace.clone()).map(|trace| (trace, SpanId::random()));
        let parent = traced
            .as_ref()
            .map(|(trace, span)| trace.for_attempt(*span));
        let result = (self.call_claimed(&claimed, seat.slot, slots, parent.as_ref())).await;
        let health = breaker_health(&result);
        if health.is_none() {
            // The call never reached the receiver: the probe was not made.
            self.release_probe(&claimed, &seat.place, probe).await;
        }
        proceed!(self.give_back_local(&claimed, &result).await?);
        let finished = self.ports.clock.now();
        let Place {
            lane, destination, ..
        } = &seat.place;
        self.pause_if_asked(lane, destination, &result, finished);
        self.note_call_time(&claimed.tenant, destination, (call_started, finished));
        let verdict = self.record_verdict(&claimed, result, (started, finished), worker);
        if verdict.is_err() {
            self.release_probe(&claimed, &seat.place, probe).await;
        }
        let (next, record) = verdict?;
        if let Some((trace, span)) = &traced {
            self.export_attempt(&claimed, trace, *span, &record);
        }
        let next = self.alert_if_owed(&claimed, next, &record).await;
        let next = self.dead_letter_if_failed(next).await;
        let moved_on = claimed.spec.order.is_some().then(|| next.clone());
        let ended = self.arm_and_write(&at, &claimed, next, &record).await;
        if let (Some(next), Ok(Step::Done(DeliverOutcome::Attempted(_)))) = (&moved_on, &ended) {
            self.pass_turn(&claimed, next).await;
        }
        // After the attempt's write: the breaker's reads and writes never hold the lease.
        if let Some(health) = health {
            self.note_breaker(&claimed, &seat.place, health, probe)
                .await;
        }
        ended
    }

    /// A schedule's occurrence whose first attempt is due registers the occurrence after
    /// it, and ends [`DeliverOutcome::Skipped`] where it does not call (its schedule is
    /// paused or deleted, or it was missed, or its tenant has too much unfinished).
    pub(in crate::engine) async fn take_occurrence(
        &self,
        at: &AttemptRef,
        task: &Task,
    ) -> Result<Step<()>, EngineError> {
        let Some(occurrence) = task.spec.occurrence.as_ref() else {
            return Ok(Step::Continue(()));
        };
        let due = (task.next_attempt_at).is_some_and(|due| due <= self.ports.clock.now());
        if !(due && task.is_untried() && at.attempt == Attempt::Delivery(1)) {
            return Ok(Step::Continue(()));
        }
        let Some(why) = self.occurrence_due(task, occurrence).await? else {
            return Ok(Step::Continue(()));
        };
        Ok(match self.skip_occurrence(task, why).await? {
            Some(_) => Step::Done(DeliverOutcome::Skipped),
            None => Step::Reread,
        })
    }

    /// One of the call slots of the task's destination. From the claim to the call's end
    /// the task holds it: waiting for one happens before the lease starts.
    pub(in crate::engine) async fn take_lane(&self, at: &AttemptRef, task: &Task) -> Seat {
        let place = self.place_of(task).await;
        let slot = place.lane.call_slot(at).await;
        Seat { place, slot }
    }

    /// The lifecycle's claim of attempt `at`, made in memory. A fire the claim refuses
    /// ends here: an early one is armed again for its time, one whose attempt another
    /// worker holds is put off until that lease ends, and one ahead of the task's attempt
    /// is looked at again while its write may still be on its way.
    pub(in crate::engine) async fn take_claim(
        &self,
        at: &AttemptRef,
        task: &Task,
    ) -> Result<Step<Claim>, EngineError> {
        let started = self.ports.clock.now();
        let lease = task.spec.timeout.saturating_add(self.settings.lease_margin);
        let claimed = match task.claim(at.attempt, started, lease) {
            Ok(claimed) => claimed,
            Err(Refusal::NotDue(due)) => {
                self.arm_in_place(at.clone(), due).await?;
                return Ok(Step::Done(DeliverOutcome::Early));
            }
            // The timer (or the message it is) is the custody of the attempt: if the worker
            // holding the lease dies, this re-armed fire takes the attempt over.
            Err(Refusal::Leased(until)) => {
                self.put_off_in_place(at.clone(), until).await?;
                return Ok(Step::Done(DeliverOutcome::Stale));
            }
            Err(Refusal::StaleAttempt(_)) => return Ok(Step::Done(DeliverOutcome::Stale)),
            Err(Refusal::AttemptAhead(_)) => {
                self.ahead(at.clone(), task).await?;
                return Ok(Step::Done(DeliverOutcome::Stale));
            }
            Err(other) => return Err(EngineError::Conflict(other)),
        };
        if task.status == Status::Delivering {
            tracing::warn!(task = %at.task_id, attempt = %at.attempt, "lease expired mid-delivery; taking the attempt over");
        }
        let lease_until = started + chrono::Duration::from_std(lease).unwrap_or(LEASE_FALLBACK);
        Ok(Step::Continue(Claim {
            claimed,
            started,
            lease_until,
            read: task.version,
        }))
    }

    /// The task's flow limits, if it has a flow: go with the flow's slot (where it limits
    /// parallelism), or [`DeliverOutcome::Deferred`] until the flow allows.
    pub(in crate::engine) async fn pass_flow_gate(
        &self,
        at: &AttemptRef,
        task: &Task,
        lease_until: DateTime<Utc>,
    ) -> Result<Step<Option<FlowSlot>>, EngineError> {
        Ok(match self.admit_flow(at, task, lease_until).await? {
            FlowAdmission::Go(slot) => Step::Continue(slot),
            FlowAdmission::Wait(until) => Step::Done(self.defer(at.clone(), until).await?),
        })
    }

    /// Writes the claim, conditionally on the version read: [`Step::Reread`] when another
    /// write got there first. A claim not written frees the slots it took.
    pub(in crate::engine) async fn write_claim(
        &self,
        claim: &Claim,
        slots: &HeldSlots,
    ) -> Result<Step<()>, EngineError> {
        let claimed = &claim.claimed;
        let written = self.ports.store.tasks.claim(claimed, claim.read).await;
        if written.is_err() {
            self.free_slots(claimed, slots).await;
        }
        match written {
            Ok(()) => Ok(Step::Continue(())),
            Err(StoreError::Conflict) => Ok(Step::Reread),
            Err(e) => Err(e.into()),
        }
    }

    /// Calls the webhook for the claimed attempt; the destination's call slot and the
    /// shared slots are freed as soon as the call ends.
    pub(in crate::engine) async fn call_claimed(
        &self,
        claimed: &Task,
        call_slot: CallSlot,
        slots: HeldSlots,
        parent: Option<&TraceParent>,
    ) -> WebhookResult {
        self.record(MetricEvent::DeliveryStarted);
        let at = claimed.attempt_ref(claimed.attempt);
        let result = self.send_signed(at, &claimed.spec, parent).await;
        drop(call_slot);
        self.free_slots(claimed, &slots).await;
        self.record(MetricEvent::DeliveryFinished);
        result
    }

    /// A claimed attempt whose call a shutdown forbade before it started: its slots and
    /// its probe freed, and the attempt given back, uncounted, due at once.
    async fn give_back_uncalled(
        &self,
        claimed: &Task,
        place: &Place,
        slots: &HeldSlots,
    ) -> Result<Ended, EngineError> {
        // Given back first: the drain may be giving back what it holds meanwhile, and
        // the sooner this write lands, the likelier the drain finds it settled.
        let now = self.ports.clock.now();
        let outcome = self.give_back(claimed, now, "the server is stopping").await;
        if matches!(outcome, Ok(DeliverOutcome::GivenBack)) {
            self.stopping.gave_back_uncalled(claimed.id);
        }
        self.free_slots(claimed, slots).await;
        self.release_probe(claimed, place, slots.probe).await;
        Ok(Step::Done(outcome?))
    }

    /// A call that never left this machine (it ran out of open files, say) is no attempt:
    /// it is given back, uncounted, and made again soon.
    pub(in crate::engine) async fn give_back_local(
        &self,
        claimed: &Task,
        result: &WebhookResult,
    ) -> Result<Step<()>, EngineError> {
        let Some(WebhookError::Local(why)) = &result.error else {
            return Ok(Step::Continue(()));
        };
        let again = self.ports.clock.now() + LOCAL_RETRY;
        let outcome = self.give_back(claimed, again, why).await?;
        if outcome == DeliverOutcome::GivenBack {
            self.record(MetricEvent::GivenBack);
        }
        Ok(Step::Done(outcome))
    }

    /// Judges the response by the task's rules, and makes the task's next state and the
    /// attempt's record (`span`: when the attempt started and finished).
    pub(in crate::engine) fn record_verdict(
        &self,
        claimed: &Task,
        result: WebhookResult,
        span: (DateTime<Utc>, DateTime<Utc>),
        worker: &str,
    ) -> Result<(Task, AttemptRecord), EngineError> {
        let (started, finished) = span;
        let verdict = judge(&result, claimed);
        let next = claimed
            .after_attempt(&verdict, finished, self.ports.random.draw())
            .map_err(EngineError::Conflict)?;
        let mut record =
            claimed.attempt_record(&next, started, finished, result.status, result.excerpt);
        record.worker = Some(worker.to_string());
        Ok((next, record))
    }

    /// Raises the alert the attempt owes (a failure, say, where the task asks for one)
    /// before the task is written.
    pub(in crate::engine) async fn alert_if_owed(
        &self,
        claimed: &Task,
        next: Task,
        record: &AttemptRecord,
    ) -> Task {
        match claimed.notice(&next) {
            Some(notice) => self.alert_before_write(next, notice, record).await,
            None => next,
        }
    }

    /// Sends a task's dead letter if the attempt failed it, before the write.
    pub(in crate::engine) async fn dead_letter_if_failed(&self, next: Task) -> Task {
        match next.status {
            Status::Failed => self.dead_letter_before_write(next).await,
            _ => next,
        }
    }

    /// Arms the next attempt around the attempt's write (before it for a durable timer,
    /// after it for an in-memory one), and writes the attempt and the task's next state
    /// conditionally: [`DeliverOutcome::Stale`] if the lease ran out and another worker
    /// took the attempt over (its result stands).
    pub(in crate::engine) async fn arm_and_write(
        &self,
        at: &AttemptRef,
        claimed: &Task,
        mut next: Task,
        record: &AttemptRecord,
    ) -> Result<Ended, EngineError> {
        self.arm_before_write(&mut next).await;
        let written = self
            .ports
            .store
            .tasks
            .finish_attempt(record, &next, claimed.version);
        match written.await {
            Ok(()) => {}
            Err(StoreError::Conflict) => return Ok(Step::Done(DeliverOutcome::Stale)),
            Err(e) => return Err(e.into()),
        }
        self.record(MetricEvent::Attempt(AttemptFacts {
            task: at.task_id,
            attempt: record.number,
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
        Ok(Step::Done(DeliverOutcome::Attempted(next.status)))
    }

    /// Gives back a claimed attempt: no attempt is recorded and none counted; the task is
    /// due again at `again`, for the same attempt. For a call that never left this machine,
    /// and for one still under way when a shutdown's grace ends.
    pub(in crate::engine) async fn give_back(
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
}
