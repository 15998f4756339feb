//! Waiting on a bulk job through the API: until it has done so many tasks, or finished.

use std::time::Duration;

use boomerang_api::view::BulkJobView;
use boomerang_client::Client;

use crate::wait_for;

/// Waits until the job has done at least `done` tasks; answers it as it was then.
pub async fn wait_under_way(
    api: &Client,
    job: &BulkJobView,
    done: u64,
    within: Duration,
) -> BulkJobView {
    let what = format!("the job under way ({done} done)");
    wait_for(&what, within, || async {
        let job = api.bulk_job(&job.id).await.ok()?;
        (job.progress.done >= done).then_some(job)
    })
    .await
}

/// Waits until the job has finished; answers it as it ended.
pub async fn wait_finished(api: &Client, job: &BulkJobView, within: Duration) -> BulkJobView {
    wait_for("the job to finish", within, || async {
        let job = api.bulk_job(&job.id).await.ok()?;
        (job.state == "finished").then_some(job)
    })
    .await
}
