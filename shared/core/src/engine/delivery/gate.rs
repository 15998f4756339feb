//! Flow control inside one process: how many deliveries run at once in all, and how many
//! go to one destination at a time.
//!
//! A delivery takes a work slot (one of `concurrency`) to read its task, then a place at
//! its task's destination. Destinations are counted per tenant (a tenant's calls to a host
//! never wait behind another tenant's), each with its tenant's limit or the server's
//! `per_destination`. A destination has that many call slots, held from the
//! claim to the call's end, and [`PLACES_PER_CALL`] times as many places (within half
//! the work slots), so that the results of several rounds of calls can be on their way
//! to the store while the next calls go out (a result waits for a group commit, which
//! takes longer than a call to a fast receiver: with fewer places, the calls wait on the
//! writes). When every
//! place is taken, the delivery joins the destination's queue (its ids only) and gives its
//! work slot back: deliveries to a slow or hanging receiver hold at most that receiver's
//! places, and never the work slots other destinations need. Whoever holds a place
//! delivers what queued up behind it before leaving. A destination that answered 429 or
//! 503 with `Retry-After` is paused: its deliveries are re-armed for the end of the pause
//! instead.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::domain::{AttemptRef, Destination, TenantId};
use crate::domain::{Breaker, BreakerChange, BreakerSettings, CallHealth};
use crate::metrics::DestinationFigures;
use crate::ports::StoredBreaker;

/// The in-process limits of deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryLimits {
    /// Most deliveries (and held tasks' checks) running at once, in all.
    pub concurrency: usize,
    /// Most calls in flight to one destination (scheme, host and port) at once.
    pub per_destination: usize,
}

/// The default of [`DeliveryLimits::concurrency`].
pub const DEFAULT_CONCURRENCY: usize = 128;

/// The default of [`DeliveryLimits::per_destination`], and its bounds.
pub const DEFAULT_PER_DESTINATION: usize = 16;
pub const PER_DESTINATION_RANGE: (usize, usize) = (1, 1000);

impl Default for DeliveryLimits {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            per_destination: DEFAULT_PER_DESTINATION,
        }
    }
}

/// A destination's places per call slot: one calling, the others writing results. Never
/// more than half the work slots (so that a hanging receiver leaves the other half to
/// everyone else), unless that is less than two per call slot.
pub const PLACES_PER_CALL: usize = 4;

/// Idle destinations kept before the idle ones are dropped (their figures are all zero).
const KEEP_IDLE: usize = 256;
/// Most deliveries queued for one destination; more are re-armed a little later.
pub(crate) const MAX_QUEUED: usize = 100_000;

/// A destination as the gate counts it: a tenant's calls to one scheme, host and port.
type LaneKey = (TenantId, Destination);

pub(crate) struct Gate {
    work: Arc<Semaphore>,
    /// Most places one destination has: half the work slots, or twice its call slots if
    /// that is more.
    most_places: usize,
    per_destination: usize,
    lanes: Mutex<HashMap<LaneKey, Arc<Lane>>>,
    queued: Queued,
}

/// Every attempt queued at any destination, or holding a place there while it waits for a
/// call slot: a fire for an attempt already queued (a sweep re-arms overdue work, and a
/// queued task is overdue) is not queued twice, and a store that loads its due work skips
/// what waits here.
type Queued = Arc<Mutex<HashSet<AttemptRef>>>;

fn lock_queued(queued: &Queued) -> MutexGuard<'_, HashSet<AttemptRef>> {
    queued.lock().unwrap_or_else(|e| e.into_inner())
}

/// One destination's calls in flight, queue and pause.
pub(crate) struct Lane {
    /// Most calls in flight at once.
    limit: usize,
    /// Most deliveries holding a place at once: calling, or writing their results.
    places: usize,
    state: Mutex<LaneState>,
    calls: Arc<Semaphore>,
    /// Deliveries holding a place and waiting for a call slot.
    awaiting_call: AtomicUsize,
    /// The gate's: what every lane's queue holds.
    queued: Queued,
}

#[derive(Default)]
struct LaneState {
    /// Deliveries holding a place (calling, waiting for a call slot, or writing).
    places: usize,
    queue: VecDeque<AttemptRef>,
    paused_until: Option<DateTime<Utc>>,
    /// This process's count of the destination's failed calls in a row: the closed
    /// breaker's count, which opens the shared one (see `breaker_gate`).
    local_breaker: Breaker,
    /// The shared breaker as last read, and when.
    shared_breaker: Option<(Option<StoredBreaker>, DateTime<Utc>)>,
    /// The shared breaker's version when this lane's count began.
    breaker_version: Option<u64>,
}

/// A delivery waiting for a call slot at its lane, until dropped (the wait may be given up).
struct AwaitingCall<'a> {
    lane: &'a Lane,
    at: AttemptRef,
}

impl<'a> AwaitingCall<'a> {
    fn enter(lane: &'a Lane, at: &AttemptRef) -> Self {
        lane.awaiting_call.fetch_add(1, Ordering::SeqCst);
        lock_queued(&lane.queued).insert(at.clone());
        Self {
            lane,
            at: at.clone(),
        }
    }
}

impl Drop for AwaitingCall<'_> {
    fn drop(&mut self) {
        lock_queued(&self.lane.queued).remove(&self.at);
        self.lane.awaiting_call.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A right to run one delivery: a work slot (see [`DeliveryLimits::concurrency`]).
pub struct WorkSlot(#[allow(dead_code)] OwnedSemaphorePermit);

/// One of a destination's call slots, held from the claim to the call's end.
pub(crate) struct CallSlot(#[allow(dead_code)] OwnedSemaphorePermit);

/// One of a destination's places, held while delivering and then delivering its queue.
pub(crate) struct LaneSlot {
    lane: Arc<Lane>,
    held: bool,
}

/// What [`Gate::enter`] did with a delivery.
pub(crate) enum Entry {
    /// It holds one of the destination's places.
    Entered(LaneSlot),
    /// It waits in the destination's queue.
    Queued,
    /// The queue is full.
    Full,
}

impl Gate {
    pub(crate) fn new(limits: DeliveryLimits) -> Self {
        Self {
            work: Arc::new(Semaphore::new(limits.concurrency.max(1))),
            most_places: limits.concurrency / 2,
            per_destination: limits.per_destination.max(1),
            lanes: Mutex::new(HashMap::new()),
            queued: Queued::default(),
        }
    }

    /// How many deliveries wait in the destinations' queues, in all.
    pub(crate) fn queued(&self) -> usize {
        lock_queued(&self.queued).len()
    }

    /// Whether `at` waits in a destination's queue.
    pub(crate) fn is_queued(&self, at: &AttemptRef) -> bool {
        lock_queued(&self.queued).contains(at)
    }

    /// Waits for a work slot.
    pub(crate) async fn work(&self) -> WorkSlot {
        let permit =
            (self.work.clone().acquire_owned().await).expect("the gate never closes its semaphore");
        WorkSlot(permit)
    }

    /// The lane of `tenant`'s calls to `destination`, made if new, with `limit` calls in
    /// flight (the tenant's own, else the server's). A lane whose limit changed is made
    /// anew once nothing is under way in it.
    pub(crate) fn lane(
        &self,
        (tenant, destination): (&TenantId, &Destination),
        limit: Option<usize>,
        now: DateTime<Utc>,
    ) -> Arc<Lane> {
        let (min, max) = PER_DESTINATION_RANGE;
        let limit = limit.unwrap_or(self.per_destination).clamp(min, max);
        let key = (tenant.clone(), destination.clone());
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lane) = lanes.get(&key) {
            let replaceable = Arc::strong_count(lane) == 1 && lane.idle(now);
            if lane.limit == limit || !replaceable {
                return lane.clone();
            }
        }
        if lanes.len() >= KEEP_IDLE {
            lanes.retain(|_, lane| Arc::strong_count(lane) > 1 || !lane.idle(now));
        }
        let lane = Arc::new(Lane {
            limit,
            places: (PLACES_PER_CALL * limit).min(self.most_places.max(2 * limit)),
            state: Mutex::default(),
            calls: Arc::new(Semaphore::new(limit)),
            awaiting_call: AtomicUsize::new(0),
            queued: self.queued.clone(),
        });
        lanes.insert(key, lane.clone());
        lane
    }

    /// Takes a place at `lane` for delivery `at`, or queues `at` behind the deliveries
    /// under way.
    pub(crate) fn enter(&self, lane: &Arc<Lane>, at: &AttemptRef) -> Entry {
        let mut state = lane.state();
        if state.places < lane.places {
            state.places += 1;
            return Entry::Entered(LaneSlot {
                lane: lane.clone(),
                held: true,
            });
        }
        let mut queued = lock_queued(&lane.queued);
        if queued.contains(at) {
            return Entry::Queued;
        }
        if state.queue.len() >= MAX_QUEUED {
            return Entry::Full;
        }
        state.queue.push_back(at.clone());
        queued.insert(at.clone());
        Entry::Queued
    }

    /// The destinations with anything to show (calls in flight or queued, or a pause): of
    /// `tenant`, or of every tenant.
    pub(crate) fn figures(
        &self,
        tenant: Option<&TenantId>,
        now: DateTime<Utc>,
    ) -> Vec<DestinationFigures> {
        let lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        let mut figures: Vec<_> = lanes
            .iter()
            .filter(|((of, _), lane)| tenant.is_none_or(|t| t == of) && !lane.idle(now))
            .map(|((tenant, destination), lane)| {
                let state = lane.state();
                DestinationFigures {
                    tenant: tenant.clone(),
                    destination: destination.clone(),
                    limit: lane.limit,
                    in_flight: lane.limit - lane.calls.available_permits(),
                    waiting: state.queue.len() + lane.awaiting_call.load(Ordering::SeqCst),
                    paused_until: state.paused_until.filter(|until| *until > now),
                }
            })
            .collect();
        figures.sort_by(|a, b| (&a.tenant, &a.destination).cmp(&(&b.tenant, &b.destination)));
        figures
    }
}

impl Lane {
    fn state(&self) -> MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Nothing under way, queued or paused. Calls are counted as well as places, so that
    /// no call, however it came in, is hidden from the figures.
    fn idle(&self, now: DateTime<Utc>) -> bool {
        let state = self.state();
        state.places == 0
            && self.calls.available_permits() == self.limit
            && self.awaiting_call.load(Ordering::SeqCst) == 0
            && state.queue.is_empty()
            && state.paused_until.is_none_or(|until| until <= now)
    }

    /// Waits for one of the destination's call slots, for delivery `at`. Meanwhile `at`
    /// counts as waiting at its destination, as a queued one does: it holds a place but
    /// neither the timer nor a claim has it, and a repair pass must not take it for lost.
    pub(crate) async fn call_slot(&self, at: &AttemptRef) -> CallSlot {
        let _waiting = AwaitingCall::enter(self, at);
        let permit = (self.calls.clone().acquire_owned().await)
            .expect("the gate never closes its semaphores");
        CallSlot(permit)
    }

    /// Until when the destination is paused, if it still is at `now`.
    pub(crate) fn paused(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.state().paused_until.filter(|until| *until > now)
    }

    /// The shared breaker as read within `fresh` of `now`, if it was.
    pub(crate) fn cached_breaker(
        &self,
        now: DateTime<Utc>,
        fresh: chrono::Duration,
    ) -> Option<Option<StoredBreaker>> {
        let state = self.state();
        let (breaker, read_at) = state.shared_breaker.as_ref()?;
        (now.signed_duration_since(*read_at) < fresh).then(|| breaker.clone())
    }

    /// Keeps `breaker` as read at `now`; a read of another version than the last one
    /// starts this lane's count of failures in a row again (they came before the change).
    pub(crate) fn cache_breaker(&self, breaker: Option<StoredBreaker>, now: DateTime<Utc>) {
        let mut state = self.state();
        let version = breaker.as_ref().map(|b| b.version);
        if state.breaker_version != version {
            state.breaker_version = version;
            state.local_breaker = Breaker::default();
        }
        state.shared_breaker = Some((breaker, now));
    }

    /// The shared breaker changed: the next delivery reads it again.
    pub(crate) fn forget_breaker(&self) {
        self.state().shared_breaker = None;
    }

    /// Counts a call's health in this process's closed breaker; the breaker opened when
    /// its failures in a row open it (and the count starts again: the shared breaker
    /// takes over).
    pub(crate) fn count_call(
        &self,
        health: CallHealth,
        now: DateTime<Utc>,
        settings: &BreakerSettings,
    ) -> Option<Breaker> {
        let mut state = self.state();
        let change = state.local_breaker.on_call(health, false, now, settings);
        let opened = change == Some(BreakerChange::Opened);
        opened.then(|| std::mem::take(&mut state.local_breaker))
    }

    /// Forgets the failures in a row counted here: the shared breaker is open, or has
    /// just closed, and counts from now on.
    pub(crate) fn reset_count(&self) {
        self.state().local_breaker = Breaker::default();
    }

    /// Whether this process counts failures in a row here (a success then has one to
    /// reset).
    pub(crate) fn failing(&self) -> bool {
        !matches!(
            self.state().local_breaker,
            Breaker::Closed { failures: 0, .. }
        )
    }

    /// Pauses the destination until `until` (a later pause already set stands).
    pub(crate) fn pause(&self, until: DateTime<Utc>) {
        let mut state = self.state();
        if state.paused_until.is_none_or(|current| current < until) {
            state.paused_until = Some(until);
        }
    }
}

impl LaneSlot {
    /// The next delivery queued for this destination, or `None` once the queue is empty,
    /// and then the slot is let go: in one step, so nothing is queued behind a slot that
    /// is just leaving.
    pub(crate) fn next(&mut self) -> Option<AttemptRef> {
        if !self.held {
            return None;
        }
        let mut state = self.lane.state();
        let next = state.queue.pop_front();
        if let Some(next) = &next {
            lock_queued(&self.lane.queued).remove(next);
        }
        if next.is_none() {
            state.places -= 1;
            self.held = false;
        }
        next
    }
}

impl Drop for LaneSlot {
    fn drop(&mut self) {
        if self.held {
            self.lane.state().places -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{TaskId, TenantId};

    fn gate(per_destination: usize) -> Gate {
        Gate::new(DeliveryLimits {
            concurrency: 64,
            per_destination,
        })
    }

    #[test]
    fn a_destination_has_at_most_half_the_work_slots_and_at_least_two_places_a_call() {
        let places = |concurrency, per_destination| {
            let gate = Gate::new(DeliveryLimits {
                concurrency,
                per_destination,
            });
            lane(&gate, "https://a.test/").places
        };
        assert_eq!(places(128, 16), PLACES_PER_CALL * 16);
        assert_eq!(places(64, 16), 32, "half of 64");
        assert_eq!(
            places(16, 16),
            32,
            "two a call slot, however few work slots"
        );
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn acme() -> TenantId {
        TenantId::parse("acme").unwrap()
    }

    fn attempt() -> AttemptRef {
        AttemptRef::delivery(acme(), TaskId::new(), 1)
    }

    /// Acme's lane to `url`, at the server's limit.
    fn lane(gate: &Gate, url: &str) -> Arc<Lane> {
        gate.lane((&acme(), &Destination::of(url)), None, now())
    }

    /// A delivery that holds a place and waits for a call slot is neither in the timer's
    /// hands nor claimed: it counts as waiting at its destination until it has the slot
    /// (or gives up waiting), so a repair pass does not take it for lost.
    #[tokio::test]
    async fn a_delivery_waiting_for_a_call_slot_counts_as_waiting_at_its_destination() {
        let gate = gate(1);
        let lane = lane(&gate, "https://busy.test/");
        let first = lane.call_slot(&attempt()).await;
        let (second, given_up) = (attempt(), attempt());
        let waiting = tokio::spawn({
            let (lane, second) = (lane.clone(), second.clone());
            async move { lane.call_slot(&second).await }
        });
        let abandoned = tokio::spawn({
            let (lane, given_up) = (lane.clone(), given_up.clone());
            async move { lane.call_slot(&given_up).await }
        });
        let both_wait = async {
            while lane.awaiting_call.load(Ordering::SeqCst) < 2 {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), both_wait)
            .await
            .expect("both wait for the call slot");
        assert!(gate.is_queued(&second) && gate.is_queued(&given_up));
        assert_eq!(gate.queued(), 2);

        abandoned.abort();
        let _ = abandoned.await;
        assert!(
            !gate.is_queued(&given_up),
            "a wait given up is no longer counted"
        );
        drop(first);
        let _second_call = waiting.await.unwrap();
        assert!(
            !gate.is_queued(&second),
            "no longer waiting once it has the slot"
        );
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test]
    async fn a_full_destination_queues_and_its_slot_hands_the_queue_on_before_leaving() {
        let gate = gate(1);
        let slow = lane(&gate, "https://slow.test/");
        let Entry::Entered(mut slot) = gate.enter(&slow, &attempt()) else {
            panic!("the first call enters");
        };
        let _call = slow.call_slot(&attempt()).await;
        let _writing: Vec<LaneSlot> = (1..PLACES_PER_CALL)
            .map(|_| match gate.enter(&slow, &attempt()) {
                Entry::Entered(writing) => writing,
                _ => panic!("one call slot, {PLACES_PER_CALL} places"),
            })
            .collect();
        let (second, third) = (attempt(), attempt());
        assert!(matches!(gate.enter(&slow, &second), Entry::Queued));
        assert!(matches!(gate.enter(&slow, &third), Entry::Queued));
        // A second fire of a queued attempt (a sweep's) is not queued twice.
        assert!(matches!(gate.enter(&slow, &second), Entry::Queued));
        // Another destination is not affected.
        let fast = lane(&gate, "https://fast.test/");
        assert!(matches!(gate.enter(&fast, &attempt()), Entry::Entered(_)));
        let figures = gate.figures(None, now());
        assert_eq!(figures.len(), 1, "the fast slot was let go");
        assert_eq!((figures[0].in_flight, figures[0].waiting), (1, 2));

        assert_eq!(slot.next(), Some(second));
        assert_eq!(slot.next(), Some(third));
        assert_eq!(slot.next(), None);
        drop((_call, _writing));
        assert!(gate.figures(None, now()).is_empty());
        drop(slot);
        assert!(matches!(gate.enter(&slow, &attempt()), Entry::Entered(_)));
    }

    #[test]
    fn a_slot_dropped_without_draining_is_let_go() {
        let gate = gate(1);
        let lane = lane(&gate, "https://a.test/");
        let slots: Vec<Entry> = (0..PLACES_PER_CALL)
            .map(|_| gate.enter(&lane, &attempt()))
            .collect();
        assert!(matches!(gate.enter(&lane, &attempt()), Entry::Queued));
        drop(slots);
        assert!(matches!(gate.enter(&lane, &attempt()), Entry::Entered(_)));
    }

    #[test]
    fn a_pause_lasts_until_its_end_and_a_later_one_stands() {
        let gate = gate(4);
        let lane = lane(&gate, "https://busy.test/");
        assert_eq!(lane.paused(now()), None);
        let later = now() + chrono::Duration::seconds(30);
        lane.pause(later);
        lane.pause(now() + chrono::Duration::seconds(5));
        assert_eq!(lane.paused(now()), Some(later));
        assert_eq!(lane.paused(later), None);
        assert_eq!(gate.figures(None, now())[0].paused_until, Some(later));
    }

    #[test]
    fn idle_destinations_are_forgotten_once_many_are_known() {
        let gate = gate(4);
        for n in 0..KEEP_IDLE + 10 {
            lane(&gate, &format!("https://h{n}.test/"));
        }
        let known = gate.lanes.lock().unwrap().len();
        assert!(known <= KEEP_IDLE, "{known} lanes kept");
    }

    #[test]
    fn each_tenant_has_its_own_places_at_a_destination_with_its_own_limit() {
        let gate = gate(1);
        let shared = Destination::of("https://hooks.test/");
        let globex = TenantId::parse("globex").unwrap();
        let acme_lane = gate.lane((&acme(), &shared), None, now());
        let globex_lane = gate.lane((&globex, &shared), Some(3), now());
        let Entry::Entered(mut acme_slot) = gate.enter(&acme_lane, &attempt()) else {
            panic!("the first call enters");
        };
        let acme_others: Vec<Entry> = (1..PLACES_PER_CALL)
            .map(|_| gate.enter(&acme_lane, &attempt()))
            .collect();
        assert!(matches!(gate.enter(&acme_lane, &attempt()), Entry::Queued));
        // Acme's full lane does not hold globex back; globex has 3 calls, and places for
        // each.
        let globex_slots: Vec<Entry> = (0..3 * PLACES_PER_CALL)
            .map(|_| gate.enter(&globex_lane, &attempt()))
            .collect();
        assert!(globex_slots.iter().all(|e| matches!(e, Entry::Entered(_))));
        assert!(matches!(
            gate.enter(&globex_lane, &attempt()),
            Entry::Queued
        ));
        let globex_figures = gate.figures(Some(&globex), now());
        assert_eq!(globex_figures.len(), 1);
        assert_eq!(
            (globex_figures[0].tenant.as_str(), globex_figures[0].limit),
            ("globex", 3)
        );
        assert_eq!(gate.figures(None, now()).len(), 2);

        // A changed limit applies once the lane is idle and nobody holds it.
        assert!(acme_slot.next().is_some(), "the queued delivery");
        drop((acme_slot, acme_others));
        assert_eq!(
            gate.lane((&acme(), &shared), Some(5), now()).limit,
            1,
            "held"
        );
        drop(acme_lane);
        assert_eq!(gate.lane((&acme(), &shared), Some(5), now()).limit, 5);
        assert_eq!(gate.lane((&acme(), &shared), Some(5000), now()).limit, 1000);
    }
}
