//! Bulk jobs on a manual clock: a job that stopped in the middle of a page (its runner
//! died after acting on part of it) is taken over once the lease lapses, finishes the
//! page without acting on any task twice, and reports every task once; a live runner's
//! lease keeps others off.

use boomerang_core::domain::{BulkAction, BulkPlan, InHand, Status, TaskFilter};
use boomerang_core::engine::JobRun;
use boomerang_core::ports::{BulkJobs, ListQuery, TaskStore};
use boomerang_core::testing::harness::*;

const TASKS: usize = 20;

/// `TASKS` failed tasks, registered a second before now.
async fn failed_tasks(h: &Harness) -> Vec<boomerang_core::domain::Task> {
    let mut failed = Vec::new();
    for _ in 0..TASKS {
        let task = h.register(FireTime::Now, RetryPolicy::default()).await;
        let mut done = task.clone();
        done.status = Status::Failed;
        done.next_attempt_at = None;
        done.version += 1;
        h.store.update(&done, task.version).await.unwrap();
        failed.push(done);
    }
    h.clock.advance(secs(1));
    failed
}

fn retry_all() -> BulkPlan {
    let filter = TaskFilter {
        url_prefix: Some("https://example.com/".into()),
        ..TaskFilter::default()
    };
    BulkPlan::new(BulkAction::Retry, filter, Some(1_000), false).unwrap()
}

#[tokio::test]
async fn a_job_taken_over_mid_page_acts_on_no_task_twice() {
    let h = harness(ScriptedWebhooks::answering(vec![]));
    let tasks = failed_tasks(&h).await;
    let job = h.engine.start_bulk(&h.tenant, retry_all()).await.unwrap();

    // A runner takes the job, reads its page, retries half of it and dies.
    let now = h.clock_now();
    let claimed = job.claim("dead", now).unwrap();
    h.store.save_job(&claimed, job.version).await.unwrap();
    let query = ListQuery {
        status: Some(Status::Failed),
        limit: 100,
        ..ListQuery::default()
    };
    let page = h.store.list(&h.tenant, &query).await.unwrap();
    assert_eq!(page.tasks.len(), TASKS);
    let in_hand: Vec<InHand> = page.tasks.iter().map(InHand::of).collect();
    let read = claimed.page_read(page.tasks.len(), in_hand.clone(), None, now);
    h.store.save_job(&read, claimed.version).await.unwrap();
    for listed in &in_hand[..TASKS / 2] {
        h.engine.redrive(&h.tenant, &listed.id).await.unwrap();
    }
    // Some of those failed again since: failed, as when the job read them.
    for listed in &in_hand[..TASKS / 4] {
        let retried = h.store.get(&h.tenant, &listed.id).await.unwrap().unwrap();
        let mut again = retried.clone();
        again.status = Status::Failed;
        again.next_attempt_at = None;
        again.version += 1;
        h.store.update(&again, retried.version).await.unwrap();
    }

    // While its lease lasts, another runner keeps off.
    let run = h
        .engine
        .run_bulk_job(&h.tenant, &job.id, "next", None)
        .await;
    assert_eq!(run.unwrap(), JobRun::Held);

    h.clock.advance(secs(16));
    let run = h
        .engine
        .run_bulk_job(&h.tenant, &job.id, "next", None)
        .await;
    assert_eq!(run.unwrap(), JobRun::Finished);
    let report = h
        .engine
        .bulk_job(&h.tenant, &job.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.progress.matched, TASKS as u64);
    assert_eq!(report.progress.done, TASKS as u64, "{:?}", report.progress);
    assert_eq!(report.progress.skipped, 0);
    for task in &tasks {
        let now = h.engine.get(&h.tenant, &task.id).await.unwrap().task;
        assert_eq!(
            now.round_start,
            task.attempt + 1,
            "retried once: a new round from the next attempt"
        );
    }
}

#[tokio::test]
async fn a_preview_counts_what_a_job_then_does() {
    let h = harness(ScriptedWebhooks::answering(vec![]));
    failed_tasks(&h).await;
    let preview = h
        .engine
        .preview_bulk(&h.tenant, &retry_all())
        .await
        .unwrap();
    assert_eq!((preview.count, preview.sample.len()), (TASKS as u64, 10));
    let job = h.engine.start_bulk(&h.tenant, retry_all()).await.unwrap();
    h.clock.advance(secs(1));
    let run = h.engine.run_bulk_job(&h.tenant, &job.id, "one", None).await;
    assert_eq!(run.unwrap(), JobRun::Finished);
    let report = h
        .engine
        .bulk_job(&h.tenant, &job.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.progress.done, preview.count);
    let again = h
        .engine
        .preview_bulk(&h.tenant, &retry_all())
        .await
        .unwrap();
    assert_eq!(again.count, 0, "nothing left to retry");
}

/// At most `MAX_RUNNING_JOBS` run at once, however many finished jobs came after them (a
/// list shows only the newest), and whether the starts come one by one or all at once.
#[tokio::test]
async fn no_more_jobs_run_at_once_than_the_limit_allows() {
    use boomerang_core::engine::{EngineError, MAX_RUNNING_JOBS};
    use boomerang_core::ports::JOBS_LISTED;
    let h = harness(ScriptedWebhooks::answering(vec![]));
    let start = || h.engine.start_bulk(&h.tenant, retry_all());
    let mut running = Vec::new();
    for _ in 0..MAX_RUNNING_JOBS / 2 {
        running.push(start().await.unwrap());
    }
    // More finished jobs than a list shows, newer than the running ones.
    for _ in 0..JOBS_LISTED {
        let job = start().await.unwrap();
        let run = h.engine.run_bulk_job(&h.tenant, &job.id, "one", None).await;
        assert_eq!(run.unwrap(), JobRun::Finished);
    }
    let starts: Vec<_> = (0..MAX_RUNNING_JOBS).map(|_| start()).collect();
    let results = futures_util::future::join_all(starts).await;
    let started = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(started, MAX_RUNNING_JOBS - running.len());
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            matches!(refused, EngineError::Limited { .. }),
            "{refused:?}"
        );
    }
    let listed = h.engine.bulk_jobs(&h.tenant).await.unwrap();
    let now_running = listed.iter().filter(|j| j.is_running()).count();
    assert!(now_running <= MAX_RUNNING_JOBS);
}
