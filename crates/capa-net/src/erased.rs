//! The trainer and the network behind types that do not name the backend.
//!
//! burn makes a backend a type, so code that touches tensors is generic
//! over it, and every crate that names a backend compiles burn's generic
//! code again for it. The trainer, the tools and the GUI instead hold a
//! [`Training`] or an [`Inference`], made here for the backend a
//! [`DeviceSpec`] names and fed with [`HostBatch`]es: burn's code is
//! compiled once, in this crate, for each backend compiled in.

use std::path::Path;

use burn::prelude::*;
use capa_rules::GameKind;

use crate::backend::{BackendTask, with_backend};
use crate::checkpoint::{load_checkpoint, load_net, load_net_into, net_bytes, read_net_weights, save_checkpoint};
use crate::config::{NetConfig, input_planes, score_bins};
use crate::device::{BackendKind, DeviceSpec};
use crate::error::NetError;
use crate::loss::{LossWeights, Targets, TerritoryTargets, losses};
use crate::model::{Heads, Net};
use crate::ops::{CapaAutodiffBackend, CapaBackend};
use crate::panics::quietly;
use crate::store::Tensors;
use crate::threads::{HostOutput, NetThreads, forward_on_host};
use crate::train::{StepReport, TrainConfig, Trainer};

/// A batch of positions and their targets on the host, ready to become
/// tensors.
#[derive(Clone, Debug, Default)]
pub struct HostBatch {
    /// Positions in the batch.
    pub size: usize,
    /// `[size, planes, ranks, files]`.
    pub planes: Vec<f32>,
    /// `[size, policy]`: the visit shares; zeros after a fast search.
    pub policy: Vec<f32>,
    /// `[size, policy]`: 1 on legal moves.
    pub legal: Vec<bool>,
    /// `[size, 3]`: win, draw, loss for the side to move.
    pub wdl: Vec<f32>,
    /// `[size]`: plies left in the game.
    pub moves_left: Vec<f32>,
    /// `[size, policy]`: the side to move's next move (one-hot), zeros if none.
    pub future: Vec<f32>,
    /// `[size]`, or empty: the policy index of the move each position's
    /// record names best, which the top-1 agreement counts against.
    pub best: Vec<u32>,
    /// Go, `[size, squares]`, or empty: each point's owner at the end of
    /// the game, 1 the side to move's, -1 the opponent's, 0 neither's;
    /// zeros where the game did not end scored.
    pub ownership: Vec<f32>,
    /// Go, `[size, 2 squares + 1]`, or empty: the final area difference for
    /// the side to move, one-hot from -squares to +squares; zeros where the
    /// game did not end scored.
    pub score: Vec<f32>,
}

impl HostBatch {
    /// The planes and the targets on `device`, shaped for `game`.
    pub fn into_tensors<B: Backend>(self, game: GameKind, device: &B::Device) -> (Tensor<B, 4>, Targets<B>) {
        let (n, policy) = (self.size, game.policy_size());
        let shape = [n, input_planes(game), game.ranks(), game.files()];
        let planes = Tensor::from_data(TensorData::new(self.planes, shape), device);
        let targets = Targets {
            policy: Tensor::from_data(TensorData::new(self.policy, [n, policy]), device),
            legal: Tensor::from_data(TensorData::new(self.legal, [n, policy]), device),
            wdl: Tensor::from_data(TensorData::new(self.wdl, [n, 3]), device),
            moves_left: Tensor::from_data(TensorData::new(self.moves_left, [n, 1]), device),
            future: Tensor::from_data(TensorData::new(self.future, [n, policy]), device),
            territory: (!self.score.is_empty()).then(|| {
                let owned: Vec<f32> = self.ownership.iter().map(|owner| (1.0 + owner) / 2.0).collect();
                TerritoryTargets {
                    ownership: Tensor::from_data(TensorData::new(owned, [n, game.squares()]), device),
                    score: Tensor::from_data(TensorData::new(self.score, [n, score_bins(game)]), device),
                }
            }),
        };
        (planes, targets)
    }
}

/// A network's losses on one batch, each the mean over its positions.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchLosses {
    /// Policy cross-entropy.
    pub policy: f64,
    /// WDL cross-entropy.
    pub wdl: f64,
    /// The weighted total.
    pub total: f64,
    /// The share of positions where the network's choice (its largest
    /// logit among the legal moves) is the batch's `best` move where it
    /// has them, else a move of the target's largest share.
    pub top1_agreement: f64,
}

/// What a [`Training`] starts from.
#[derive(Clone, Copy, Debug)]
pub enum Start<'a> {
    /// A new network.
    Fresh {
        /// Its architecture.
        config: &'a NetConfig,
        /// What its weights are drawn from.
        seed: u64,
        /// A network file of the same architecture whose weights it starts from instead.
        init: Option<&'a Path>,
    },
    /// A checkpoint file: the weights, the optimizer state, the EMA and the
    /// step count.
    Checkpoint(&'a Path),
}

/// A network being trained (a [`Trainer`]) on the backend and devices
/// chosen at run time.
pub struct Training {
    spec: DeviceSpec,
    trainer: Box<dyn TrainOn>,
}

impl Training {
    /// Starts training from `start` on device `spec` and, data-parallel,
    /// on the further devices `further` of its backend, computing in
    /// `spec`'s precision.
    ///
    /// # Errors
    /// As [`with_backend`], [`load_checkpoint`], [`load_net_into`],
    /// [`Trainer::new`], [`Trainer::spread_over`] and [`Trainer::compute_in`].
    pub fn start(
        spec: DeviceSpec,
        further: &[usize],
        start: Start<'_>,
        config: TrainConfig,
    ) -> Result<Training, NetError> {
        struct Begin<'a> {
            further: &'a [usize],
            start: Start<'a>,
            config: TrainConfig,
            spec: DeviceSpec,
        }
        impl BackendTask for Begin<'_> {
            type Output = Result<Box<dyn TrainOn>, NetError>;
            fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Self::Output {
                let mut trainer = match self.start {
                    Start::Fresh { config, seed, init } => {
                        B::seed(&device, seed);
                        let mut net = Net::<B>::new(config, &device);
                        if let Some(init) = init {
                            net = load_net_into(net, init)?;
                        }
                        Trainer::new(net, self.config)?
                    }
                    Start::Checkpoint(path) => load_checkpoint::<B>(path, self.config, &device)?,
                };
                let mut devices = vec![device];
                for &index in self.further {
                    devices.push(B::device(index)?);
                }
                trainer.spread_over(devices[1..].to_vec())?;
                trainer.compute_in(self.spec.precision)?;
                Ok(Box::new(TrainerOn { trainer, devices, spec: self.spec }))
            }
        }
        let trainer = with_backend(spec, Begin { further, start, config, spec })??;
        Ok(Training { spec, trainer })
    }

    /// One training step on `batch` (see [`Trainer::step`]).
    ///
    /// # Errors
    /// [`NetError::Backend`] when the GPU runtime fails.
    pub fn step(&mut self, batch: HostBatch) -> Result<StepReport, NetError> {
        let trainer = &mut self.trainer;
        guarded(self.spec, || trainer.step(batch))
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.trainer.steps()
    }

    /// Anchors the optimizer's `init_decay` to the network file `path`
    /// (see [`Trainer::decay_toward`]).
    ///
    /// # Errors
    /// As [`read_net_weights`] and [`Trainer::decay_toward`].
    pub fn decay_toward(&mut self, path: &Path) -> Result<(), NetError> {
        let (_, weights) = read_net_weights(path)?;
        let trainer = &mut self.trainer;
        guarded(self.spec, || trainer.decay_toward(&weights, &path.display().to_string()))?
    }

    /// Writes the checkpoint (see [`save_checkpoint`]).
    ///
    /// # Errors
    /// As [`save_checkpoint`]; [`NetError::Backend`] when the GPU runtime fails.
    pub fn save_checkpoint(&self, path: &Path) -> Result<(), NetError> {
        guarded(self.spec, || self.trainer.save(path))?
    }

    /// The network to play with ([`Trainer::inference_net`]) on the
    /// training's devices, computing in its precision.
    ///
    /// # Errors
    /// [`NetError::Backend`] when the GPU runtime fails.
    pub fn inference(&self) -> Result<Inference, NetError> {
        let net = guarded(self.spec, || self.trainer.inference())?;
        Ok(Inference { spec: self.spec, net })
    }
}

/// A network for inference on the backend and device chosen at run time,
/// computing in the spec's precision.
pub struct Inference {
    spec: DeviceSpec,
    net: Box<dyn InferOn>,
}

impl Inference {
    /// Loads a network file onto the device `spec` names.
    ///
    /// # Errors
    /// As [`load_net`] and [`with_backend`].
    pub fn load(path: &Path, spec: DeviceSpec) -> Result<Inference, NetError> {
        struct Load<'a>(&'a Path, DeviceSpec);
        impl BackendTask for Load<'_> {
            type Output = Result<Box<dyn InferOn>, NetError>;
            fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Self::Output {
                let net = load_net::<B::InnerBackend>(self.0, &device)?;
                Ok(Box::new(NetOn::new(net, vec![device], self.1)))
            }
        }
        let net = with_backend(spec, Load(path, spec))??;
        Ok(Inference { spec, net })
    }

    /// The architecture.
    pub fn config(&self) -> &NetConfig {
        self.net.config()
    }

    /// The network file's bytes (safetensors, f32 weights).
    ///
    /// # Errors
    /// As [`net_bytes`]; [`NetError::Backend`] when the GPU runtime fails.
    pub fn to_bytes(&self) -> Result<Vec<u8>, NetError> {
        guarded(self.spec, || self.net.to_bytes())?
    }

    /// The outputs for `rows` positions' `planes` (`[rows, planes, ranks, files]`).
    ///
    /// # Errors
    /// [`NetError::Config`] when `planes` is not that long;
    /// [`NetError::Backend`] when the GPU runtime fails.
    pub fn forward(&self, planes: Vec<f32>, rows: usize, heads: Heads) -> Result<HostOutput, NetError> {
        let game = self.config().game;
        let wanted = rows * input_planes(game) * game.ranks() * game.files();
        if planes.len() != wanted {
            return Err(NetError::Config(format!(
                "{rows} positions of {} take {wanted} plane values, not {}",
                game.name(),
                planes.len()
            )));
        }
        guarded(self.spec, || self.net.forward(planes, rows, heads))
    }

    /// The losses on `batch` with `weights`, and the top-1 agreement.
    ///
    /// # Errors
    /// [`NetError::Backend`] when the GPU runtime fails.
    pub fn losses(&self, batch: HostBatch, weights: &LossWeights) -> Result<BatchLosses, NetError> {
        guarded(self.spec, || self.net.losses(batch, weights))
    }

    /// The network on a thread of its own per device, computing in the
    /// spec's precision.
    pub(crate) fn threads(&self) -> Result<NetThreads, NetError> {
        guarded(self.spec, || self.net.threads())?
    }
}

/// Runs `f`; on a GPU backend, a panic of its runtime becomes an error
/// naming the device (the CPU backend's panics are bugs and stay panics).
fn guarded<R>(spec: DeviceSpec, f: impl FnOnce() -> R) -> Result<R, NetError> {
    if spec.backend == BackendKind::Cpu {
        return Ok(f());
    }
    quietly(f).map_err(|reason| NetError::Backend(format!("device {spec} failed: {reason}")))
}

/// [`Training`]'s work, for one backend.
trait TrainOn {
    fn step(&mut self, batch: HostBatch) -> StepReport;
    fn steps(&self) -> u64;
    fn decay_toward(&mut self, weights: &Tensors, what: &str) -> Result<(), NetError>;
    fn save(&self, path: &Path) -> Result<(), NetError>;
    fn inference(&self) -> Box<dyn InferOn>;
}

struct TrainerOn<B: CapaAutodiffBackend> {
    trainer: Trainer<B>,
    /// The trainer's own device first.
    devices: Vec<B::Device>,
    spec: DeviceSpec,
}

impl<B: CapaAutodiffBackend> TrainOn for TrainerOn<B> {
    fn step(&mut self, batch: HostBatch) -> StepReport {
        let game = self.trainer.model().config().game;
        let (planes, targets) = batch.into_tensors::<B>(game, &self.devices[0]);
        self.trainer.step(planes, targets)
    }

    fn steps(&self) -> u64 {
        self.trainer.steps()
    }

    fn decay_toward(&mut self, weights: &Tensors, what: &str) -> Result<(), NetError> {
        self.trainer.decay_toward(weights, what)
    }

    fn save(&self, path: &Path) -> Result<(), NetError> {
        save_checkpoint(&self.trainer, path)
    }

    fn inference(&self) -> Box<dyn InferOn> {
        let devices = self.devices.clone();
        Box::new(NetOn::<B::InnerBackend>::new(self.trainer.inference_net(), devices, self.spec))
    }
}

/// [`Inference`]'s work, for one backend.
trait InferOn: Send + Sync {
    fn config(&self) -> &NetConfig;
    fn to_bytes(&self) -> Result<Vec<u8>, NetError>;
    fn forward(&self, planes: Vec<f32>, rows: usize, heads: Heads) -> HostOutput;
    fn losses(&self, batch: HostBatch, weights: &LossWeights) -> BatchLosses;
    fn threads(&self) -> Result<NetThreads, NetError>;
}

struct NetOn<B: CapaBackend> {
    /// The f32 weights, which the network file holds.
    weights: Net<B>,
    /// The same network computing in the spec's precision.
    net: Net<B>,
    /// The first device computes; the evaluator's threads use them all.
    devices: Vec<B::Device>,
}

impl<B: CapaBackend> NetOn<B> {
    fn new(weights: Net<B>, devices: Vec<B::Device>, spec: DeviceSpec) -> NetOn<B> {
        let net = weights.clone().cast(spec.precision);
        NetOn { weights, net, devices }
    }
}

impl<B: CapaBackend> InferOn for NetOn<B> {
    fn config(&self) -> &NetConfig {
        self.weights.config()
    }

    fn to_bytes(&self) -> Result<Vec<u8>, NetError> {
        net_bytes(&self.weights)
    }

    fn forward(&self, planes: Vec<f32>, rows: usize, heads: Heads) -> HostOutput {
        forward_on_host(&self.net, planes, rows, &self.devices[0], heads)
    }

    fn losses(&self, mut batch: HostBatch, weights: &LossWeights) -> BatchLosses {
        let device = &self.devices[0];
        let game = self.net.config().game;
        let size = batch.size;
        let best = std::mem::take(&mut batch.best);
        let (planes, targets) = batch.into_tensors::<B>(game, device);
        let reference = if best.is_empty() {
            targets.policy.clone()
        } else {
            let width = game.policy_size();
            let mut one_hot = vec![0.0f32; best.len() * width];
            for (row, &index) in best.iter().enumerate() {
                one_hot[row * width + index as usize] = 1.0;
            }
            Tensor::from_data(TensorData::new(one_hot, [best.len(), width]), device)
        };
        let output = self.net.forward(planes, Heads::ALL);
        // The network's choice: the largest logit among legal moves.
        let masked = output.policy.clone().mask_fill(targets.legal.clone().bool_not(), f32::NEG_INFINITY);
        let chosen = reference.clone().gather(1, masked.argmax(1));
        let top = reference.max_dim(1);
        let agree: Vec<f32> = chosen.greater_equal(top).float().into_data().convert::<f32>().to_vec().expect("f32");
        let l = losses(output, targets, weights);
        let scalar = |t: Tensor<B, 1>| f64::from(t.into_scalar().elem::<f32>());
        BatchLosses {
            policy: scalar(l.policy),
            wdl: scalar(l.wdl),
            total: scalar(l.total),
            top1_agreement: agree.iter().map(|&a| f64::from(a)).sum::<f64>() / size.max(1) as f64,
        }
    }

    fn threads(&self) -> Result<NetThreads, NetError> {
        NetThreads::start(self.net.clone(), &self.devices)
    }
}
