//! What the API shows of bulk actions: a preview, and jobs with their progress.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::task::TaskView;
use boomerang_core::domain::{BulkJob, BulkJobId, JobState, Progress, Task};

/// What a bulk action would do now (a `dry_run`): nothing was changed.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BulkPreviewView {
    pub action: String,
    /// How many tasks it would act on.
    pub count: u64,
    /// False when the count stopped at the preview's time limit (20 s): a lower bound.
    pub complete: bool,
    /// The first of them (up to 10), newest first.
    pub sample: Vec<TaskView>,
}

impl BulkPreviewView {
    pub fn new(action: &str, count: u64, complete: bool, sample: &[Task]) -> Self {
        Self {
            action: action.to_string(),
            count,
            complete,
            sample: sample.iter().map(|t| TaskView::new(t, None)).collect(),
        }
    }
}

/// A job's counts so far (its report once finished).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProgressView {
    /// Tasks read so far.
    pub read: u64,
    /// Of those, the ones the filter took.
    pub matched: u64,
    /// Tasks the action was done to.
    pub done: u64,
    /// Tasks that had moved on when their turn came (delivered, canceled meanwhile…).
    pub skipped: u64,
}

impl From<&Progress> for ProgressView {
    fn from(p: &Progress) -> Self {
        Self {
            read: p.read,
            matched: p.matched,
            done: p.done,
            skipped: p.skipped,
        }
    }
}

/// A bulk job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"id": "01J0000000000000000000000", "action": "retry",
                          "state": "running", "per_second": 100,
                          "filter": {"destination": "https://hooks.example.com"},
                          "progress": {"read": 500, "matched": 480, "done": 470, "skipped": 10},
                          "created_at": "2030-01-01T09:00:00Z",
                          "updated_at": "2030-01-01T09:00:05Z"}))]
pub struct BulkJobView {
    #[schema(value_type = String)]
    pub id: BulkJobId,
    /// `retry`, `cancel` or `release`.
    pub action: String,
    /// `running` or `finished`.
    pub state: String,
    /// Tasks acted on per second, at most.
    pub per_second: u32,
    /// The filter, as it was read.
    #[schema(value_type = Object)]
    pub filter: serde_json::Value,
    pub progress: ProgressView,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
}

impl BulkJobView {
    pub fn new(job: &BulkJob) -> Self {
        Self {
            id: job.id,
            action: job.plan.action.as_str().to_string(),
            state: match job.state {
                JobState::Running => "running",
                JobState::Finished => "finished",
            }
            .to_string(),
            per_second: job.plan.per_second,
            filter: serde_json::to_value(&job.plan.filter).unwrap_or_default(),
            progress: ProgressView::from(&job.progress),
            created_at: job.created_at,
            updated_at: job.updated_at,
            finished_at: job.finished_at,
        }
    }
}

/// A tenant's newest bulk jobs (up to 50), newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BulkJobsView {
    pub jobs: Vec<BulkJobView>,
}
