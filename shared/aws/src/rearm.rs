//! `boomerang aws rearm`: arms again the pending work of every unfinished task in the
//! table, for when the timers that held it are gone (a deleted or purged timer queue or
//! schedule group, a table restored from a backup). The table is scanned in segments side
//! by side; each page's work is armed together (ten to a queue request) and then the
//! segment's position is saved, so a run that stops, or meets a failure, is resumed by
//! running it again (within a day: positions expire, and a later run reads the table
//! again). Arming what a timer still holds is harmless: the attempt is claimed once,
//! whoever fires it.

use futures_util::future::join_all;

use crate::backend::AwsBackend;
use crate::store::RearmPosition;
use boomerang_core::engine::{EngineError, SweepReport};

/// How a run reads the table.
#[derive(Clone, Copy, Debug)]
pub struct RearmSettings {
    /// Scan segments read side by side (1–1,000; the positions saved belong to this
    /// count: a run with another count starts over).
    pub segments: u32,
    /// Items one read of a segment takes (1–1,000).
    pub page: i32,
    /// Forget the saved positions and read the whole table again.
    pub restart: bool,
}

/// What one page of a segment did.
#[derive(Clone, Copy, Debug)]
pub struct PageDone {
    pub segment: u32,
    /// Items read (tasks and everything else).
    pub read: usize,
    /// Task items that could not be read, passed over (and logged).
    pub unreadable: usize,
    pub report: SweepReport,
    /// The segment has been read to its end.
    pub finished: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RearmError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Some work of a page could not be armed: its position was not saved, so running
    /// again arms that page again.
    #[error("segment {segment}: some work could not be armed; run again to resume")]
    NotArmed { segment: u32 },
}

/// Runs every segment to its end (or to its first failure), telling `done` of each page.
pub async fn rearm(
    backend: &AwsBackend,
    settings: RearmSettings,
    done: &(dyn Fn(PageDone) + Sync),
) -> Result<SweepReport, RearmError> {
    let store = &backend.store;
    // The schedules may be gone with the timers: each minute's is made again.
    backend.timer.ignore_schedule_records();
    if settings.restart {
        store
            .forget_rearm_positions(settings.segments)
            .await
            .map_err(EngineError::from)?;
    }
    let runs =
        (0..settings.segments).map(|segment| rearm_segment(backend, settings, segment, done));
    let mut total = SweepReport::default();
    for run in join_all(runs).await {
        total += run?;
    }
    Ok(total)
}

async fn rearm_segment(
    backend: &AwsBackend,
    settings: RearmSettings,
    segment: u32,
    done: &(dyn Fn(PageDone) + Sync),
) -> Result<SweepReport, RearmError> {
    let (store, segments) = (&backend.store, settings.segments);
    let mut total = SweepReport::default();
    loop {
        let position = store.rearm_position(segment, segments).await;
        let RearmPosition::From(after) = position.map_err(EngineError::from)? else {
            return Ok(total);
        };
        let page = store
            .unfinished_page(segment, segments, after, settings.page)
            .await
            .map_err(EngineError::from)?;
        let (report, all_armed) = backend.engine.repair(page.work).await?;
        if !all_armed {
            return Err(RearmError::NotArmed { segment });
        }
        store
            .save_rearm_position(segment, segments, &page.next)
            .await
            .map_err(EngineError::from)?;
        total += report;
        done(PageDone {
            segment,
            read: page.read,
            unreadable: page.unreadable,
            report,
            finished: page.next == RearmPosition::Done,
        });
    }
}
