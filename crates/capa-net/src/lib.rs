//! capa's network on burn: a ResNet with squeeze-excitation, transformer
//! blocks with relative position bias, and policy, WDL, moves-left and
//! future-move heads; the input encoders, the losses and optimizers,
//! network files and checkpoints, and the search's [`Evaluator`](capa_mcts::Evaluator).
//!
//! Code that runs the network is generic over burn's `Backend`; the
//! backend is chosen at run time with [`with_backend`].

#![deny(missing_docs)]

mod backend;
mod checkpoint;
mod config;
#[cfg(feature = "flex")]
mod cpu_attention;
#[cfg(feature = "flex")]
mod cpu_conv;
#[cfg(feature = "flex")]
mod cpu_elementwise;
#[cfg(feature = "flex")]
mod cpu_gemm;
#[cfg(feature = "flex")]
mod cpu_winograd;
mod encode;
mod evaluator;
mod loss;
mod model;
mod ops;
mod precision;
mod store;
mod train;
#[cfg(feature = "wgpu")]
mod wgpu_adapter;

use std::path::PathBuf;

pub use backend::{BackendKind, BackendTask, DeviceSpec, with_backend};
pub use checkpoint::{
    NetFileInfo, load_checkpoint, load_net, load_net_into, net_bytes, read_net_config, read_net_info, save_checkpoint,
    save_net, slim_net,
};
pub use config::{FfnKind, GameKind, NetConfig, NormKind, PolicyHeadKind};
pub use encode::{NetGame, encode_batch};
pub use evaluator::NetEvaluator;
pub use loss::{LossWeights, Losses, Targets, losses, soft_cross_entropy};
pub use model::{MOVES_LEFT_SCALE, Net, NetOutput};
pub use ops::{AdamWStep, CapaAutodiffBackend, CapaBackend, mish};
pub use precision::Precision;
pub use train::{OptimizerKind, ScheduleKind, StepReport, TrainConfig, Trainer};

/// burn itself, so that users of capa-net name the same version.
pub use burn;

/// The game types [`for_game!`] names, re-exported so that the macro works
/// in crates that do not depend on capa-rules.
#[doc(hidden)]
pub mod games {
    pub use capa_rules::capablanca::Capablanca;
    pub use capa_rules::chess::Chess;
    pub use capa_rules::go::{Go9, Go13, Go19};
}

/// What can go wrong in capa-net.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A configuration value is out of range or inconsistent.
    #[error("network configuration: {0}")]
    Config(String),
    /// The requested backend or device is unavailable.
    #[error("{0}")]
    Backend(String),
    /// A file is not a capa network or checkpoint.
    #[error("{0}")]
    Format(String),
    /// Weights do not fit the architecture: every difference listed.
    #[error("{what} does not fit the network:\n  {}", problems.join("\n  "))]
    Mismatch {
        /// The file (or other source) of the weights.
        what: String,
        /// One line per missing, unexpected or misshapen tensor.
        problems: Vec<String>,
    },
    /// Reading or writing a file failed.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure: part of the message, not a separate source, so that
        /// error chains say it once.
        error: std::io::Error,
    },
    /// Something is wrong inside a file. The problem is part of the message,
    /// not a separate source, so that error chains say it once.
    #[error("{}: {problem}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: Box<NetError>,
    },
}
