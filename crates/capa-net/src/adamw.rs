//! One AdamW update's constants: what the training loop hands the optimizer
//! op of every backend, and the CPU kernel.

/// The constants of one AdamW update of one parameter.
#[derive(Clone, Copy, Debug)]
pub struct AdamWStep {
    /// The step size.
    pub learning_rate: f32,
    /// The first moment's decay per update.
    pub beta1: f32,
    /// The second moment's decay per update.
    pub beta2: f32,
    /// Added to the root of the second moment.
    pub epsilon: f32,
    /// Decoupled weight decay (0 for none).
    pub weight_decay: f32,
    /// The gradient is multiplied by this first (clipping).
    pub gradient_scale: f32,
    /// `1 - beta1^t` after `t` updates.
    pub bias_correction1: f32,
    /// `1 - beta2^t` after `t` updates.
    pub bias_correction2: f32,
}
