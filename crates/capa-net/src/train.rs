//! Training steps: the optimizers, the learning-rate schedule, global
//! gradient-norm clipping and the EMA copy of the weights.
//!
//! The optimizers are written here rather than taken from burn-optim for two
//! reasons: their state is keyed by parameter path, so it survives a restart
//! (burn keys it by random parameter ids, which a reloaded network does not
//! keep), and the clipping is PyTorch's global norm (burn clips each tensor
//! on its own).

use std::collections::HashMap;

use burn::module::{AutodiffModule, Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use crate::NetError;
use crate::loss::{LossWeights, Targets, losses};
use crate::model::Net;
use crate::ops::{AdamWStep, CapaAutodiffBackend, CapaBackend};
use crate::store::ParamPath;

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
        let checks: [(&str, f64, bool); 10] = [
            ("learning_rate", self.learning_rate, self.learning_rate > 0.0 && self.learning_rate <= 10.0),
            ("step_factor", self.step_factor, self.step_factor > 0.0 && self.step_factor <= 1.0),
            ("min_learning_rate", self.min_learning_rate, (0.0..=self.learning_rate).contains(&self.min_learning_rate)),
            ("momentum", self.momentum, (0.0..1.0).contains(&self.momentum)),
            ("beta2", self.beta2, (0.0..1.0).contains(&self.beta2)),
            ("epsilon", self.epsilon, self.epsilon > 0.0 && self.epsilon < 1.0),
            ("weight_decay", self.weight_decay, (0.0..1.0).contains(&self.weight_decay)),
            ("grad_clip_norm", self.grad_clip_norm, self.grad_clip_norm >= 0.0 && self.grad_clip_norm.is_finite()),
            ("ema_decay", self.ema_decay, (0.0..1.0).contains(&self.ema_decay)),
            ("step_every", self.step_every as f64, self.step_every > 0),
        ];
        if let Some((name, value, _)) = checks.iter().find(|(_, _, ok)| !ok) {
            return Err(NetError::Config(format!("{name} = {value} is out of range")));
        }
        let w = &self.loss_weights;
        for (name, value) in [("policy", w.policy), ("wdl", w.wdl), ("moves_left", w.moves_left), ("future", w.future)]
        {
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
    /// Global gradient norm before clipping.
    pub grad_norm: f32,
    /// Whether the update was skipped because the gradient was not finite
    /// (the weights, optimizer state and EMA are then unchanged).
    pub skipped: bool,
    /// The learning rate the step used.
    pub learning_rate: f64,
}

/// A network being trained: the weights, the optimizer state, the EMA copy
/// and the step count.
pub struct Trainer<B: CapaAutodiffBackend> {
    /// `None` only inside [`Trainer::step`], which takes the network out so
    /// that the optimizer holds the only reference to each weight and
    /// updates it in place (a second reference makes every update a copy).
    model: Option<Net<B>>,
    pub(crate) ema: Option<Net<B::InnerBackend>>,
    pub(crate) moments: HashMap<String, Moments<B::InnerBackend>>,
    pub(crate) step: u64,
    pub(crate) config: TrainConfig,
}

impl<B: CapaAutodiffBackend> Trainer<B> {
    /// Starts training `model` from step 0.
    ///
    /// # Errors
    /// [`NetError::Config`] when `config` is out of range.
    pub fn new(model: Net<B>, config: TrainConfig) -> Result<Trainer<B>, NetError> {
        config.validate()?;
        let ema = (config.ema_decay > 0.0).then(|| model.valid());
        Ok(Trainer { model: Some(model), ema, moments: HashMap::new(), step: 0, config })
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

    /// The network to play with: the EMA weights when there are, else the
    /// trained ones.
    pub fn inference_net(&self) -> Net<B::InnerBackend> {
        self.ema.clone().unwrap_or_else(|| self.model().valid())
    }

    /// One step on a batch: forward, the four losses, backward, clipping,
    /// the optimizer's update and the EMA's.
    pub fn step(&mut self, planes: Tensor<B, 4>, targets: Targets<B>) -> StepReport {
        let weights = self.config.loss_weights.clone();
        let output = self.model().forward(planes, weights.future > 0.0);
        let losses = losses(output, targets, &weights);
        let gradients = GradientsParams::from_grads(losses.total.backward(), self.model());

        let grad_norm = global_norm::<B, _>(self.model(), &gradients);
        let clip = self.config.grad_clip_norm;
        let scale = if clip > 0.0 && grad_norm > clip as f32 { clip / grad_norm as f64 } else { 1.0 };
        let learning_rate = self.config.learning_rate_at(self.step);
        self.step += 1;
        let scalar = |t: Tensor<B, 1>| t.into_scalar().elem::<f32>();
        let mut report = StepReport {
            total: scalar(losses.total),
            policy: scalar(losses.policy),
            wdl: scalar(losses.wdl),
            moves_left: scalar(losses.moves_left),
            future: scalar(losses.future),
            grad_norm,
            skipped: false,
            learning_rate,
        };
        // One bad batch must not poison the weights, the EMA and every
        // checkpoint after it.
        if !grad_norm.is_finite() {
            report.skipped = true;
            return report;
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
