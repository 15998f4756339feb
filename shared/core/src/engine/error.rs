//! What an engine call can answer instead of its result.

use std::time::Duration;

use crate::domain::{Invalid, Refusal, SecretRefusal};
use crate::ports::{DefinitionKind, StoreError, TenantsError, TimerError};

/// What an [`EngineError::NotFound`] did not find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    Task,
    Schedule,
    Definition(DefinitionKind),
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Missing::Task => "task",
            Missing::Schedule => "schedule",
            Missing::Definition(kind) => kind.as_str(),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The tenant has no such thing (another tenant's is not found either).
    #[error("no such {0}")]
    NotFound(Missing),
    /// The task is not in a state that allows the operation.
    #[error(transparent)]
    Conflict(Refusal),
    #[error("this idempotency key was already used with a different request")]
    IdempotencyMismatch,
    /// A value the domain refuses, naming its field.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Over one of the tenant's limits: nothing was done; try again after `retry_after`.
    #[error("{detail}")]
    Limited {
        detail: String,
        retry_after: Duration,
    },
    /// The schedule is not in a state that allows the operation.
    #[error(transparent)]
    ScheduleConflict(crate::domain::ScheduleRefusal),
    /// A change to the tenant's signing secrets that they do not allow.
    #[error(transparent)]
    Secret(SecretRefusal),
    /// What the operator set in the server's configuration cannot change through the API.
    #[error("{0}")]
    Fixed(String),
    /// The caller's tenant is not (or no longer) in the directory.
    #[error("no such tenant")]
    NoTenant,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Tenants(#[from] TenantsError),
    /// A fire being handled could not arm the timer that was to take its place: the fire
    /// fails, so that the timer that brought it comes again.
    #[error(transparent)]
    Timer(#[from] TimerError),
}
