//! The losses of the network's heads and their weights.

use burn::prelude::*;
use burn::tensor::activation::softplus;
use serde::{Deserialize, Serialize};

use crate::model::{MOVES_LEFT_SCALE, NetOutput};
use crate::ops::{CapaBackend, soft_cross_entropy_rows};

/// Logit given to illegal moves before the softmax: far below any real
/// logit, yet finite so that `0 x log p` stays 0 (and within f16's range).
const ILLEGAL_LOGIT: f32 = -1.0e4;

/// The moves-left Huber loss is quadratic within this distance (in
/// [`MOVES_LEFT_SCALE`] units) and linear beyond.
const HUBER_DELTA: f32 = 0.5;

/// How much each head's loss counts in the total.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LossWeights {
    /// Policy cross-entropy.
    pub policy: f32,
    /// WDL cross-entropy.
    pub wdl: f32,
    /// Moves-left Huber loss.
    pub moves_left: f32,
    /// Future-move cross-entropy (0 switches the head's training off).
    pub future: f32,
    /// Go: the ownership head's binary cross-entropy, averaged over the
    /// points (KataGo weighs its sum by 1.5 / points).
    pub ownership: f32,
    /// Go: the score head's cross-entropy over area differences.
    pub score: f32,
}

/// The heads' losses in the order training reports and shares them:
/// policy, WDL, moves-left, future, ownership, score.
pub(crate) const HEADS: usize = 6;

impl LossWeights {
    /// Each weight times its share (in [`HEADS`] order).
    pub(crate) fn scaled(&self, shares: [f32; HEADS]) -> LossWeights {
        LossWeights {
            policy: self.policy * shares[0],
            wdl: self.wdl * shares[1],
            moves_left: self.moves_left * shares[2],
            future: self.future * shares[3],
            ownership: self.ownership * shares[4],
            score: self.score * shares[5],
        }
    }

    /// Whether the ownership and score heads are trained.
    pub(crate) fn territory(&self) -> bool {
        self.ownership > 0.0 || self.score > 0.0
    }
}

impl Default for LossWeights {
    /// KataGo's weights for the future move (0.15) and ownership (1.5). The
    /// score's cross-entropy spreads over hundreds of area differences, and
    /// its weight keeps it from outweighing the value's (KataGo gives its
    /// score belief 0.02, with a second term on the cumulative distribution
    /// that capa does not have).
    fn default() -> LossWeights {
        LossWeights { policy: 1.0, wdl: 1.0, moves_left: 0.1, future: 0.15, ownership: 1.5, score: 0.05 }
    }
}

/// Training targets for a batch, on the device.
#[derive(Clone, Debug)]
pub struct Targets<B: Backend> {
    /// Search visit distribution over the policy map, `[batch, policy_size]`,
    /// zero off the legal moves; rows of zeros for positions without a
    /// policy target (they add nothing to the loss).
    pub policy: Tensor<B, 2>,
    /// Which policy entries are legal moves, `[batch, policy_size]`.
    pub legal: Tensor<B, 2, Bool>,
    /// Game result (or a mix with the search's value) as win/draw/loss
    /// probabilities for the side to move, `[batch, 3]`; rows of zeros for
    /// positions without a value target.
    pub wdl: Tensor<B, 2>,
    /// Plies left in the game, `[batch, 1]`.
    pub moves_left: Tensor<B, 2>,
    /// One-hot future move, `[batch, policy_size]`; rows of zeros where the
    /// game ended before it (they add nothing to the loss).
    pub future: Tensor<B, 2>,
    /// Go's targets from the end of the game; `None` for chess games.
    pub territory: Option<TerritoryTargets<B>>,
}

/// What the end of a Go game scored by area says about each of its positions.
#[derive(Clone, Debug)]
pub struct TerritoryTargets<B: Backend> {
    /// Whether the side to move owns each point at the end: 1 its, 0 the
    /// opponent's, 0.5 neither's; `[batch, squares]`.
    pub ownership: Tensor<B, 2>,
    /// The final area difference for the side to move, one-hot over -squares
    /// to +squares, `[batch, 2 squares + 1]`; rows of zeros where the game
    /// did not end scored (the row's ownership then counts nothing).
    pub score: Tensor<B, 2>,
}

impl<B: Backend> TerritoryTargets<B> {
    fn map(self, f: impl Fn(Tensor<B, 2>) -> Tensor<B, 2>) -> TerritoryTargets<B> {
        TerritoryTargets { ownership: f(self.ownership), score: f(self.score) }
    }
}

impl<B: Backend> Targets<B> {
    /// The targets of the batch's rows `rows`.
    pub fn rows(&self, rows: std::ops::Range<usize>) -> Targets<B> {
        let (start, len) = (rows.start, rows.len());
        Targets {
            policy: self.policy.clone().narrow(0, start, len),
            legal: self.legal.clone().narrow(0, start, len),
            wdl: self.wdl.clone().narrow(0, start, len),
            moves_left: self.moves_left.clone().narrow(0, start, len),
            future: self.future.clone().narrow(0, start, len),
            territory: self.territory.clone().map(|t| t.map(|t| t.narrow(0, start, len))),
        }
    }

    /// The targets moved to `device`.
    pub fn to_device(self, device: &B::Device) -> Targets<B> {
        Targets {
            policy: self.policy.to_device(device),
            legal: self.legal.to_device(device),
            wdl: self.wdl.to_device(device),
            moves_left: self.moves_left.to_device(device),
            future: self.future.to_device(device),
            territory: self.territory.map(|t| t.map(|t| t.to_device(device))),
        }
    }
}

/// Each head's loss and the weighted total (scalars on the device).
#[derive(Clone, Debug)]
pub struct Losses<B: Backend> {
    /// Weighted sum: what training minimises.
    pub total: Tensor<B, 1>,
    /// Policy cross-entropy.
    pub policy: Tensor<B, 1>,
    /// WDL cross-entropy.
    pub wdl: Tensor<B, 1>,
    /// Moves-left Huber loss.
    pub moves_left: Tensor<B, 1>,
    /// Future-move cross-entropy (zero without the head).
    pub future: Tensor<B, 1>,
    /// Ownership binary cross-entropy per point (zero without the head).
    pub ownership: Tensor<B, 1>,
    /// Score cross-entropy (zero without the head).
    pub score: Tensor<B, 1>,
}

impl<B: Backend> Losses<B> {
    /// The losses in [`HEADS`] order.
    pub(crate) fn heads(&self) -> [Tensor<B, 1>; HEADS] {
        [&self.policy, &self.wdl, &self.moves_left, &self.future, &self.ownership, &self.score].map(Clone::clone)
    }
}

/// Cross-entropy of `logits` against soft `targets`, averaged over the rows
/// that have a target: a row of zeros (no target for that position) adds
/// nothing and does not dilute the others. Where `legal` is given, the
/// entries it marks false are masked out: their logit becomes
/// [`ILLEGAL_LOGIT`] and they get no gradient.
pub fn soft_cross_entropy<B: CapaBackend>(
    logits: Tensor<B, 2>,
    targets: Tensor<B, 2>,
    legal: Option<Tensor<B, 2, Bool>>,
) -> Tensor<B, 1> {
    let rows = targets.clone().sum_dim(1).greater_elem(0.0).float().sum().clamp_min(1.0);
    soft_cross_entropy_rows(logits, targets, legal, ILLEGAL_LOGIT).sum() / rows
}

/// The losses of `output` against `targets`.
pub fn losses<B: CapaBackend>(output: NetOutput<B>, targets: Targets<B>, weights: &LossWeights) -> Losses<B> {
    let policy = soft_cross_entropy(output.policy, targets.policy, Some(targets.legal));
    let wdl = soft_cross_entropy(output.wdl, targets.wdl, None);
    let moves_left = huber(output.moves_left, targets.moves_left.div_scalar(MOVES_LEFT_SCALE));
    let future = match output.future {
        Some(logits) => soft_cross_entropy(logits, targets.future, None),
        None => policy.zeros_like(),
    };
    let (ownership, score) = match targets.territory {
        Some(TerritoryTargets { ownership: owned, score: margin }) => (
            output.ownership.map_or_else(|| policy.zeros_like(), |logits| ownership_loss(logits, owned, &margin)),
            output.score.map_or_else(|| policy.zeros_like(), |logits| soft_cross_entropy(logits, margin, None)),
        ),
        None => (policy.zeros_like(), policy.zeros_like()),
    };
    let total = policy.clone().mul_scalar(weights.policy)
        + wdl.clone().mul_scalar(weights.wdl)
        + moves_left.clone().mul_scalar(weights.moves_left)
        + future.clone().mul_scalar(weights.future)
        + ownership.clone().mul_scalar(weights.ownership)
        + score.clone().mul_scalar(weights.score);
    Losses { total, policy, wdl, moves_left, future, ownership, score }
}

/// Binary cross-entropy of each point's ownership `logits` against the
/// `owned` probabilities, averaged over the points of the rows whose
/// `margin` target is present (the games that ended scored).
fn ownership_loss<B: Backend>(logits: Tensor<B, 2>, owned: Tensor<B, 2>, margin: &Tensor<B, 2>) -> Tensor<B, 1> {
    let points = logits.dims()[1];
    let scored = margin.clone().sum_dim(1);
    let rows = scored.clone().sum().clamp_min(1.0);
    let per_point = softplus(logits.clone(), 1.0) - logits * owned;
    (per_point * scored).sum() / rows.mul_scalar(points as f32)
}

fn huber<B: Backend>(prediction: Tensor<B, 2>, target: Tensor<B, 2>) -> Tensor<B, 1> {
    let error = (prediction - target).abs();
    let quadratic = error.clone().clamp_max(HUBER_DELTA);
    let linear = error - quadratic.clone();
    (quadratic.powi_scalar(2).mul_scalar(0.5) + linear.mul_scalar(HUBER_DELTA)).mean()
}

#[cfg(test)]
mod tests {
    use burn::backend::Flex;
    use burn::backend::flex::FlexDevice;

    use super::*;
    use crate::config::NetConfig;
    use crate::model::{Heads, Net};
    use crate::ops::tests::{Ad, Gradients, random};

    #[test]
    fn cross_entropy_averages_over_the_rows_with_a_target() {
        let logits = Tensor::<Flex, 2>::from_floats([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]], &FlexDevice);
        let one_hot = Tensor::<Flex, 2>::from_floats([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], &FlexDevice);
        let alone = Tensor::<Flex, 2>::from_floats([[2.0, 0.0, -1.0]], &FlexDevice);
        let target = Tensor::<Flex, 2>::from_floats([[1.0, 0.0, 0.0]], &FlexDevice);
        let with_empty_row: f32 = soft_cross_entropy(logits, one_hot, None).into_scalar();
        let without: f32 = soft_cross_entropy(alone, target, None).into_scalar();
        // -log softmax(2, 0, -1)[0] = log(1 + e^-2 + e^-3)
        let expected = (1.0 + (-2.0f32).exp() + (-3.0f32).exp()).ln();
        assert!((without - expected).abs() < 1e-6, "{without} vs {expected}");
        assert!((with_empty_row - expected).abs() < 1e-6, "an empty row diluted the mean: {with_empty_row}");
        let nothing = Tensor::<Flex, 2>::zeros([2, 3], &FlexDevice);
        let logits = Tensor::<Flex, 2>::ones([2, 3], &FlexDevice);
        assert_eq!(soft_cross_entropy(logits, nothing, None).into_scalar(), 0.0, "no target at all is no loss");
    }

    /// Go's ownership and score heads: their shapes, their parameters in
    /// `parameter_count`, left out of a search's pass, trained by their
    /// losses (every parameter gets a gradient), and refused for chess.
    #[test]
    fn go_heads_have_their_shapes_and_gradients() {
        let game = capa_rules::GameKind::Go9;
        let config = NetConfig {
            channels: 16,
            blocks: 1,
            groups: 4,
            heads: 2,
            ownership_head: true,
            score_head: true,
            ..NetConfig::small(game)
        };
        config.validate().unwrap();
        let net = Net::<Ad>::new(&config, &FlexDevice);
        assert_eq!(net.num_params(), config.parameter_count());
        let planes = Tensor::<Ad, 4>::from_inner(random([2, crate::input_planes(game), 9, 9]));
        let search = net.forward(planes.clone(), Heads::SEARCH);
        assert!(search.ownership.is_none() && search.score.is_none() && search.future.is_none());
        let out = net.forward(planes, Heads::ALL);
        assert_eq!(out.ownership.as_ref().unwrap().dims(), [2, 81]);
        assert_eq!(out.score.as_ref().unwrap().dims(), [2, 163]);

        let device = &FlexDevice;
        let p = game.policy_size();
        let one_hot = |width: usize, at: [usize; 2]| {
            let mut data = vec![0.0f32; 2 * width];
            data[at[0]] = 1.0;
            data[width + at[1]] = 1.0;
            Tensor::<Ad, 2>::from_data(TensorData::new(data, [2, width]), device)
        };
        let owned: Vec<f32> = (0..2 * 81).map(|i| [0.0, 0.5, 1.0][i % 3]).collect();
        let targets = Targets {
            policy: one_hot(p, [3, 5]),
            legal: Tensor::<Ad, 2>::ones([2, p], device).greater_elem(0.0),
            wdl: one_hot(3, [0, 2]),
            moves_left: Tensor::ones([2, 1], device),
            future: one_hot(p, [1, 2]),
            territory: Some(TerritoryTargets {
                ownership: Tensor::from_data(TensorData::new(owned, [2, 81]), device),
                score: one_hot(163, [81 + 10, 81 - 4]),
            }),
        };
        let losses = losses(out, targets, &LossWeights::default());
        let [ownership, score]: [f32; 2] = [&losses.ownership, &losses.score].map(|l| l.clone().into_scalar());
        assert!(ownership > 0.0 && score > 0.0, "ownership {ownership}, score {score}");
        let grads = losses.total.backward();
        let mut visitor = Gradients { grads: &grads, checked: 0 };
        net.visit(&mut visitor);
        assert!(visitor.checked > 0);

        for game in [capa_rules::GameKind::Chess, capa_rules::GameKind::Capablanca] {
            for config in [
                NetConfig { ownership_head: true, ..NetConfig::small(game) },
                NetConfig { score_head: true, ..NetConfig::small(game) },
            ] {
                let error = config.validate().unwrap_err().to_string();
                assert!(error.contains("Go game"), "{error}");
            }
        }
    }
}
