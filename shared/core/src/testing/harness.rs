//! The engine test harness: in-memory adapters, an injected clock, a scripted webhook.
//! Timers are not fired by themselves here: each test plays the timer by calling `deliver`.
#![allow(dead_code, unused_imports)]

// Re-exported for the test files, which `use crate::testing::harness::*`.
pub use std::collections::VecDeque;
pub use std::sync::atomic::{AtomicU32, Ordering};
pub use std::sync::{Arc, Mutex};
pub use std::time::Duration;

pub use super::memory_dead_letters::MemoryDeadLetters;
pub use super::memory_store::MemoryStore;
pub use super::memory_tenants::MemoryTenants;
pub use super::recording_timer::RecordingTimer;
pub use crate::clock::{FixedRandom, ManualClock};
pub use crate::domain::{
    Attempt, AttemptOutcome, AttemptRef, BusinessKey, CallbackRequest, DefinitionName, RetryPolicy,
    SigningSecret, Status, TaskSpec, TenantId,
};
pub use crate::engine::{
    DeliverOutcome, DeliveryLimits, Engine, EngineError, EngineSettings, FireTime, NewTask, Ports,
    RetrySource, StorePorts, Submission, TenantLimits, PLACES_PER_CALL,
};
pub use crate::metrics::MetricEvent;
pub use crate::ports::{WebhookCall, WebhookError, WebhookResult, Webhooks};
pub use async_trait::async_trait;
pub use chrono::{DateTime, TimeZone, Utc};
pub use tokio::sync::Semaphore;

/// Answers each call with the next scripted result (200 once the script runs out), and can
/// hold calls until the test lets them go.
#[derive(Default)]
pub struct ScriptedWebhooks {
    pub script: Mutex<VecDeque<WebhookResult>>,
    pub calls: AtomicU32,
    pub gate: Option<Arc<Semaphore>>,
    /// Only calls to URLs starting with this wait for `gate` (all do when `None`).
    pub gated_url: Option<String>,
    /// The URL of every call, in order.
    pub urls: Mutex<Vec<String>>,
    /// Calls under way, and the most there ever were at once.
    pub in_flight: AtomicU32,
    pub most_in_flight: AtomicU32,
}

impl ScriptedWebhooks {
    pub fn answering(results: Vec<WebhookResult>) -> Self {
        Self {
            script: Mutex::new(results.into()),
            ..Self::default()
        }
    }
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

pub fn status(code: u16) -> WebhookResult {
    WebhookResult {
        status: Some(code),
        body_matches: true,
        ..WebhookResult::default()
    }
}

#[async_trait]
impl Webhooks for ScriptedWebhooks {
    fn check_destination(&self, url: &str) -> Result<(), String> {
        url.starts_with("https://")
            .then_some(())
            .ok_or("must use https".into())
    }

    async fn send(&self, call: &WebhookCall<'_>) -> WebhookResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.urls
            .lock()
            .unwrap()
            .push(call.spec.request.url.clone());
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        let gated = (self.gated_url.as_ref()).is_none_or(|u| call.spec.request.url.starts_with(u));
        if let (Some(gate), true) = (&self.gate, gated) {
            gate.acquire().await.expect("gate open").forget();
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| status(200))
    }
}

/// Keeps every metric event.
#[derive(Default)]
pub struct RecordedMetrics(pub Mutex<Vec<MetricEvent>>);

impl crate::metrics::Metrics for RecordedMetrics {
    fn record(&self, event: MetricEvent) {
        self.0.lock().unwrap().push(event);
    }
}

impl RecordedMetrics {
    pub fn registered(&self) -> Vec<MetricEvent> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter(|e| matches!(e, MetricEvent::Registered { .. }))
            .copied()
            .collect()
    }
}

pub struct Harness {
    pub engine: Arc<Engine>,
    pub store: Arc<MemoryStore>,
    pub metrics: Arc<RecordedMetrics>,
    pub clock: Arc<ManualClock>,
    pub timer: Arc<RecordingTimer>,
    pub dead_letters: Arc<MemoryDeadLetters>,
    pub webhooks: Arc<ScriptedWebhooks>,
    pub tenant: TenantId,
}

pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 0).unwrap()
}

pub fn harness(webhooks: ScriptedWebhooks) -> Harness {
    harness_with(webhooks, RecordingTimer::default(), t0())
}

pub fn harness_with(
    webhooks: ScriptedWebhooks,
    timer: RecordingTimer,
    start: DateTime<Utc>,
) -> Harness {
    harness_full(webhooks, timer, start, None)
}

/// A harness whose server sends alerts to `alert` when a task names no destination.
pub fn harness_alerting(
    webhooks: ScriptedWebhooks,
    alert: Option<crate::domain::AlertTarget>,
) -> Harness {
    harness_full(webhooks, RecordingTimer::default(), t0(), alert)
}

pub fn harness_full(
    webhooks: ScriptedWebhooks,
    timer: RecordingTimer,
    start: DateTime<Utc>,
    alert: Option<crate::domain::AlertTarget>,
) -> Harness {
    build(webhooks, timer, start, alert, Limits::default())
}

/// Webhooks whose calls to `url` wait for the returned gate's permits.
fn gated_webhooks(url: &str) -> (ScriptedWebhooks, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let webhooks = ScriptedWebhooks {
        gate: Some(gate.clone()),
        gated_url: Some(url.into()),
        ..ScriptedWebhooks::default()
    };
    (webhooks, gate)
}

/// A harness within `limits` whose calls to `url` wait for the returned gate's permits.
pub fn gated_harness(url: &str, limits: DeliveryLimits) -> (Harness, Arc<Semaphore>) {
    let (webhooks, gate) = gated_webhooks(url);
    (harness_limited(webhooks, limits), gate)
}

/// A harness whose engine holds each tenant to `limits`.
pub fn harness_tenant_limits(limits: TenantLimits) -> Harness {
    let limits = Limits {
        tenant: limits,
        ..Limits::default()
    };
    build(
        ScriptedWebhooks::default(),
        RecordingTimer::default(),
        t0(),
        None,
        limits,
    )
}

/// A harness whose engine runs deliveries within `limits`.
pub fn harness_limited(webhooks: ScriptedWebhooks, limits: DeliveryLimits) -> Harness {
    let limits = Limits {
        delivery: limits,
        ..Limits::default()
    };
    build(webhooks, RecordingTimer::default(), t0(), None, limits)
}

/// A harness whose engine runs deliveries within `limits`, and whose tenant has a
/// destination limit of its own.
pub fn harness_tenant_limited(
    webhooks: ScriptedWebhooks,
    limits: DeliveryLimits,
    tenant_limit: usize,
) -> Harness {
    let limits = Limits {
        delivery: limits,
        tenant_destination: Some(tenant_limit),
        ..Limits::default()
    };
    build(webhooks, RecordingTimer::default(), t0(), None, limits)
}

/// A harness whose tenant has a destination limit of its own, held in `slots` as a
/// fleet's shared slots would hold it.
pub fn harness_shared_slots(
    tenant_limit: usize,
    slots: Arc<super::MemoryDestinationSlots>,
) -> Harness {
    let limits = Limits {
        tenant_destination: Some(tenant_limit),
        shared_slots: Some(slots),
        ..Limits::default()
    };
    build(
        ScriptedWebhooks::default(),
        RecordingTimer::default(),
        t0(),
        None,
        limits,
    )
}

/// A harness that hands attempts to destinations marked slow to the returned slow lane,
/// and whose calls to `url` wait for the returned gate's permits.
pub fn harness_slow_lane(url: &str) -> (Harness, Arc<Semaphore>, Arc<super::MemorySlowLane>) {
    let (webhooks, gate) = gated_webhooks(url);
    let lane = Arc::new(super::MemorySlowLane::default());
    let limits = Limits {
        slow_lane: Some(lane.clone()),
        ..Limits::default()
    };
    let h = build(webhooks, RecordingTimer::default(), t0(), None, limits);
    (h, gate, lane)
}

/// The limits a harness's engine and tenant run with.
#[derive(Default)]
struct Limits {
    delivery: DeliveryLimits,
    /// The tenant's own destination limit, if it has one.
    tenant_destination: Option<usize>,
    tenant: TenantLimits,
    /// Destination slots shared as a fleet's are, if any.
    shared_slots: Option<Arc<super::MemoryDestinationSlots>>,
    /// Where attempts to slow destinations are handed, if anywhere.
    slow_lane: Option<Arc<super::MemorySlowLane>>,
}

fn build(
    webhooks: ScriptedWebhooks,
    timer: RecordingTimer,
    start: DateTime<Utc>,
    alert: Option<crate::domain::AlertTarget>,
    limits: Limits,
) -> Harness {
    let clock = Arc::new(ManualClock::new(start));
    // Tests make the store misbehave through its hooks (`Harness::store`).
    let store = Arc::new(MemoryStore::default());
    let timer = Arc::new(timer);
    let dead_letters = Arc::new(MemoryDeadLetters::default());
    let webhooks = Arc::new(webhooks);
    let tenant = TenantId::parse("acme").unwrap();
    let mut tenants = MemoryTenants::new("key", tenant.clone(), SigningSecret::generate());
    if let Some(limit) = limits.tenant_destination {
        tenants = tenants.with_destination_limit(limit);
    }
    let metrics = Arc::new(RecordedMetrics::default());
    let mut store_ports = StorePorts::of(store.clone())
        .with_counts(store.clone())
        .with_process_flows(store.clone());
    if let Some(slots) = limits.shared_slots {
        store_ports = store_ports.with_destination_slots(slots);
    }
    let ports = Ports::new(
        store_ports,
        timer.clone(),
        Arc::new(tenants),
        webhooks.clone(),
        dead_letters.clone(),
        Arc::new(super::fixtures::AlwaysReady),
    )
    .with_clock(clock.clone())
    .with_random(Arc::new(FixedRandom(0.5)))
    .with_metrics(metrics.clone(), None);
    let ports = match limits.slow_lane {
        Some(lane) => ports.with_slow_lane(lane),
        None => ports,
    };
    let settings = EngineSettings {
        lease_margin: Duration::from_secs(30),
        dead_letter_tries: 3,
        sweep_batch: 100,
        worker: "test-worker".into(),
        alert,
        limits: limits.delivery,
        tenant_limits: limits.tenant,
        slow_call: crate::engine::DEFAULT_SLOW_CALL,
    };
    Harness {
        engine: Arc::new(Engine::new(ports, settings)),
        store,
        metrics,
        clock,
        timer,
        dead_letters,
        webhooks,
        tenant,
    }
}

pub fn new_task(when: FireTime, retry: RetryPolicy) -> NewTask {
    NewTask {
        spec: super::fixtures::plain_spec("https://example.com/hook", "{}", retry),
        retry_from: RetrySource::Given,
        when,
        idempotency_key: None,
        request_hash: "h".into(),
    }
}

/// Waits (for at most 5 s) until `cond` holds.
pub async fn wait_until(cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met in time"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

impl Harness {
    /// Registers a task due now that calls `url`.
    pub async fn register_to(&self, url: &str) -> crate::domain::Task {
        let mut new = new_task(FireTime::Now, RetryPolicy::default());
        new.spec.request.url = url.into();
        self.engine.register(&self.tenant, new).await.unwrap().task
    }

    /// Delivers attempt 1 of `task` on a task of its own.
    pub fn spawn_delivery(
        &self,
        task: &crate::domain::Task,
    ) -> tokio::task::JoinHandle<Result<DeliverOutcome, EngineError>> {
        let (engine, attempt) = (self.engine.clone(), task.attempt_ref(1));
        tokio::spawn(async move { engine.deliver(attempt).await })
    }

    pub async fn register(&self, when: FireTime, retry: RetryPolicy) -> crate::domain::Task {
        self.engine
            .register(&self.tenant, new_task(when, retry))
            .await
            .unwrap()
            .task
    }
    /// Plays a timer fire for delivery attempt `number` of `task`.
    pub async fn fire_attempt(&self, task: &crate::domain::Task, number: u32) -> DeliverOutcome {
        self.engine.deliver(task.attempt_ref(number)).await.unwrap()
    }

    /// Plays a timer fire for the (held) task's check, due or not.
    pub async fn fire_check_now(&self, task: &crate::domain::Task) -> DeliverOutcome {
        self.engine.deliver(task.check_ref()).await.unwrap()
    }

    pub async fn status_of(&self, task: &crate::domain::Task) -> Status {
        self.engine
            .get(&self.tenant, &task.id)
            .await
            .unwrap()
            .task
            .status
    }
}

impl Harness {
    /// The first page of the tenant's tasks.
    pub async fn stored(&self) -> Vec<crate::domain::Task> {
        let query = crate::ports::ListQuery {
            limit: 10,
            ..Default::default()
        };
        self.engine.list(&self.tenant, &query).await.unwrap().tasks
    }

    pub fn clock_now(&self) -> DateTime<Utc> {
        use crate::clock::Clock;
        self.clock.now()
    }
}
