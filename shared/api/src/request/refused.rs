//! Why a request body was refused, with the field at fault still a path: a batch places a
//! task's refusal under `tasks[3]` before it is written out as a problem.

use boomerang_core::domain::{FieldPath, Invalid};

use crate::problem::Problem;

#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Not JSON at all (400).
    #[error("{0}")]
    Malformed(String),
    /// A field breaks a rule (422).
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// A field is larger than the API takes (413).
    #[error("{0}")]
    TooLarge(Invalid),
}

impl Refused {
    /// A field's refusal, as the problem names it.
    pub fn invalid(field: impl Into<FieldPath>, detail: impl Into<String>) -> Self {
        Refused::Invalid(Invalid::new(field, detail))
    }

    /// The same refusal of a part of a larger request: `delay` inside `tasks[3]`.
    pub fn under(self, parent: impl Into<FieldPath>) -> Self {
        match self {
            Refused::Malformed(detail) => Refused::Malformed(detail),
            Refused::Invalid(e) => Refused::Invalid(e.under(parent)),
            Refused::TooLarge(e) => Refused::TooLarge(e.under(parent)),
        }
    }
}

impl From<Refused> for Problem {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Malformed(detail) => Problem::malformed(detail),
            Refused::Invalid(e) => e.into(),
            Refused::TooLarge(e) => {
                let detail = e.to_string();
                Problem::too_large(e.field, detail)
            }
        }
    }
}
