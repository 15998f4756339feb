//! The AWS backend's adapters, wired to an engine: the one place that knows which AWS
//! adapter goes with which port.

use std::sync::Arc;

use aws_config::SdkConfig;
use boomerang_core::clock::Clock;
use boomerang_core::engine::{Engine, EngineSettings, Ports, StorePorts};
use boomerang_core::metrics::{Metrics, MetricsView};
use boomerang_core::ports::{FlowPorts, SpanExport};
use boomerang_webhook::client::ClientBuildError;
use boomerang_webhook::{DestinationPolicy, HttpWebhooks};

use crate::bucket_schedules::{BucketSchedules, ScheduleTarget};
use crate::buckets::BucketFire;
use crate::dead_letters::SqsDeadLetters;
use crate::flows::DynamoFlowCounters;
use crate::readiness::AwsReadiness;
use crate::settings::AwsSettings;
use crate::slow_lane::SlowQueue;
use crate::store::DynamoStore;
use crate::system_failures::SystemFailures;
use crate::tenants::DynamoTenants;
use crate::timer::AwsTimer;

/// The engine on DynamoDB, Scheduler + SQS timers and SQS dead letters.
pub struct AwsBackend {
    pub engine: Arc<Engine>,
    pub store: Arc<DynamoStore>,
    pub tenants: Arc<DynamoTenants>,
    pub timer: Arc<AwsTimer>,
    /// Reads a bucket's minute and arms its attempts (the delivery function's other job).
    pub buckets: Arc<BucketFire>,
    pub settings: AwsSettings,
    pub sqs: aws_sdk_sqs::Client,
    pub scheduler: aws_sdk_scheduler::Client,
    pub clock: Arc<dyn Clock>,
}

pub struct AwsBackendConfig {
    pub settings: AwsSettings,
    /// Allow `http://` and private targets (only for local runs against an emulator).
    pub dev: bool,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<dyn Metrics>,
    /// Where the metrics are kept and shown (the local server); `None` for the Lambdas.
    pub metrics_view: Option<Arc<dyn MetricsView>>,
    pub engine: EngineSettings,
    /// Where finished spans go (`None`: nowhere).
    pub spans: Option<Arc<dyn SpanExport>>,
}

/// The service clients the AWS backend talks through.
#[derive(Clone)]
pub struct AwsClients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub scheduler: aws_sdk_scheduler::Client,
}

impl AwsClients {
    pub fn new(sdk: &SdkConfig) -> Self {
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
            scheduler: aws_sdk_scheduler::Client::new(sdk),
        }
    }
}

pub fn aws(sdk: &SdkConfig, config: AwsBackendConfig) -> Result<AwsBackend, ClientBuildError> {
    aws_with_clients(AwsClients::new(sdk), config)
}

/// [`aws`] on clients built elsewhere (the cost meter adds an interceptor to them).
pub fn aws_with_clients(
    clients: AwsClients,
    config: AwsBackendConfig,
) -> Result<AwsBackend, ClientBuildError> {
    let settings = config.settings;
    let AwsClients {
        dynamodb: ddb,
        sqs,
        scheduler,
    } = clients;
    let store = Arc::new(DynamoStore::new(
        ddb.clone(),
        &settings.table,
        settings.retention,
    ));
    let flows = Arc::new(DynamoFlowCounters::new(ddb.clone(), &settings.table));
    let readiness = Arc::new(AwsReadiness::new(ddb.clone(), &settings.table));
    let tenants = Arc::new(DynamoTenants::new(ddb, &settings.table));
    let schedules = BucketSchedules::new(
        scheduler.clone(),
        ScheduleTarget::of(&settings),
        store.clone(),
        config.clock.clone(),
    );
    let timer = Arc::new(AwsTimer::new(
        sqs.clone(),
        schedules,
        &settings,
        config.clock.clone(),
    ));
    let buckets = Arc::new(BucketFire::new(store.clone(), timer.clone()));
    let policy = DestinationPolicy {
        dev: config.dev,
        allowed_cidrs: settings.allowed_cidrs.clone(),
    };
    // Twice what an instance may have in flight to one destination: a batch's calls (up
    // to sixteen, the slow lane's), whatever the tenants' own limits, or the server's.
    let in_flight = config.engine.limits.per_destination.max(BATCH_CALLS);
    let webhooks = HttpWebhooks::new(policy, 2 * in_flight)?;
    // DynamoDB's TTL removes finished tasks, and counting them by state would read every
    // item: neither is added. Flow limits and tenants' destination limits are in the table,
    // so that they hold across every delivery function instance.
    let store_ports = StorePorts::of(store.clone())
        .with_flows(FlowPorts {
            counters: flows.clone(),
            pauses: flows.clone(),
        })
        .with_destination_slots(flows);
    let dead_letters = SqsDeadLetters::new(sqs.clone(), &settings.dead_letter_queue_url);
    let ports = Ports::new(
        store_ports,
        timer.clone(),
        tenants.clone(),
        Arc::new(webhooks),
        Arc::new(dead_letters),
        readiness,
    )
    .with_clock(config.clock.clone())
    .with_metrics(config.metrics, config.metrics_view);
    let ports = match &settings.slow_queue_url {
        Some(url) => ports.with_slow_lane(Arc::new(SlowQueue::new(timer.clone(), url))),
        None => ports,
    };
    let ports = match config.spans {
        Some(spans) => ports.with_spans(spans),
        None => ports,
    };
    Ok(AwsBackend {
        engine: Arc::new(Engine::new(ports, config.engine)),
        store,
        tenants,
        timer,
        buckets,
        settings,
        sqs,
        scheduler,
        clock: config.clock,
    })
}

/// The most calls one delivery invocation makes at once: a batch of the slow lane.
const BATCH_CALLS: usize = 16;

impl AwsBackend {
    /// The system-failures queue, if configured (the sweeper drains it).
    pub fn system_failures(&self) -> Option<SystemFailures> {
        self.settings
            .system_failures_queue_url
            .clone()
            .map(|queue_url| SystemFailures {
                sqs: self.sqs.clone(),
                queue_url,
                timer: self.timer.clone(),
            })
    }

    /// What the delivery function runs on: the engine, and the bucket fires.
    pub fn delivery(&self) -> crate::lambda::Delivery {
        crate::lambda::Delivery {
            engine: self.engine.clone(),
            buckets: self.buckets.clone(),
        }
    }
}
