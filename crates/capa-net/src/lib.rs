//! capa's network on burn: a ResNet with squeeze-excitation, transformer
//! blocks with relative position bias, and policy, WDL, moves-left and
//! future-move heads (and Go's ownership and score); the input encoders, the losses and optimizers,
//! network files and checkpoints, and the search's [`Evaluator`](capa_mcts::Evaluator).
//!
//! Code that runs the network is generic over burn's `Backend`; the
//! backend is chosen at run time with [`with_backend`]. Other crates hold
//! a [`Training`] or an [`Inference`], which name no backend, so that
//! burn's generic code is compiled here once rather than in each of them.

#![deny(missing_docs)]

mod adamw;
mod backend;
mod checkpoint;
mod config;
#[cfg(feature = "flex")]
mod cpu;
mod device;
mod encode;
mod erased;
mod error;
mod evaluator;
mod loss;
mod model;
mod ops;
mod panics;
mod precision;
mod store;
mod territory;
mod threads;
mod train;
#[cfg(feature = "wgpu")]
mod wgpu_adapter;

pub use adamw::AdamWStep;
pub use backend::{BackendTask, with_backend};
#[cfg(feature = "flex")]
pub use checkpoint::write_net_weights;
pub use checkpoint::{
    NetFileInfo, load_checkpoint, load_net, load_net_into, net_bytes, read_net_config, read_net_info, read_net_weights,
    save_checkpoint, save_net, slim_net,
};
pub use config::{
    Activation, FfnKind, MOVES_LEFT_CHANNELS, MOVES_LEFT_HIDDEN, NetConfig, NetFamily, NormKind, PolicyHeadKind,
    input_planes, score_bins,
};
pub use device::{BackendKind, DeviceSpec};
pub use encode::{NetGame, encode_batch};
pub use erased::{BatchLosses, HostBatch, Inference, Start, Training};
pub use error::NetError;
pub use evaluator::NetEvaluator;
pub use loss::{LossWeights, Losses, Targets, TerritoryTargets, losses, soft_cross_entropy};
pub use model::{Heads, MOVES_LEFT_SCALE, Net, NetOutput};
pub use ops::{CapaAutodiffBackend, CapaBackend, mish};
pub use precision::Precision;
pub use store::{Stored, Tensors};
pub use territory::Territory;
pub use threads::HostOutput;
pub use train::{OptimizerKind, ScheduleKind, StepReport, TrainConfig, Trainer};

/// burn itself, so that users of capa-net name the same version.
pub use burn;
