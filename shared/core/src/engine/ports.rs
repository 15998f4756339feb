//! The adapters an engine runs on, gathered once: what a store provides
//! ([`StorePorts`]), and the parts of the process around it ([`Ports::new`]).

use std::sync::Arc;

use crate::clock::{Clock, Random, SystemClock, ThreadRandom};
use crate::domain::{BreakerSettings, Policy, Template};
use crate::metrics::{Metrics, MetricsView, NoMetrics};
use crate::ports::{
    Breakers, BulkJobs, DeadLetters, Definitions, DestinationSlots, FlowPauses, FlowPorts,
    KeyedTasks, OrderKeys, ProcessFlowCounters, Readiness, Retention, ScheduleStore, SlowLane,
    SpanExport, StatusCounts, SweepIndex, TaskStore, Tenants, Timer, Webhooks,
};

/// What one store provides: every capability it has, the `Option`s being those some
/// stores lack. Built once by each backend ([`StorePorts::of`] and the `with_` methods).
#[derive(Clone)]
pub struct StorePorts {
    pub tasks: Arc<dyn TaskStore>,
    pub sweep: Arc<dyn SweepIndex>,
    pub policies: Arc<dyn Definitions<Policy>>,
    pub templates: Arc<dyn Definitions<Template>>,
    /// Each tenant's circuit breakers, and its settings for them.
    pub breakers: Arc<dyn Breakers>,
    pub breaker_settings: Arc<dyn Definitions<BreakerSettings>>,
    /// Bulk actions as jobs, resumable where they stopped.
    pub bulk_jobs: Arc<dyn BulkJobs>,
    /// Each order key's line of tasks.
    pub order_keys: Arc<dyn OrderKeys>,
    pub schedules: Arc<dyn ScheduleStore>,
    pub keyed: Arc<dyn KeyedTasks>,
    /// `None`: the store removes finished tasks by itself (DynamoDB's TTL).
    pub retention: Option<Arc<dyn Retention>>,
    /// `None`: the store cannot count tasks by state cheaply (DynamoDB would read every
    /// item).
    pub counts: Option<Arc<dyn StatusCounts>>,
    /// `None`: this backend cannot keep flow limits across its workers yet; a task with a
    /// `flow` is refused.
    pub flows: Option<FlowPorts>,
    /// `None`: one process makes every call, so its destination lanes hold the tenants'
    /// limits by themselves.
    pub destinations: Option<Arc<dyn DestinationSlots>>,
}

impl StorePorts {
    /// The capabilities every store has, all from `store`; retention, counts and flow
    /// limits are absent until added.
    pub fn of<S>(store: Arc<S>) -> Self
    where
        S: TaskStore
            + SweepIndex
            + Definitions<Policy>
            + Definitions<Template>
            + Definitions<BreakerSettings>
            + Breakers
            + BulkJobs
            + OrderKeys
            + ScheduleStore
            + KeyedTasks
            + 'static,
    {
        Self {
            tasks: store.clone(),
            sweep: store.clone(),
            policies: store.clone(),
            templates: store.clone(),
            breakers: store.clone(),
            breaker_settings: store.clone(),
            bulk_jobs: store.clone(),
            order_keys: store.clone(),
            schedules: store.clone(),
            keyed: store,
            retention: None,
            counts: None,
            flows: None,
            destinations: None,
        }
    }

    /// Destination limits are held across the instances that share the store.
    pub fn with_destination_slots(mut self, slots: Arc<dyn DestinationSlots>) -> Self {
        self.destinations = Some(slots);
        self
    }

    /// The store removes finished tasks when asked ([`crate::engine::Engine::purge`]).
    pub fn with_retention(mut self, retention: Arc<dyn Retention>) -> Self {
        self.retention = Some(retention);
        self
    }

    /// The store counts tasks by state.
    pub fn with_counts(mut self, counts: Arc<dyn StatusCounts>) -> Self {
        self.counts = Some(counts);
        self
    }

    /// Flow limits are kept by `flows`.
    pub fn with_flows(mut self, flows: FlowPorts) -> Self {
        self.flows = Some(flows);
        self
    }

    /// Flow limits counted in this process's memory, with the store's pauses: exact where
    /// one process alone delivers the store's tasks.
    pub fn with_process_flows(self, pauses: Arc<dyn FlowPauses>) -> Self {
        self.with_flows(FlowPorts {
            counters: Arc::new(ProcessFlowCounters::default()),
            pauses,
        })
    }
}

/// The adapters an engine runs on: a store's ([`StorePorts`]) and the process's. Made by
/// [`Ports::new`] only, so that each backend names each part once.
#[derive(Clone)]
pub struct Ports {
    /// What the store provides.
    pub(crate) store: StorePorts,
    pub(crate) timer: Arc<dyn Timer>,
    pub(crate) dead_letters: Arc<dyn DeadLetters>,
    pub(crate) tenants: Arc<dyn Tenants>,
    pub(crate) webhooks: Arc<dyn Webhooks>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) random: Arc<dyn Random>,
    pub(crate) metrics: Arc<dyn Metrics>,
    /// `None`: the metrics are not kept here (the Lambdas print them as lines).
    pub(crate) metrics_view: Option<Arc<dyn MetricsView>>,
    /// Whether the backend can take work now (`/readyz`).
    pub(crate) readiness: Arc<dyn Readiness>,
    /// `None`: calls to slow destinations hold nothing but their own place (one process
    /// delivering each attempt as it comes), so they need no lane of their own.
    pub(crate) slow_lane: Option<Arc<dyn SlowLane>>,
    /// `None`: no exporter is configured, and spans are not recorded (trace context is
    /// still kept and passed on to receivers).
    pub(crate) spans: Option<Arc<dyn SpanExport>>,
}

impl Ports {
    /// A store's ports and the process's parts. The clock is the system's, draws are the
    /// thread's and no metrics are kept, as a process runs unless told otherwise
    /// ([`Self::with_clock`], [`Self::with_random`], [`Self::with_metrics`]).
    pub fn new(
        store: StorePorts,
        timer: Arc<dyn Timer>,
        tenants: Arc<dyn Tenants>,
        webhooks: Arc<dyn Webhooks>,
        dead_letters: Arc<dyn DeadLetters>,
        readiness: Arc<dyn Readiness>,
    ) -> Self {
        Self {
            store,
            timer,
            dead_letters,
            tenants,
            webhooks,
            clock: Arc::new(SystemClock),
            random: Arc::new(ThreadRandom),
            metrics: Arc::new(NoMetrics),
            metrics_view: None,
            readiness,
            slow_lane: None,
            spans: None,
        }
    }

    /// Finished spans (registrations, attempts) go to `spans`.
    pub fn with_spans(mut self, spans: Arc<dyn SpanExport>) -> Self {
        self.spans = Some(spans);
        self
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Attempts whose destination answered slowly of late are handed to `lane`.
    pub fn with_slow_lane(mut self, lane: Arc<dyn SlowLane>) -> Self {
        self.slow_lane = Some(lane);
        self
    }

    pub fn with_random(mut self, random: Arc<dyn Random>) -> Self {
        self.random = random;
        self
    }

    /// Where metrics go, and the view `GET /metrics` and the console read them from
    /// (`None` where they are not kept in this process).
    pub fn with_metrics(
        mut self,
        metrics: Arc<dyn Metrics>,
        view: Option<Arc<dyn MetricsView>>,
    ) -> Self {
        self.metrics = metrics;
        self.metrics_view = view;
        self
    }
}
