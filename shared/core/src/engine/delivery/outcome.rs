//! What a delivery leads to: the outcome a timer fire reports, and the typed result of
//! each step of an attempt.

use std::convert::Infallible;

use crate::domain::Status;

/// What a timer fire led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliverOutcome {
    /// No such task (never existed, or retention removed it).
    Unknown,
    /// The attempt was already handled, canceled, or claimed by another worker.
    Stale,
    /// The timer fired before the attempt was due; it was re-armed for the due time.
    Early,
    /// The webhook was called; the task is now in this state.
    Attempted(Status),
    /// A held task's check was made (or its hold timed out); the task is now in this
    /// state.
    Checked(Status),
    /// The call never left this machine (it ran out of open files, say): the attempt was
    /// given back, uncounted, and armed again.
    GivenBack,
    /// The task's destination asked for a pause (429 or 503 with `Retry-After`), or its
    /// flow is over a limit: the attempt was armed again for later, unclaimed and
    /// uncounted.
    Deferred,
    /// The task's destination had all its calls in flight: the attempt waits in its queue,
    /// and a delivery holding one of its slots makes it next.
    Queued,
    /// The task's destination answered slowly of late: the attempt was handed to the slow
    /// lane, which delivers it among other slow calls.
    HandedOver,
    /// A schedule's occurrence came due but does not call (its schedule is paused or
    /// deleted, or it was missed and the schedule does not catch up): it ended canceled.
    Skipped,
    /// Deliveries are stopping (a shutdown, or the end of a Lambda's time): the attempt
    /// was not claimed and is left due, armed again at once where the timer is durable.
    Stopped,
}

/// What one step of an attempt leads to.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::engine) enum Step<T> {
    /// Go on to the next step, with what this one made.
    Continue(T),
    /// The task as read is not the task as stored (a concurrent write got there first, or
    /// the read lagged): read it again, consistently, before the fire is dropped.
    Reread,
    /// The attempt ends here, with this outcome.
    Done(DeliverOutcome),
}

/// How an attempt ended: done, or to be read again. It never continues.
pub(in crate::engine) type Ended = Step<Infallible>;

/// The value of a step's [`Step::Continue`]; otherwise returns from the enclosing attempt
/// (a function returning `Result<Ended, _>`) with the step's end.
macro_rules! proceed {
    ($step:expr) => {
        match $step {
            Step::Continue(value) => value,
            Step::Reread => return Ok(Step::Reread),
            Step::Done(outcome) => return Ok(Step::Done(outcome)),
        }
    };
}
pub(in crate::engine) use proceed;
