//! Every limit the API enforces, in one place. The validation (the domain's constructors
//! and the API's request reading), the OpenAPI document and the book's figures are
//! built or tested from these constants.

use std::ops::RangeInclusive;
use std::time::Duration;

// A task's request.
/// The longest callback URL.
pub const MAX_URL_LEN: usize = 2048;
/// The largest callback body.
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// Most headers on a callback (and on an alert destination).
pub const MAX_HEADERS: usize = 50;
/// Header names with this prefix (and the `webhook-` ones) are set by Boomerang alone.
pub const RESERVED_KEY_PREFIX: &str = "boomerang-";
/// The methods a callback may use.
pub const METHODS: [&str; 5] = ["POST", "PUT", "PATCH", "DELETE", "GET"];
/// A callback's timeout: its default and bounds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
pub const MIN_TIMEOUT: Duration = Duration::from_secs(1);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest `expect_body`.
pub const MAX_EXPECT_BODY: usize = 4096;
/// Metadata: entries, and the length of a key and of a value.
pub const MAX_METADATA_ENTRIES: usize = 50;
pub const MAX_METADATA_KEY: usize = 64;
pub const MAX_METADATA_VALUE: usize = 1024;
/// The longest idempotency key.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
/// The furthest ahead a task may be scheduled.
pub const MAX_SCHEDULE_AHEAD: Duration = Duration::from_secs(365 * 24 * 3600);

// A schedule.
/// The longest cron pattern.
pub const MAX_CRON_LEN: usize = 200;
/// The shortest interval of an `every` schedule (a cron pattern may fire every second).
pub const MIN_EVERY: Duration = Duration::from_secs(1);

// Ids.
/// The longest tenant id, in bytes.
pub const MAX_TENANT_ID: usize = 64;
/// The longest business key, in bytes.
pub const MAX_BUSINESS_KEY: usize = 255;
/// The longest order key, in bytes.
pub const MAX_ORDER_KEY: usize = 255;
/// The longest policy name, in bytes.
pub const MAX_DEFINITION_NAME: usize = 64;

// A retry policy.
/// The shortest and longest step a policy may use.
pub const MIN_STEP: Duration = Duration::from_secs(1);
pub const MAX_STEP: Duration = Duration::from_secs(7 * 24 * 3600);
/// Most waits a `schedule` lists.
pub const MAX_SCHEDULE_STEPS: usize = 100;
pub const MAX_ATTEMPTS: u32 = 1000;
/// Attempts of a `fixed`, `linear` or `exponential` policy that names none.
pub const DEFAULT_BACKOFF_ATTEMPTS: u32 = 8;
/// The cap of a `linear` or `exponential` wait that names none (or `interval`, if longer).
pub const DEFAULT_MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// The longest a round may last: with an attempt limit, and without one
/// (`max_attempts: null`).
pub const MAX_DURATION: Duration = MAX_SCHEDULE_AHEAD;
pub const MAX_UNLIMITED_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);
pub const MAX_JITTER: f64 = 0.5;
/// The statuses a policy may list as permanent failures.
pub const PERMANENT_STATUSES: RangeInclusive<i64> = 300..=599;

// A flow.
/// The longest flow key, in bytes.
pub const MAX_FLOW_KEY: usize = 255;
/// The most starts a flow's `rate` allows per period.
pub const MAX_FLOW_RATE: u32 = 100_000;
/// The most tasks of one flow in flight at once.
pub const MAX_PARALLELISM: u32 = 1000;
/// A flow's `period`: its default and bounds.
pub const DEFAULT_FLOW_PERIOD: Duration = Duration::from_secs(1);
pub const MIN_FLOW_PERIOD: Duration = Duration::from_secs(1);
pub const MAX_FLOW_PERIOD: Duration = Duration::from_secs(24 * 3600);

// Receivers.
/// The longest a destination is paused when it answers 429 or 503 with `Retry-After`.
pub const MAX_DESTINATION_PAUSE: Duration = Duration::from_secs(300);

// A hold.
/// The shortest and longest hold.
pub const MIN_HOLD: Duration = Duration::from_secs(1);
pub const MAX_HOLD: Duration = Duration::from_secs(24 * 3600);
/// Checks made before `on_unknown` applies: by default, and at most.
pub const DEFAULT_MAX_CHECKS: u32 = 20;
pub const MAX_CHECKS: u32 = 100;

// Requests of many tasks.
/// Most tasks one batch registration holds.
pub const MAX_BATCH: usize = 100;
/// Most tasks one cancel or release by business key looks at.
pub const MAX_KEY_TASKS: usize = 1000;
/// A page of a list: by default, and at most.
pub const DEFAULT_PAGE: u32 = 20;
pub const MAX_PAGE: u32 = 100;
/// Schedules a page of `GET /v1/schedules` holds when the query does not say.
pub const DEFAULT_SCHEDULE_PAGE: u32 = 50;
/// The largest request body the API reads.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
