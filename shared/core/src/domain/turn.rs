//! Whose turn it is in an order key's line ([`super::order`]): which tasks hold their
//! place, and what a task about to be delivered makes of its key's head.

use chrono::{DateTime, Utc};

use super::order::{OnHeadFailure, OrderEntry, ORPHAN_PLACE};
use super::task::{Status, Task};

/// Whose turn it is, as a task about to be delivered sees its key's head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Turn {
    /// This task is the head: it goes.
    Go,
    /// An elder holds the line: this one waits.
    Wait,
    /// The head's place is no longer held (its task ended, or was never stored, or took
    /// a new place since): it is to be left, and the head read again.
    Stale(u64),
}

impl Task {
    /// Whether the task holds its place in its key's line (false for a task with no key).
    pub fn holds_order(&self) -> bool {
        let Some(order) = &self.spec.order else {
            return false;
        };
        match self.status {
            Status::Succeeded | Status::Canceled => false,
            Status::Failed => order.on_failure == OnHeadFailure::Block,
            Status::Held | Status::Scheduled | Status::Delivering => true,
        }
    }

    /// Whose turn it is: `self` about to be delivered, the key's `head` place, and that
    /// place's task as stored (`None`: not stored).
    pub fn turn(
        &self,
        head: Option<&OrderEntry>,
        head_task: Option<&Task>,
        now: DateTime<Utc>,
    ) -> Turn {
        let Some(head) = head else {
            // No place is held: this task's was left (a skipped task retried takes a new
            // one before it is delivered), so it holds up nobody.
            return Turn::Go;
        };
        if head.task == self.id && self.spec.order.as_ref().is_some_and(|o| o.seq == head.seq) {
            return Turn::Go;
        }
        let holds = head_task.is_some_and(|task| {
            let same_place = task.spec.order.as_ref().is_some_and(|o| o.seq == head.seq);
            task.holds_order() && same_place
        });
        // A place whose task does not (yet) show it is given up only once it is a minute
        // old: a registration, or a retry taking a new place, writes its task after the
        // place, and a read may lag the write.
        match holds || now - head.at < ORPHAN_PLACE {
            true => Turn::Wait,
            false => Turn::Stale(head.seq),
        }
    }
}

#[cfg(test)]
mod tests;
