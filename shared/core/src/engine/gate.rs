//! Flow control inside one process: how many deliveries run at once in all, and how many
//! go to one destination at a time.
//!
//! A delivery first takes a work slot (one of `concurrency`) to read its task, then a slot
//! of its task's destination. When the destination is full it gives its work slot back
//! and waits for the destination alone, so that deliveries to a slow or hanging receiver
//! hold at most that receiver's slots and never the ones other destinations need. A
//! destination that answered 429 or 503 with `Retry-After` is paused: its deliveries are
//! re-armed for the end of the pause, not waited for here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::domain::Destination;
use crate::metrics::DestinationFigures;

/// The in-process limits of deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryLimits {
    /// Most deliveries (and held tasks' checks) running at once, in all.
    pub concurrency: usize,
    /// Most calls in flight to one destination (scheme, host and port) at once.
    pub per_destination: usize,
}

/// The default of [`DeliveryLimits::per_destination`].
pub const DEFAULT_PER_DESTINATION: usize = 16;

impl Default for DeliveryLimits {
    fn default() -> Self {
        Self {
            concurrency: 64,
            per_destination: DEFAULT_PER_DESTINATION,
        }
    }
}

/// Idle destinations kept before the idle ones are dropped (their figures are all zero).
const KEEP_IDLE: usize = 256;

pub(crate) struct Gate {
    work: Arc<Semaphore>,
    per_destination: usize,
    lanes: Mutex<HashMap<Destination, Arc<Lane>>>,
}

/// One destination's slots and state.
pub(crate) struct Lane {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    paused_until: Mutex<Option<DateTime<Utc>>>,
}

/// A delivery's right to run: a work slot, and once admitted, its destination's slot.
/// Dropping it frees both.
pub(crate) struct Turn {
    _work: OwnedSemaphorePermit,
    _slot: Option<OwnedSemaphorePermit>,
}

impl Gate {
    pub(crate) fn new(limits: DeliveryLimits) -> Self {
        Self {
            work: Arc::new(Semaphore::new(limits.concurrency.max(1))),
            per_destination: limits.per_destination.max(1),
            lanes: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for a work slot.
    pub(crate) async fn work(&self) -> Turn {
        Turn {
            _work: acquire(&self.work).await,
            _slot: None,
        }
    }

    /// The lane of `destination`, made if new.
    pub(crate) fn lane(&self, destination: &Destination, now: DateTime<Utc>) -> Arc<Lane> {
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lane) = lanes.get(destination) {
            return lane.clone();
        }
        if lanes.len() >= KEEP_IDLE {
            lanes.retain(|_, lane| Arc::strong_count(lane) > 1 || lane.paused(now).is_some());
        }
        let lane = Arc::new(Lane {
            slots: Arc::new(Semaphore::new(self.per_destination)),
            waiting: AtomicUsize::new(0),
            paused_until: Mutex::new(None),
        });
        lanes.insert(destination.clone(), lane.clone());
        lane
    }

    /// Takes a slot of `lane` for `turn` if one is free at once.
    pub(crate) fn try_enter(&self, turn: &mut Turn, lane: &Lane) -> bool {
        match lane.slots.clone().try_acquire_owned() {
            Ok(slot) => {
                turn._slot = Some(slot);
                true
            }
            Err(_) => false,
        }
    }

    /// Waits for a slot of `lane` holding no work slot, then for a work slot.
    pub(crate) async fn enter_after_wait(&self, lane: &Lane) -> Turn {
        lane.waiting.fetch_add(1, Ordering::SeqCst);
        let slot = acquire(&lane.slots).await;
        lane.waiting.fetch_sub(1, Ordering::SeqCst);
        let mut turn = self.work().await;
        turn._slot = Some(slot);
        turn
    }

    /// The destinations with anything to show: calls in flight or waiting, or a pause.
    pub(crate) fn figures(&self, now: DateTime<Utc>) -> Vec<DestinationFigures> {
        let lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        let mut figures: Vec<_> = lanes
            .iter()
            .map(|(destination, lane)| DestinationFigures {
                destination: destination.clone(),
                in_flight: self.per_destination - lane.slots.available_permits(),
                waiting: lane.waiting.load(Ordering::SeqCst),
                paused_until: lane.paused(now),
            })
            .filter(|f| f.in_flight > 0 || f.waiting > 0 || f.paused_until.is_some())
            .collect();
        figures.sort_by(|a, b| a.destination.cmp(&b.destination));
        figures
    }
}

impl Lane {
    /// Until when the destination is paused, if it still is at `now`.
    pub(crate) fn paused(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let until = *self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
        until.filter(|until| *until > now)
    }

    /// Pauses the destination until `until` (a later pause already set stands).
    pub(crate) fn pause(&self, until: DateTime<Utc>) {
        let mut paused = self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
        if paused.is_none_or(|current| current < until) {
            *paused = Some(until);
        }
    }
}

async fn acquire(semaphore: &Arc<Semaphore>) -> OwnedSemaphorePermit {
    semaphore
        .clone()
        .acquire_owned()
        .await
        .expect("the gate never closes its semaphores")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(concurrency: usize, per_destination: usize) -> Gate {
        Gate::new(DeliveryLimits {
            concurrency,
            per_destination,
        })
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    #[tokio::test]
    async fn a_full_destination_holds_its_own_slots_and_no_work_slot_while_waiting() {
        let gate = Arc::new(gate(2, 1));
        let slow = gate.lane(&Destination::of("https://slow.test/"), now());
        let mut first = gate.work().await;
        assert!(gate.try_enter(&mut first, &slow));
        // A second delivery to the full destination waits without a work slot…
        let waiter = tokio::spawn({
            let (gate, slow) = (gate.clone(), slow.clone());
            async move { gate.enter_after_wait(&slow).await }
        });
        tokio::task::yield_now().await;
        // …so another destination still gets the remaining work slot at once.
        let mut other = gate.work().await;
        let fast = gate.lane(&Destination::of("https://fast.test/"), now());
        assert!(gate.try_enter(&mut other, &fast));
        let figures = gate.figures(now());
        assert_eq!(figures.len(), 2);
        assert_eq!((figures[1].in_flight, figures[1].waiting), (1, 1));
        drop(other);
        drop(first);
        let _turn = waiter.await.unwrap();
        assert_eq!(gate.figures(now())[0].in_flight, 1);
    }

    #[test]
    fn a_pause_lasts_until_its_end_and_a_later_one_stands() {
        let gate = gate(4, 4);
        let lane = gate.lane(&Destination::of("https://busy.test/"), now());
        assert_eq!(lane.paused(now()), None);
        let later = now() + chrono::Duration::seconds(30);
        lane.pause(later);
        lane.pause(now() + chrono::Duration::seconds(5));
        assert_eq!(lane.paused(now()), Some(later));
        assert_eq!(lane.paused(later), None);
        assert_eq!(gate.figures(now())[0].paused_until, Some(later));
    }

    #[test]
    fn idle_destinations_are_forgotten_once_many_are_known() {
        let gate = gate(4, 4);
        for n in 0..KEEP_IDLE + 10 {
            gate.lane(&Destination::of(&format!("https://h{n}.test/")), now());
        }
        let known = gate.lanes.lock().unwrap().len();
        assert!(known <= KEEP_IDLE, "{known} lanes kept");
    }
}
