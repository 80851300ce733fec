//! capa's training loop, as a library for the `capa-train` binary and the
//! tests: the run configuration, self-play, the replay buffer, and the loop
//! with its checkpoints and resume.

#![deny(missing_docs)]

mod buffer;
mod config;
mod run;
mod selfplay;

pub use buffer::{HostBatch, ReplayBuffer};
pub use config::{
    BufferSection, CheckpointSection, GameSection, NetSection, RunConfig, RunSection, Sampling, SelfPlaySection,
    TrainSection,
};
pub use run::{Finish, run};
pub use selfplay::{SelfPlaySettings, SelfPlayStats, play};
