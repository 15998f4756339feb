//! Delivery: `deliver(attempt)`, what every timer fire, in every backend, ends up calling.
//! A fire finds its task, takes its place at its destination (`gate`), and runs the
//! attempt as a sequence of steps (`steps`), each one job with a typed [`Step`] result.

mod alerts;
mod arming;
mod breaker_gate;
mod call;
mod dead_letters;
mod deliver;
mod destination_gate;
mod drain;
mod flow_gate;
pub(in crate::engine) mod gate;
mod outcome;
mod slow_lane;
pub(in crate::engine) mod slow_marks;
#[cfg(test)]
mod step_tests;
mod steps;
pub(in crate::engine) mod stopping;

pub(in crate::engine) use deliver::LOCAL_RETRY;
pub use gate::{
    DeliveryLimits, WorkSlot, DEFAULT_CONCURRENCY, DEFAULT_PER_DESTINATION, PER_DESTINATION_RANGE,
    PLACES_PER_CALL,
};
pub use outcome::DeliverOutcome;
pub(in crate::engine) use outcome::{Ended, Step};
pub use slow_lane::Route;
pub use stopping::Drained;
