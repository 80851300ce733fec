//! The run directory's keys that several modules name.

/// One JSON line per iteration.
pub(crate) const METRICS: &str = "metrics.jsonl";
