//! How a run ends.

/// How a run ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Finish {
    /// All configured iterations are done.
    Completed,
    /// Ctrl-C or SIGTERM: the iteration in flight was dropped.
    Interrupted,
}
