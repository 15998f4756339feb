//! `POST /v1/tasks/batch`: up to 100 registrations, each with its template, checked
//! before any is stored.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::refused::Refused;
use super::task::TaskRequest;
use super::template::Templates;
use boomerang_core::domain::limits::MAX_BATCH;
use boomerang_core::engine::NewTask;

/// A batch registration: `{"tasks": [ … ]}`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// 1 to 100 tasks, each as `POST /v1/tasks` takes it.
    #[schema(min_items = 1, max_items = 100)]
    pub tasks: Vec<TaskRequest>,
}

impl BatchRequest {
    /// Every task of the batch with its template, each checked as `POST /v1/tasks` checks
    /// one (without `on_key`); the first refused one refuses the batch, named (`tasks[3].delay`).
    pub fn new_tasks(self, templates: &Templates) -> Result<Vec<NewTask>, Refused> {
        if self.tasks.is_empty() || self.tasks.len() > MAX_BATCH {
            return Err(Refused::invalid(
                "tasks",
                format!("must hold between 1 and {MAX_BATCH} tasks"),
            ));
        }
        (self.tasks.into_iter().enumerate())
            .map(|(i, task)| {
                (templates.apply(task).and_then(|task| task.new_task(None)))
                    .map_err(|e| e.under(format!("tasks[{i}]")))
            })
            .collect()
    }
}
