//! capa's training loop, as a library for the `capa-train` binary and the
//! tests. Read it top-down from [`run`]:
//!
//! - `run.rs`: checks, the run directory and its lock, the mode's loop;
//! - `selfplay_loop.rs` (self-play), `distill.rs` (a teacher's games) and
//!   `supervised.rs` (Lc0 V6 data): the loops, iteration by iteration;
//! - `selfplay.rs` and `curriculum.rs`: games played by the network;
//!   `buffer.rs`: the replay buffer; `steps.rs`: training steps and mean
//!   losses; `evaluate.rs`: `[eval]`, matches through capa-play;
//! - `commit.rs`: networks, checkpoints, the commit point and resume;
//!   `games.rs`: the run's game files; `metrics.rs`: the self-play
//!   iteration's metrics line and warnings (the run directory, its keys
//!   and the metrics line's type are capa-rundir's);
//! - `worker.rs`: self-play workers; `diagnostics.rs`: `buffer_stats` and
//!   `overfit_check` over a run's replay window; `check.rs`: `capa-train
//!   check`, what a run must be after any crash.

#![deny(missing_docs)]

mod buffer;
mod check;
pub mod cli;
mod commit;
mod config;
mod curriculum;
mod diagnostics;
mod distill;
mod evaluate;
mod finish;
mod games;
mod gate;
mod metrics;
mod progress;
mod run;
mod selfplay;
mod selfplay_loop;
mod steps;
mod supervised;
mod worker;

pub use buffer::{ReplayBuffer, Sampling};
pub use check::{CheckReport, check};
pub use config::{
    BufferSection, CheckpointSection, CurriculumSection, DistillSection, EvalMethod, EvalSection, GameSection,
    KoRuleKind, NetSection, RootSearch, RunConfig, RunMode, RunSection, SelfPlaySection, TargetKind, TrainSection,
};
pub use curriculum::Curriculum;
pub use diagnostics::{BufferStats, HeldOutReport, OverfitReport, buffer_stats, overfit_check};
pub use finish::Finish;
pub use run::run;
pub use selfplay::{SelfPlaySettings, SelfPlayStats, play};
pub use selfplay_loop::bench_selfplay;
pub use worker::work;
