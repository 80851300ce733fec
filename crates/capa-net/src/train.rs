//! Training steps: the optimizers, the learning-rate schedule, global
//! gradient-norm clipping and the EMA copy of the weights.
//!
//! The optimizers are written here rather than taken from burn-optim for two
//! reasons: their state is keyed by parameter path, so it survives a restart
//! (burn keys it by random parameter ids, which a reloaded network does not
//! keep), and the clipping is PyTorch's global norm (burn clips each tensor
//! on its own).

use std::collections::HashMap;
use std::marker::PhantomData;

use burn::collective::{self, CollectiveConfig, CollectiveError, PeerId, ReduceOperation};
use burn::module::{AutodiffModule, Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use crate::NetError;
use crate::adamw::AdamWStep;
use crate::loss::{HEADS, LossWeights, Targets, losses};
use crate::model::{Heads, Net};
use crate::ops::{CapaAutodiffBackend, CapaBackend};
use crate::precision::Precision;
use crate::store::{ParamPath, Tensors, apply};

/// Which optimizer updates the weights.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// Adam with decoupled weight decay.
    AdamW,
    /// Stochastic gradient descent with momentum (Lc0's choice).
    Sgd,
}

/// How the learning rate moves after the warm-up.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleKind {
    /// Stays at the peak.
    Constant,
    /// Multiplied by `step_factor` every `step_every` steps.
    Step,
    /// Follows a half cosine from the peak down to `min_learning_rate` at `total_steps`.
    Cosine,
}

/// Everything about how the weights are updated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// The optimizer.
    pub optimizer: OptimizerKind,
    /// The peak learning rate.
    pub learning_rate: f64,
    /// Steps of linear warm-up: step `i` uses `(i + 1) / warmup_steps` of the peak.
    pub warmup_steps: u64,
    /// The schedule after the warm-up.
    pub schedule: ScheduleKind,
    /// `step` schedule: steps between decays.
    pub step_every: u64,
    /// `step` schedule: factor applied at each decay.
    pub step_factor: f64,
    /// `cosine` schedule: the step at which the rate reaches its minimum.
    pub total_steps: u64,
    /// `cosine` schedule: the final rate.
    pub min_learning_rate: f64,
    /// SGD's momentum, AdamW's beta1.
    pub momentum: f64,
    /// AdamW's beta2.
    pub beta2: f64,
    /// AdamW's epsilon.
    pub epsilon: f64,
    /// SGD: Nesterov momentum.
    pub nesterov: bool,
    /// Weight decay on every parameter of two or more dimensions (weight
    /// matrices, kernels, the attention's position-bias tables; not biases
    /// or norms): decoupled for AdamW, L2 for SGD.
    pub weight_decay: f64,
    /// Decoupled decay of every parameter towards the weights the trainer
    /// is anchored to ([`Trainer::decay_toward`]; L2-SP): each step moves
    /// each weight `learning_rate × init_decay` of its distance from its
    /// anchor back, whatever the optimizer. 0: none.
    pub init_decay: f64,
    /// Rescale the gradient when its global L2 norm exceeds this (0: never).
    pub grad_clip_norm: f64,
    /// Decay of the exponential moving average of the weights (0: no EMA).
    /// Early on the average warms up: step `t` uses
    /// `min(ema_decay, (1 + t) / (10 + t))`, so the random initial weights
    /// fade out within the first steps instead of lingering for
    /// `1 / (1 - ema_decay)` of them.
    pub ema_decay: f64,
    /// How much each head's loss counts.
    pub loss_weights: LossWeights,
}

impl Default for TrainConfig {
    fn default() -> TrainConfig {
        TrainConfig {
            optimizer: OptimizerKind::AdamW,
            learning_rate: 1e-3,
            warmup_steps: 100,
            schedule: ScheduleKind::Constant,
            step_every: 10_000,
            step_factor: 0.1,
            total_steps: 100_000,
            min_learning_rate: 1e-5,
            momentum: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            nesterov: true,
            weight_decay: 1e-4,
            init_decay: 0.0,
            grad_clip_norm: 10.0,
            ema_decay: 0.999,
            loss_weights: LossWeights::default(),
        }
    }
}

impl TrainConfig {
    /// The EMA decay used by step `step` (counted from 0): `ema_decay`,
    /// lowered while the average warms up.
    pub fn ema_decay_at(&self, step: u64) -> f64 {
        let step = step as f64;
        self.ema_decay.min((1.0 + step) / (10.0 + step))
    }

    /// Checks ranges.
    ///
    /// # Errors
    /// [`NetError::Config`] naming the field.
    pub fn validate(&self) -> Result<(), NetError> {
        let checks: [(&str, f64, bool); 11] = [
            ("learning_rate", self.learning_rate, self.learning_rate > 0.0 && self.learning_rate <= 10.0),
            ("step_factor", self.step_factor, self.step_factor > 0.0 && self.step_factor <= 1.0),
            ("min_learning_rate", self.min_learning_rate, (0.0..=self.learning_rate).contains(&self.min_learning_rate)),
            ("momentum", self.momentum, (0.0..1.0).contains(&self.momentum)),
            ("beta2", self.beta2, (0.0..1.0).contains(&self.beta2)),
            ("epsilon", self.epsilon, self.epsilon > 0.0 && self.epsilon < 1.0),
            ("weight_decay", self.weight_decay, (0.0..1.0).contains(&self.weight_decay)),
            // A step pulls back less than the whole distance.
            ("init_decay", self.init_decay, self.init_decay >= 0.0 && self.init_decay * self.learning_rate < 1.0),
            ("grad_clip_norm", self.grad_clip_norm, self.grad_clip_norm >= 0.0 && self.grad_clip_norm.is_finite()),
            ("ema_decay", self.ema_decay, (0.0..1.0).contains(&self.ema_decay)),
            ("step_every", self.step_every as f64, self.step_every > 0),
        ];
        if let Some((name, value, _)) = checks.iter().find(|(_, _, ok)| !ok) {
            return Err(NetError::Config(format!("{name} = {value} is out of range")));
        }
        let w = &self.loss_weights;
        let named = [
            ("policy", w.policy),
            ("wdl", w.wdl),
            ("moves_left", w.moves_left),
            ("future", w.future),
            ("ownership", w.ownership),
            ("score", w.score),
        ];
        for (name, value) in named {
            if !(value >= 0.0 && value.is_finite()) {
                return Err(NetError::Config(format!("loss_weights.{name} = {value} must be finite and non-negative")));
            }
        }
        Ok(())
    }

    /// The learning rate for step `step` (counted from 0).
    pub fn learning_rate_at(&self, step: u64) -> f64 {
        let peak = self.learning_rate;
        if step < self.warmup_steps {
            return peak * (step + 1) as f64 / self.warmup_steps as f64;
        }
        let since = step - self.warmup_steps;
        match self.schedule {
            ScheduleKind::Constant => peak,
            ScheduleKind::Step => peak * self.step_factor.powi((since / self.step_every).min(i32::MAX as u64) as i32),
            ScheduleKind::Cosine => {
                let span = self.total_steps.saturating_sub(self.warmup_steps).max(1);
                let progress = (since as f64 / span as f64).min(1.0);
                let min = self.min_learning_rate;
                min + 0.5 * (peak - min) * (1.0 + (std::f64::consts::PI * progress).cos())
            }
        }
    }
}

/// An optimizer's state for one parameter, flattened.
#[derive(Clone, Debug)]
pub(crate) struct Moments<B: Backend> {
    /// SGD's velocity, AdamW's first moment.
    pub first: Tensor<B, 1>,
    /// AdamW's second moment.
    pub second: Option<Tensor<B, 1>>,
    /// Updates this parameter has had: AdamW's bias correction counts them
    /// per parameter, so a head switched on late starts its own count.
    pub updates: u64,
}

/// What one training step reports.
#[derive(Clone, Debug, PartialEq)]
pub struct StepReport {
    /// Weighted total loss.
    pub total: f32,
    /// Policy cross-entropy.
    pub policy: f32,
    /// WDL cross-entropy.
    pub wdl: f32,
    /// Moves-left Huber loss.
    pub moves_left: f32,
    /// Future-move cross-entropy.
    pub future: f32,
    /// Go: ownership binary cross-entropy per point.
    pub ownership: f32,
    /// Go: score cross-entropy.
    pub score: f32,
    /// Global gradient norm before clipping.
    pub grad_norm: f32,
    /// Whether the update was skipped because the gradient was not finite
    /// (the weights, optimizer state and EMA are then unchanged).
    pub skipped: bool,
    /// The learning rate the step used.
    pub learning_rate: f64,
}

/// A network being trained: the weights, the optimizer state, the EMA copy
/// and the step count; spread over several devices, also a replica of all
/// of it on each further device.
pub struct Trainer<B: CapaAutodiffBackend> {
    /// `None` only inside [`Trainer::step`], which takes the network out so
    /// that the optimizer holds the only reference to each weight and
    /// updates it in place (a second reference makes every update a copy).
    model: Option<Net<B>>,
    pub(crate) ema: Option<Net<B::InnerBackend>>,
    pub(crate) moments: HashMap<String, Moments<B::InnerBackend>>,
    /// The weights [`TrainConfig::init_decay`] pulls towards, flattened, by
    /// parameter name; empty until [`Trainer::decay_toward`].
    anchor: HashMap<String, Tensor<B::InnerBackend, 1>>,
    pub(crate) step: u64,
    pub(crate) config: TrainConfig,
    /// The trainers on the further devices of [`Trainer::spread_over`].
    replicas: Vec<Replica<B>>,
    /// This trainer's place among the devices it is spread over.
    peer: Option<PeerId>,
    /// The forward and backward passes' float type.
    precision: Precision,
    /// What the loss is multiplied by before backward (f16), so that small
    /// gradients stay above f16's smallest number; halved after a step
    /// whose gradient overflowed, doubled after [`LOSS_SCALE_GROWTH`]
    /// steps in a row that did not.
    loss_scale: f32,
    /// Steps since the loss scale last changed.
    steps_at_scale: u64,
}

/// The first loss scale in f16: gradients down to 1e-10 stay
/// representable, and weight gradients up to 60 do not overflow (PyTorch's
/// `GradScaler` starts at 2^16 and halves its way down, skipping steps).
const INITIAL_LOSS_SCALE: f32 = 1024.0;

/// The largest loss scale growth reaches.
const MAX_LOSS_SCALE: f32 = 65_536.0;

/// Good steps in a row before the loss scale doubles (as PyTorch's).
const LOSS_SCALE_GROWTH: u64 = 2000;

/// A copy of a [`Trainer`] on a further device.
struct Replica<B: CapaAutodiffBackend> {
    device: B::Device,
    trainer: Trainer<B>,
}

impl<B: CapaAutodiffBackend> Trainer<B> {
    /// Starts training `model` from step 0.
    ///
    /// # Errors
    /// [`NetError::Config`] when `config` is out of range.
    pub fn new(model: Net<B>, config: TrainConfig) -> Result<Trainer<B>, NetError> {
        config.validate()?;
        let ema = (config.ema_decay > 0.0).then(|| model.valid());
        Ok(Trainer {
            model: Some(model),
            ema,
            moments: HashMap::new(),
            anchor: HashMap::new(),
            step: 0,
            config,
            replicas: Vec::new(),
            peer: None,
            precision: Precision::F32,
            loss_scale: 1.0,
            steps_at_scale: 0,
        })
    }

    /// Computes the forward and backward passes in `precision` from now
    /// on; the weights, the gradients they receive, the optimizer state
    /// and the EMA stay f32 (see [`Net::cast`]). In f16 the loss is scaled
    /// dynamically: a step whose gradient overflows is skipped
    /// ([`StepReport::skipped`]) and the scale halved.
    ///
    /// # Errors
    /// As [`Precision::check`] on the trainer's device.
    pub fn compute_in(&mut self, precision: Precision) -> Result<(), NetError> {
        precision.check::<B>(&self.device())?;
        let loss_scale = if precision.scales_loss() { INITIAL_LOSS_SCALE } else { 1.0 };
        (self.precision, self.loss_scale, self.steps_at_scale) = (precision, loss_scale, 0);
        for replica in &mut self.replicas {
            let trainer = &mut replica.trainer;
            (trainer.precision, trainer.loss_scale, trainer.steps_at_scale) = (precision, loss_scale, 0);
        }
        Ok(())
    }

    /// The network being trained.
    pub fn model(&self) -> &Net<B> {
        self.model.as_ref().expect("the network is back in place after every step")
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// The training settings.
    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// The device the trainer's own copy lives on.
    fn device(&self) -> B::Device {
        self.model().devices().into_iter().next().expect("a network has weights on a device")
    }

    /// The network to play with: the EMA weights when there are, else the
    /// trained ones.
    pub fn inference_net(&self) -> Net<B::InnerBackend> {
        self.ema.clone().unwrap_or_else(|| self.model().valid())
    }

    /// Anchors [`TrainConfig::init_decay`] to `weights` (by parameter name,
    /// as [`crate::read_net_weights`] returns them): usually the network
    /// the training started from, so that it stays near what it was
    /// given (L2-SP). Not part of a checkpoint: a resumed trainer is
    /// anchored again.
    ///
    /// # Errors
    /// [`NetError::Mismatch`] listing the parameters `weights` lacks or
    /// holds in another shape, and those it has that the network lacks.
    pub fn decay_toward(&mut self, weights: &Tensors, what: &str) -> Result<(), NetError> {
        // Loaded into a copy, the anchor is checked as every network file is.
        apply(self.model().valid(), "", weights, what)?;
        let device = self.device();
        self.anchor = weights
            .iter()
            .map(|(name, stored)| {
                let values = stored.values.clone();
                let elements = values.len();
                (name.clone(), Tensor::from_data(TensorData::new(values, [elements]), &device))
            })
            .collect();
        for replica in &mut self.replicas {
            replica.trainer.decay_toward(weights, what)?;
        }
        Ok(())
    }

    /// Trains on `others` too, data-parallel: each holds a copy of the
    /// network, the EMA and the optimizer state; every step splits the
    /// batch into one shard per device, sums the shards' gradients with
    /// burn-collective's all-reduce (weighted so that the sum is the whole
    /// batch's gradient) and applies the same update everywhere. The
    /// trainer's own device is the first; checkpoints and
    /// [`inference_net`](Self::inference_net) read its copy.
    ///
    /// # Errors
    /// [`NetError::Backend`] when it is spread already, or burn-collective
    /// refuses the devices (another trainer of the process holds them).
    pub fn spread_over(&mut self, others: Vec<B::Device>) -> Result<(), NetError> {
        if self.peer.is_some() {
            return Err(NetError::Backend("the trainer is spread over its devices already".to_string()));
        }
        if others.is_empty() {
            return Ok(());
        }
        let own = self.device();
        let replicas: Vec<Replica<B>> = others
            .into_iter()
            .map(|device| {
                let trainer = Trainer {
                    model: Some(self.model().clone().fork(&device)),
                    ema: self.ema.clone().map(|ema| ema.to_device(&device)),
                    moments: self
                        .moments
                        .iter()
                        .map(|(name, m)| {
                            let moments = Moments {
                                first: m.first.clone().to_device(&device),
                                second: m.second.clone().map(|s| s.to_device(&device)),
                                updates: m.updates,
                            };
                            (name.clone(), moments)
                        })
                        .collect(),
                    anchor: self.anchor.iter().map(|(name, a)| (name.clone(), a.clone().to_device(&device))).collect(),
                    step: self.step,
                    config: self.config.clone(),
                    replicas: Vec::new(),
                    peer: None,
                    precision: self.precision,
                    loss_scale: self.loss_scale,
                    steps_at_scale: self.steps_at_scale,
                };
                Replica { device, trainer }
            })
            .collect();
        let devices: Vec<B::Device> = std::iter::once(own).chain(replicas.iter().map(|r| r.device.clone())).collect();
        let group = CollectiveConfig::default().with_num_devices(devices.len());
        // Registering waits for every peer: one thread each.
        let registered: Vec<Result<(), CollectiveError>> = std::thread::scope(|scope| {
            let peers: Vec<_> = devices
                .iter()
                .enumerate()
                .map(|(id, device)| {
                    let group = group.clone();
                    scope.spawn(move || collective::register::<B::InnerBackend>(id.into(), device.clone(), group))
                })
                .collect();
            peers.into_iter().map(|peer| peer.join().expect("registering does not panic")).collect()
        });
        if let Some(Err(e)) = registered.into_iter().find(Result::is_err) {
            collective::reset_collective::<B::InnerBackend>();
            return Err(NetError::Backend(format!(
                "cannot spread training over {} devices: burn-collective refused ({e:?})",
                devices.len()
            )));
        }
        self.peer = Some(PeerId::from(0));
        self.replicas = replicas;
        for (i, replica) in self.replicas.iter_mut().enumerate() {
            replica.trainer.peer = Some(PeerId::from(i + 1));
        }
        Ok(())
    }

    /// One step on a batch: forward, the four losses, backward, clipping,
    /// the optimizer's update and the EMA's. Spread over several devices,
    /// each takes a shard of the batch.
    ///
    /// # Panics
    /// Spread over devices, when burn-collective fails to all-reduce or the
    /// batch has fewer rows than there are devices.
    pub fn step(&mut self, planes: Tensor<B, 4>, targets: Targets<B>) -> StepReport {
        if self.replicas.is_empty() {
            return self.step_on_shard(planes, targets, [1.0; HEADS]);
        }
        let shards = Shards::of(&targets, 1 + self.replicas.len());
        let mut replicas = std::mem::take(&mut self.replicas);
        let report = std::thread::scope(|scope| {
            let peers: Vec<_> = replicas
                .iter_mut()
                .zip(&shards.ranges[1..])
                .zip(&shards.shares[1..])
                .map(|((replica, range), &shares)| {
                    let planes = planes.clone().narrow(0, range.start, range.len()).to_device(&replica.device);
                    let targets = targets.rows(range.clone()).to_device(&replica.device);
                    scope.spawn(move || replica.trainer.step_on_shard(planes, targets, shares))
                })
                .collect();
            let range = shards.ranges[0].clone();
            let report =
                self.step_on_shard(planes.narrow(0, range.start, range.len()), targets.rows(range), shards.shares[0]);
            for peer in peers {
                peer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            }
            report
        });
        self.replicas = replicas;
        report
    }

    /// [`step`](Self::step) on this trainer's shard of the batch, whose
    /// losses count `shares` (in [`HEADS`] order) of the whole batch's.
    fn step_on_shard(&mut self, planes: Tensor<B, 4>, targets: Targets<B>, shares: [f32; HEADS]) -> StepReport {
        let weights = self.config.loss_weights.clone();
        let heads = Heads { future: weights.future > 0.0, territory: weights.territory() };
        let output = if self.precision == Precision::F32 {
            self.model().forward(planes, heads)
        } else {
            self.model().clone().cast(self.precision).forward(planes, heads)
        };
        let losses = losses(output, targets, &weights.scaled(shares));
        let backward = if self.loss_scale == 1.0 {
            losses.total.backward()
        } else {
            losses.total.clone().mul_scalar(self.loss_scale).backward()
        };
        let mut gradients = GradientsParams::from_grads(backward, self.model());
        // The total, then each head's loss: one read back.
        let heads = losses.heads().into_iter().zip(shares).map(|(loss, share)| loss.inner().mul_scalar(share));
        let mut reported = Tensor::cat(std::iter::once(losses.total.inner()).chain(heads).collect(), 0);
        if let Some(peer) = self.peer {
            gradients = all_reduce_gradients(self.model(), gradients, peer);
            reported = all_reduce(peer, reported);
        }

        let grad_norm = global_norm::<B, _>(self.model(), &gradients) / self.loss_scale;
        let clip = self.config.grad_clip_norm;
        let clipping = if clip > 0.0 && grad_norm > clip as f32 { clip / grad_norm as f64 } else { 1.0 };
        // Unscaling folds into the update's gradient factor.
        let scale = clipping / f64::from(self.loss_scale);
        let learning_rate = self.config.learning_rate_at(self.step);
        self.step += 1;
        let reported = reported.into_data().convert::<f32>().into_vec::<f32>().expect("f32 losses");
        let mut report = StepReport {
            total: reported[0],
            policy: reported[1],
            wdl: reported[2],
            moves_left: reported[3],
            future: reported[4],
            ownership: reported[5],
            score: reported[6],
            grad_norm,
            skipped: false,
            learning_rate,
        };
        // One bad batch must not poison the weights, the EMA and every
        // checkpoint after it.
        if !grad_norm.is_finite() {
            report.skipped = true;
            if self.precision.scales_loss() {
                self.loss_scale = (self.loss_scale / 2.0).max(1.0);
                self.steps_at_scale = 0;
            }
            return report;
        }
        if self.precision.scales_loss() {
            self.steps_at_scale += 1;
            if self.steps_at_scale == LOSS_SCALE_GROWTH {
                self.loss_scale = (self.loss_scale * 2.0).min(MAX_LOSS_SCALE);
                self.steps_at_scale = 0;
            }
        }

        let mut update = Update::<B> {
            path: ParamPath::default(),
            gradients,
            moments: &mut self.moments,
            config: &self.config,
            learning_rate,
            scale,
            updated: HashMap::new(),
            keep_updated: self.ema.is_some(),
            anchor: &self.anchor,
        };
        let model = self.model.take().expect("the network is back in place after every step");
        self.model = Some(model.map(&mut update));
        let updated = update.updated;
        if let Some(ema) = self.ema.take() {
            let decay = self.config.ema_decay_at(self.step - 1);
            self.ema = Some(ema.map(&mut Average { path: ParamPath::default(), updated, decay }));
        }
        report
    }
}

impl<B: CapaAutodiffBackend> Drop for Trainer<B> {
    fn drop(&mut self) {
        if let Some(peer) = self.peer {
            let _ = collective::finish_collective::<B::InnerBackend>(peer);
        }
    }
}

/// How a batch is split over devices: each one's rows, and the share of
/// the whole batch's loss each of its losses stands for (the
/// cross-entropies average over the rows that have a target, so a shard's
/// share is its count of those rows over the batch's; the moves-left loss
/// averages over every row).
struct Shards {
    ranges: Vec<std::ops::Range<usize>>,
    shares: Vec<[f32; HEADS]>,
}

impl Shards {
    fn of<B: Backend>(targets: &Targets<B>, devices: usize) -> Shards {
        let rows = targets.wdl.dims()[0];
        let ranges: Vec<_> = (0..devices).map(|i| rows * i / devices..rows * (i + 1) / devices).collect();
        let has_target = |t: &Tensor<B, 2>| t.clone().sum_dim(1).greater_elem(0.0).float();
        // Per row, in HEADS order, whether the head has a target there
        // (ownership and score both have one where the game ended scored).
        let scored = targets
            .territory
            .as_ref()
            .map_or_else(|| Tensor::zeros([rows, 1], &targets.wdl.device()), |t| has_target(&t.score));
        let flags = [
            has_target(&targets.policy),
            has_target(&targets.wdl),
            Tensor::ones([rows, 1], &targets.wdl.device()),
            has_target(&targets.future),
            scored.clone(),
            scored,
        ];
        let all = Tensor::cat(flags.to_vec(), 1).into_data().convert::<f32>().into_vec::<f32>().expect("f32 flags");
        let count = |range: &std::ops::Range<usize>, head: usize| -> f32 {
            range.clone().map(|row| all[row * HEADS + head]).sum()
        };
        let totals: [f32; HEADS] = std::array::from_fn(|head| count(&(0..rows), head));
        let shares = ranges
            .iter()
            .map(|range| {
                std::array::from_fn(|head| if totals[head] > 0.0 { count(range, head) / totals[head] } else { 0.0 })
            })
            .collect();
        Shards { ranges, shares }
    }
}

/// Every gradient summed over the peers, in the order the network lists
/// its weights (the same on every peer).
fn all_reduce_gradients<B: CapaAutodiffBackend>(
    model: &Net<B>,
    gradients: GradientsParams,
    peer: PeerId,
) -> GradientsParams {
    struct Reduce<'a, B: CapaAutodiffBackend> {
        gradients: &'a mut GradientsParams,
        peer: PeerId,
        _backend: PhantomData<B>,
    }
    impl<B: CapaAutodiffBackend> ModuleVisitor<B> for Reduce<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if let Some(gradient) = self.gradients.remove::<B::InnerBackend, D>(param.id) {
                self.gradients.register(param.id, all_reduce(self.peer, gradient));
            }
        }
    }
    let mut gradients = gradients;
    model.visit(&mut Reduce::<B> { gradients: &mut gradients, peer, _backend: PhantomData });
    gradients
}

/// `tensor` summed over the peers.
fn all_reduce<B: Backend, const D: usize>(peer: PeerId, tensor: Tensor<B, D>) -> Tensor<B, D> {
    let sum = collective::all_reduce::<B>(peer, tensor.into_primitive().tensor(), ReduceOperation::Sum)
        .unwrap_or_else(|e| panic!("the all-reduce across devices failed: {e:?}"));
    Tensor::from_primitive(TensorPrimitive::Float(sum))
}

/// The L2 norm of all gradients together, with one read back from the device.
fn global_norm<B: CapaAutodiffBackend, M: Module<B>>(model: &M, gradients: &GradientsParams) -> f32 {
    struct SquaredNorm<'a, B: CapaAutodiffBackend> {
        gradients: &'a GradientsParams,
        sum: Option<Tensor<B::InnerBackend, 1>>,
    }
    impl<B: CapaAutodiffBackend> ModuleVisitor<B> for SquaredNorm<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if let Some(gradient) = self.gradients.get::<B::InnerBackend, D>(param.id) {
                let elements = gradient.shape().num_elements();
                let squares = Tensor::<B::InnerBackend, 1>::from_primitive(TensorPrimitive::Float(
                    <B::InnerBackend as CapaBackend>::sum_of_squares(
                        gradient.reshape([elements]).into_primitive().tensor(),
                    ),
                ));
                self.sum = Some(match self.sum.take() {
                    Some(sum) => sum + squares,
                    None => squares,
                });
            }
        }
    }
    let mut visitor = SquaredNorm::<B> { gradients, sum: None };
    model.visit(&mut visitor);
    visitor.sum.map_or(0.0, |sum| sum.into_scalar().elem::<f32>().sqrt())
}

struct Update<'a, B: AutodiffBackend> {
    path: ParamPath,
    gradients: GradientsParams,
    moments: &'a mut HashMap<String, Moments<B::InnerBackend>>,
    config: &'a TrainConfig,
    learning_rate: f64,
    scale: f64,
    updated: HashMap<String, Tensor<B::InnerBackend, 1>>,
    keep_updated: bool,
    anchor: &'a HashMap<String, Tensor<B::InnerBackend, 1>>,
}

impl<B: CapaAutodiffBackend> ModuleMapper<B> for Update<'_, B> {
    fn enter_module(&mut self, name: &str, _: &str) {
        self.path.enter(name);
    }

    fn exit_module(&mut self, _: &str, _: &str) {
        self.path.exit();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let Some(gradient) = self.gradients.remove::<B::InnerBackend, D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let shape = tensor.dims();
        let elements = shape.iter().product::<usize>();
        let weight = tensor.inner().reshape([elements]);
        let gradient = gradient.reshape([elements]);
        let decay = if D >= 2 { self.config.weight_decay } else { 0.0 };
        let name = self.path.name();
        let c = self.config;
        let lr = self.learning_rate;
        let previous = self.moments.remove(&name);
        let updates = previous.as_ref().map_or(0, |m| m.updates) + 1;
        // Decoupled, from the weight before the update (as AdamW's decay);
        // computed first so that the update still holds the only reference.
        let pull = match self.anchor.get(&name) {
            Some(anchor) if c.init_decay > 0.0 => Some((weight.clone() - anchor.clone()).mul_scalar(lr * c.init_decay)),
            _ => None,
        };
        let weight = match c.optimizer {
            OptimizerKind::Sgd => {
                let mut gradient = if self.scale != 1.0 { gradient.mul_scalar(self.scale) } else { gradient };
                if decay > 0.0 {
                    gradient = gradient + weight.clone().mul_scalar(decay);
                }
                let velocity = match previous {
                    Some(m) => m.first.mul_scalar(c.momentum) + gradient.clone(),
                    None => gradient.clone(),
                };
                let direction =
                    if c.nesterov { gradient + velocity.clone().mul_scalar(c.momentum) } else { velocity.clone() };
                self.moments.insert(name.clone(), Moments { first: velocity, second: None, updates });
                weight - direction.mul_scalar(lr)
            }
            OptimizerKind::AdamW => {
                let t = updates.min(i32::MAX as u64) as i32;
                let step = AdamWStep {
                    learning_rate: lr as f32,
                    beta1: c.momentum as f32,
                    beta2: c.beta2 as f32,
                    epsilon: c.epsilon as f32,
                    weight_decay: decay as f32,
                    gradient_scale: self.scale as f32,
                    bias_correction1: (1.0 - c.momentum.powi(t)) as f32,
                    bias_correction2: (1.0 - c.beta2.powi(t)) as f32,
                };
                let moments = match previous {
                    Some(Moments { first, second: Some(second), .. }) => {
                        Some([first.into_primitive().tensor(), second.into_primitive().tensor()])
                    }
                    _ => None,
                };
                let [weight, first, second] = <B::InnerBackend as CapaBackend>::adamw_step(
                    weight.into_primitive().tensor(),
                    gradient.into_primitive().tensor(),
                    moments,
                    step,
                )
                .map(|t| Tensor::<B::InnerBackend, 1>::from_primitive(TensorPrimitive::Float(t)));
                self.moments.insert(name.clone(), Moments { first, second: Some(second), updates });
                weight
            }
        };
        let weight = match pull {
            Some(pull) => weight - pull,
            None => weight,
        };
        if self.keep_updated {
            self.updated.insert(name, weight.clone());
        }
        let tensor = Tensor::from_inner(weight.reshape(shape)).require_grad();
        Param::from_mapped_value(id, tensor, mapper)
    }
}

/// Moves each EMA weight towards the freshly updated one.
struct Average<B: CapaBackend> {
    path: ParamPath,
    updated: HashMap<String, Tensor<B, 1>>,
    decay: f64,
}

impl<B: CapaBackend> ModuleMapper<B> for Average<B> {
    fn enter_module(&mut self, name: &str, _: &str) {
        self.path.enter(name);
    }

    fn exit_module(&mut self, _: &str, _: &str) {
        self.path.exit();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let tensor = match self.updated.remove(&self.path.name()) {
            Some(current) => {
                let shape = tensor.dims();
                let average = B::moving_average(
                    tensor.reshape([shape.iter().product::<usize>()]).into_primitive().tensor(),
                    current.into_primitive().tensor(),
                    self.decay as f32,
                );
                Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(average)).reshape(shape)
            }
            None => tensor,
        };
        Param::from_mapped_value(id, tensor, mapper)
    }
}
