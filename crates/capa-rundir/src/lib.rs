//! A training run's directory, local or in a bucket: its files and their
//! keys ([`keys`]), whole-file writes, the trainer's lock and the workers'
//! name locks, and [`MetricsLine`], the one type of `metrics.jsonl`. The
//! trainer writes a run through it; the GUI, `capa plot` and `capa-train
//! check` read it through it, without the trainer.
//!
//! - `dir.rs`: [`RunDir`], a local folder or an object store;
//! - `lock.rs`: the run lock and the worker-name locks (`flock`, or a lease
//!   in a store); `store.rs`: the store's client and its retries;
//! - `keys.rs`: every file's key; `metrics.rs`: the metrics line;
//!   `commit_point.rs`: the commit point and the ledgers read back from it.

#![deny(missing_docs)]

mod commit_point;
mod dir;
pub mod keys;
mod lock;
mod metrics;
mod store;

pub use commit_point::{Carried, CommitPoint, GamesLayout, ledgers_back};
pub use dir::{Entry, RunDir, Traffic};
pub use lock::RunLock;
pub use metrics::{
    AnchorMatch, CurriculumReport, DataCounts, DistillWork, EloKind, Evaluation, GateMatch, MeanLosses, MetricsLine,
    Probe, SelfPlayWork, SupervisedWork, TimeShares, TrainReport, Work, process_cpu_seconds, read_lines, read_metrics,
    truncate_metrics,
};
