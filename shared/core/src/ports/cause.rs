//! The source a port's error keeps.

/// The underlying error a port failure keeps as its source.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;
