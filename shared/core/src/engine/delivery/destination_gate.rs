//! A tenant's limit of calls at once to one destination, held across every instance that
//! shares the store ([`crate::ports::DestinationSlots`]): checked before the task's flow
//! limits and the claim. Only a tenant with a limit of its own pays for it (a slot's
//! read and two writes a call); the server's default stays per instance, in its lanes.
//! A task over the limit is put off, unclaimed, and looks again shortly.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::deliver::Place;
use super::flow_gate::FlowSlot;
use super::outcome::Step;
use crate::domain::{AttemptRef, Destination, Task};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::ports::SlotHolder;

/// Takes tried, this far apart, before a task is put off for want of a slot.
const TAKE_TRIES: u32 = 3;
const TAKE_GAP: Duration = Duration::from_millis(200);
/// How soon a task put off for want of a destination slot looks again.
const SLOT_RETRY: chrono::Duration = chrono::Duration::seconds(2);

/// A held slot at a destination, freed once the call ends.
pub(in crate::engine) struct DestinationSlot {
    destination: Destination,
    holder: SlotHolder,
}

/// The shared slots an attempt holds from its gates to its call's end, and the probe of
/// its destination's breaker it claimed, if it did (the version the claim wrote).
#[derive(Default)]
pub(in crate::engine) struct HeldSlots {
    pub(in crate::engine) flow: Option<FlowSlot>,
    pub(in crate::engine) destination: Option<DestinationSlot>,
    pub(in crate::engine) probe: Option<u64>,
}

impl Engine {
    /// The destination's circuit breaker, the tenant's limit at `destination`, then the
    /// task's flow limits, and last the breaker's probe if one is due; a refusal by a
    /// later one frees what the earlier took. The breaker is asked first and the flow
    /// after the destination: a flow counts each start it allows in its rate window, so a
    /// task turned away after it would spend a start of the flow's rate on a call it
    /// never made. The probe is claimed last, so that no other gate stops the call it is.
    pub(in crate::engine) async fn take_slots(
        &self,
        at: &AttemptRef,
        task: &Task,
        place: &Place,
        lease_until: DateTime<Utc>,
    ) -> Result<Step<HeldSlots>, EngineError> {
        let probe_due = match self.breaker_admission(at, task, place).await? {
            Step::Continue(due) => due,
            Step::Reread => return Ok(Step::Reread),
            Step::Done(outcome) => return Ok(Step::Done(outcome)),
        };
        let gate = self.pass_destination_gate(at, task, place, lease_until);
        let destination = match gate.await? {
            Step::Continue(destination) => destination,
            Step::Reread => return Ok(Step::Reread),
            Step::Done(outcome) => return Ok(Step::Done(outcome)),
        };
        let mut held = HeldSlots {
            destination,
            ..HeldSlots::default()
        };
        match self.pass_flow_gate(at, task, lease_until).await {
            Ok(Step::Continue(flow)) => held.flow = flow,
            refused => return self.refused_at_gate(task, &held, refused).await,
        }
        let Some(read) = probe_due else {
            return Ok(Step::Continue(held));
        };
        match self.claim_probe(at, task, place, read).await {
            Ok(Step::Continue(probe)) => Ok(Step::Continue(HeldSlots { probe, ..held })),
            refused => self.refused_at_gate(task, &held, refused).await,
        }
    }

    /// A gate's refusal, what the gates before it took freed.
    async fn refused_at_gate<T>(
        &self,
        task: &Task,
        held: &HeldSlots,
        refused: Result<Step<T>, EngineError>,
    ) -> Result<Step<HeldSlots>, EngineError> {
        self.free_slots(task, held).await;
        match refused? {
            Step::Continue(_) | Step::Reread => Ok(Step::Reread),
            Step::Done(outcome) => Ok(Step::Done(outcome)),
        }
    }

    /// One of the tenant's slots at `destination`, where slots are shared and the tenant
    /// has a limit of its own; [`DeliverOutcome::Deferred`] if none came free.
    ///
    /// [`DeliverOutcome::Deferred`]: super::DeliverOutcome::Deferred
    async fn pass_destination_gate(
        &self,
        at: &AttemptRef,
        task: &Task,
        place: &Place,
        lease_until: DateTime<Utc>,
    ) -> Result<Step<Option<DestinationSlot>>, EngineError> {
        let (Some(slots), Some(limit)) = (&self.ports.store.destinations, place.own_limit) else {
            return Ok(Step::Continue(None));
        };
        let destination = &place.destination;
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        let holder = SlotHolder::new(&task.id);
        for tries in 1..=TAKE_TRIES {
            let now = self.ports.clock.now();
            let lease = (now, lease_until);
            let taken =
                slots.take_destination_slot(&task.tenant, destination, limit, &holder, lease);
            if taken.await? {
                let destination = destination.clone();
                return Ok(Step::Continue(Some(DestinationSlot {
                    destination,
                    holder,
                })));
            }
            if tries < TAKE_TRIES {
                tokio::time::sleep(TAKE_GAP).await;
            }
        }
        let again = self.ports.clock.now() + SLOT_RETRY;
        Ok(Step::Done(self.defer(at.clone(), again).await?))
    }

    /// Frees the slots `task`'s attempt holds. A failure is logged: a slot's lease frees it.
    pub(in crate::engine) async fn free_slots(&self, task: &Task, held: &HeldSlots) {
        if let Some(slot) = &held.flow {
            self.free_flow_slot(task, slot).await;
        }
        let (Some(slot), Some(slots)) = (&held.destination, &self.ports.store.destinations) else {
            return;
        };
        let freed = slots.free_destination_slot(&task.tenant, &slot.destination, &slot.holder);
        if let Err(e) = freed.await {
            tracing::warn!(task = %task.id, destination = %slot.destination, error = %e, "freeing a destination slot failed; its lease will");
        }
    }
}
