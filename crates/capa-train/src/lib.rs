//! capa's training loop, as a library for the `capa-train` binary and the
//! tests: the run configuration, self-play, the replay buffer, the loop
//! with its checkpoints and resume, self-play workers, and the arena that
//! `[eval]` plays the new network in, against the previous one or a UCI
//! engine (Elo by bisection over its `UCI_Elo`);
//! distillation from a teacher's games (`run.mode = "distill"`); and the
//! diagnostics of a run's replay window (`buffer_stats`, `overfit_check`).

#![deny(missing_docs)]

mod arena;
mod buffer;
mod config;
mod curriculum;
mod diagnostics;
mod distill;
mod engine;
mod evaluate;
mod run;
mod rundir;
mod selfplay;
mod worker;

pub use buffer::{HostBatch, ReplayBuffer};
pub use config::{
    BufferSection, CheckpointSection, CurriculumSection, DistillSection, EvalMethod, EvalSection, GameSection,
    NetSection, RunConfig, RunMode, RunSection, Sampling, SelfPlaySection, TargetKind, TrainSection,
};
pub use curriculum::{Curriculum, CurriculumReport};
pub use diagnostics::{BufferStats, HeldOutReport, OverfitReport, buffer_stats, overfit_check};
pub use run::{Finish, run};
pub use rundir::{Entry, RunDir};
pub use selfplay::{SelfPlaySettings, SelfPlayStats, play};
pub use worker::work;
