//! The network: a residual tower with squeeze-excitation, transformer blocks
//! with relative position bias over the squares, and four heads.
//!
//! ```text
//! planes -> conv3x3 -> GN -> Mish -> [ResBlock] x blocks
//!        -> one token per square (+ position embedding)
//!        -> [TransformerBlock] x transformer_blocks
//!        -> policy | WDL | moves-left | future move | ownership | score
//! ```
//!
//! The last two are Go's (KataGo's auxiliary targets), in networks that
//! ask for them.
//!
//! Lc0's family ([`NetFamily::Lc0`]) is the same tower without the
//! normalisation: its convolutions have biases, its activation is Mish or
//! ReLU, its policy head's convolutions are 3x3, and its moves-left head
//! ends in a ReLU, as lc0 computes them.

use burn::module::{ModuleMapper, ModuleVisitor, Param};
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::{relu, sigmoid, silu, softplus};
use burn::tensor::{DType, FloatDType};

use crate::config::{
    Activation, FfnKind, MOVES_LEFT_CHANNELS, MOVES_LEFT_HIDDEN, NetConfig, NetFamily, NormKind, POLICY_CHANNELS,
    PolicyHeadKind, score_bins,
};
use crate::ops::{
    CapaBackend, biased_attention, channel_moments, conv_same, dense, layer_norm, mish, rms_norm, scale_shift_mish,
    swap_last_dims,
};
use crate::precision::{Precision, in_dtype};

/// Output layers start this small, so a fresh network gives near-uniform
/// priors and a near-flat WDL.
const OUTPUT_GAIN: f64 = 0.01;

/// The moves-left head predicts plies in these units (keeps its output and
/// loss near 1).
pub const MOVES_LEFT_SCALE: f32 = 20.0;

/// A convolution that keeps the board's size (stride 1, zero padding of
/// half the kernel), run through [`CapaBackend::conv_same`] so that the CPU
/// gets capa's kernels. Initialised as burn's `Conv2d` is (Kaiming uniform
/// with gain 1/sqrt(3)), with the same parameter names.
#[derive(Module, Debug)]
pub struct Conv<B: Backend> {
    weight: Param<Tensor<B, 4>>,
    bias: Option<Param<Tensor<B, 1>>>,
}

impl<B: CapaBackend> Conv<B> {
    fn new(inputs: usize, outputs: usize, kernel: usize, bias: bool, device: &B::Device) -> Self {
        let initializer = Initializer::KaimingUniform { gain: 1.0 / 3f64.sqrt(), fan_out_only: false };
        Conv::with_initializer(inputs, outputs, kernel, bias, initializer, device)
    }

    fn with_initializer(
        inputs: usize,
        outputs: usize,
        kernel: usize,
        bias: bool,
        initializer: Initializer,
        device: &B::Device,
    ) -> Self {
        let (fan_in, fan_out) = (inputs * kernel * kernel, outputs * kernel * kernel);
        Conv {
            weight: initializer.init_with([outputs, inputs, kernel, kernel], Some(fan_in), Some(fan_out), device),
            bias: bias.then(|| initializer.init_with([outputs], Some(fan_in), Some(fan_out), device)),
        }
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        conv_same(x, self.weight.val(), self.bias.as_ref().map(Param::val))
    }
}

/// A tower's 3x3 convolution: without a bias before capa's GroupNorm, with
/// one in Lc0's family (which has no normalisation after it).
fn conv3x3<B: CapaBackend>(inputs: usize, outputs: usize, family: NetFamily, device: &B::Device) -> Conv<B> {
    Conv::new(inputs, outputs, 3, family == NetFamily::Lc0, device)
}

/// A 3x3 convolution with a bias that an activation follows and no
/// normalisation (Lc0's family): He's initialisation keeps the scale of its
/// input through the activation.
fn activated_conv3x3<B: CapaBackend>(inputs: usize, outputs: usize, device: &B::Device) -> Conv<B> {
    let initializer = Initializer::KaimingUniform { gain: 2f64.sqrt(), fan_out_only: false };
    Conv::with_initializer(inputs, outputs, 3, true, initializer, device)
}

/// The activation `activation` of `x`.
fn activate<B: CapaBackend, const D: usize>(activation: Activation, x: Tensor<B, D>) -> Tensor<B, D> {
    match activation {
        Activation::Mish => mish(x),
        Activation::Relu => relu(x),
    }
}

fn conv1x1<B: CapaBackend>(inputs: usize, outputs: usize, device: &B::Device) -> Conv<B> {
    Conv::new(inputs, outputs, 1, true, device)
}

/// A convolution that is an output layer: it starts as small as
/// [`output_layer`].
fn output_conv<B: CapaBackend>(inputs: usize, outputs: usize, kernel: usize, device: &B::Device) -> Conv<B> {
    Conv::with_initializer(inputs, outputs, kernel, true, Initializer::XavierUniform { gain: OUTPUT_GAIN }, device)
}

fn output_layer<B: Backend>(inputs: usize, outputs: usize, device: &B::Device) -> Linear<B> {
    LinearConfig::new(inputs, outputs).with_initializer(Initializer::XavierUniform { gain: OUTPUT_GAIN }).init(device)
}

/// Group normalisation with a learned scale (`gamma`) and shift (`beta`)
/// per channel.
///
/// It returns per-(sample, channel) coefficients rather than the normalised
/// tensor, so that a caller applies normalisation, affine and whatever scale
/// follows (squeeze-excitation) in one multiply-add over the activations.
#[derive(Module, Debug)]
pub struct GroupNorm<B: Backend> {
    gamma: Param<Tensor<B, 1>>,
    beta: Param<Tensor<B, 1>>,
    groups: usize,
}

/// What [`GroupNorm::coefficients`] computes, each `[batch, channels]`.
struct Normalisation<B: Backend> {
    /// Multiply the activations by this...
    scale: Tensor<B, 2>,
    /// ...then add this.
    shift: Tensor<B, 2>,
    /// Each channel's mean over the board, before normalisation.
    channel_mean: Tensor<B, 2>,
}

impl<B: CapaBackend> GroupNorm<B> {
    const EPSILON: f64 = 1e-5;

    fn new(groups: usize, channels: usize, device: &B::Device) -> Self {
        GroupNorm {
            gamma: Param::from_tensor(Tensor::ones([channels], device)),
            beta: Param::from_tensor(Tensor::zeros([channels], device)),
            groups,
        }
    }

    /// In f32 whatever the activations' type: a sum of squares over the
    /// board overflows f16, and a variance as a difference of two means
    /// loses all its digits in it.
    fn coefficients(&self, x: &Tensor<B, 4>) -> Normalisation<B> {
        let [batch, channels, ranks, files] = x.dims();
        let (squares, per_group) = (ranks * files, channels / self.groups);
        let moments = channel_moments(in_dtype(x.clone(), DType::F32));
        let sums = moments.clone().narrow(2, 0, 1).reshape([batch, channels]);
        let squares_sums = moments.narrow(2, 1, 1).reshape([batch, channels]);
        let per_group_mean = |t: Tensor<B, 2>| {
            t.reshape([batch, self.groups, per_group])
                .sum_dim(2)
                .div_scalar((per_group * squares) as f64)
                .expand([batch, self.groups, per_group])
                .reshape([batch, channels])
        };
        let mean = per_group_mean(sums.clone());
        let variance = (per_group_mean(squares_sums) - mean.clone().powi_scalar(2)).clamp_min(0.0);
        let gamma = in_dtype(self.gamma.val(), DType::F32).unsqueeze_dim(0);
        let scale = variance.add_scalar(Self::EPSILON).sqrt().recip() * gamma;
        let shift = in_dtype(self.beta.val(), DType::F32).unsqueeze_dim(0) - mean * scale.clone();
        let dtype = x.dtype();
        Normalisation {
            scale: in_dtype(scale, dtype),
            shift: in_dtype(shift, dtype),
            channel_mean: in_dtype(sums.div_scalar(squares as f64), dtype),
        }
    }

    /// Normalisation, then Mish (which always follows it in this network).
    fn forward_mish(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let Normalisation { scale, shift, .. } = self.coefficients(&x);
        scale_shift_mish(x, scale, shift, None)
    }
}

/// Squeeze-excitation: the mean of each channel over the board becomes a
/// per-channel scale (through a sigmoid) and bias (Lc0's SE unit too).
#[derive(Module, Debug)]
pub struct SqueezeExcitation<B: Backend> {
    squeeze: Linear<B>,
    excite: Linear<B>,
}

impl<B: CapaBackend> SqueezeExcitation<B> {
    fn new(channels: usize, ratio: usize, device: &B::Device) -> Self {
        SqueezeExcitation {
            squeeze: LinearConfig::new(channels, channels / ratio).init(device),
            excite: LinearConfig::new(channels / ratio, 2 * channels).init(device),
        }
    }

    /// The scale and bias, `[batch, channels]` each, for channel means `pooled`.
    fn excitation(&self, pooled: Tensor<B, 2>, activation: Activation) -> (Tensor<B, 2>, Tensor<B, 2>) {
        let channels = pooled.dims()[1];
        let excitation = dense(&self.excite, activate(activation, dense(&self.squeeze, pooled)));
        (sigmoid(excitation.clone().narrow(1, 0, channels)), excitation.narrow(1, channels, channels))
    }
}

/// conv -> GN -> Mish -> conv -> GN -> SE -> + input -> Mish; in Lc0's
/// family conv -> act -> conv -> SE -> + input -> act.
#[derive(Module, Debug)]
pub struct ResBlock<B: Backend> {
    conv1: Conv<B>,
    norm1: Option<GroupNorm<B>>,
    conv2: Conv<B>,
    norm2: Option<GroupNorm<B>>,
    se: SqueezeExcitation<B>,
    #[module(skip)]
    activation: Activation,
}

impl<B: CapaBackend> ResBlock<B> {
    fn new(config: &NetConfig, device: &B::Device) -> Self {
        let channels = config.channels;
        let norm = || (config.family == NetFamily::Capa).then(|| GroupNorm::new(config.groups, channels, device));
        ResBlock {
            conv1: match config.family {
                NetFamily::Capa => conv3x3(channels, channels, config.family, device),
                NetFamily::Lc0 => activated_conv3x3(channels, channels, device),
            },
            norm1: norm(),
            conv2: conv3x3(channels, channels, config.family, device),
            norm2: norm(),
            se: SqueezeExcitation::new(channels, config.se_ratio, device),
            activation: config.activation,
        }
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let (Some(norm1), Some(norm2)) = (&self.norm1, &self.norm2) else {
            return self.forward_unnormalised(x);
        };
        let h = norm1.forward_mish(self.conv1.forward(x.clone()));
        let h = self.conv2.forward(h);
        // The SE pools GN2's output: its channel means follow from the
        // coefficients, so GN2, the SE's scale and its bias fold into one
        // multiply-add over the activations.
        let norm = norm2.coefficients(&h);
        let pooled = norm.channel_mean * norm.scale.clone() + norm.shift.clone();
        let (se_scale, se_bias) = self.se.excitation(pooled, Activation::Mish);
        scale_shift_mish(h, norm.scale * se_scale.clone(), norm.shift * se_scale + se_bias, Some(x))
    }

    /// Lc0's block: the SE pools conv2's output (its bias included).
    fn forward_unnormalised(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let h = self.conv2.forward(activate(self.activation, self.conv1.forward(x.clone())));
        let [batch, channels, _, _] = h.dims();
        let pooled = h.clone().mean_dim(3).mean_dim(2).reshape([batch, channels]);
        let (se_scale, se_bias) = self.se.excitation(pooled, self.activation);
        match self.activation {
            Activation::Mish => scale_shift_mish(h, se_scale, se_bias, Some(x)),
            Activation::Relu => {
                let per_channel = |t: Tensor<B, 2>| t.reshape([batch, channels, 1, 1]);
                relu(h * per_channel(se_scale) + per_channel(se_bias) + x)
            }
        }
    }
}

/// A normalisation of each token: LayerNorm when it has a shift (`beta`),
/// RMSNorm when it has not. Its parameters are named as burn's `LayerNorm`'s.
#[derive(Module, Debug)]
pub struct TokenNorm<B: Backend> {
    gamma: Param<Tensor<B, 1>>,
    beta: Option<Param<Tensor<B, 1>>>,
}

impl<B: CapaBackend> TokenNorm<B> {
    fn new(kind: NormKind, width: usize, device: &B::Device) -> Self {
        TokenNorm {
            gamma: Param::from_tensor(Tensor::ones([width], device)),
            beta: (kind == NormKind::Layer).then(|| Param::from_tensor(Tensor::zeros([width], device))),
        }
    }

    /// `x`: `[rows, width]`.
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        match &self.beta {
            Some(beta) => layer_norm(x, self.gamma.val(), beta.val()),
            None => rms_norm(x, self.gamma.val()),
        }
    }
}

/// Pre-norm multi-head attention with a learned bias per head for each
/// (rank difference, file difference) between two squares, then a pre-norm
/// feed-forward. The options of [`NetConfig`] choose the norm (LayerNorm or
/// RMSNorm), QK-norm, the projections' bias and the feed-forward (Mish or
/// SwiGLU).
#[derive(Module, Debug)]
pub struct TransformerBlock<B: Backend> {
    attention_norm: TokenNorm<B>,
    query: Linear<B>,
    key: Linear<B>,
    value: Linear<B>,
    /// QK-norm's RMSNorm of each head's queries and keys, `[width / heads]`
    /// each.
    query_norm: Option<TokenNorm<B>>,
    key_norm: Option<TokenNorm<B>>,
    out: Linear<B>,
    /// `[heads, (2 ranks - 1) x (2 files - 1)]`, indexed by [`relative_positions`].
    position_bias: Param<Tensor<B, 2>>,
    ffn_norm: TokenNorm<B>,
    /// To the hidden width (Mish) or to twice it (SwiGLU: the gate, then
    /// the value).
    ffn_in: Linear<B>,
    ffn_out: Linear<B>,
    heads: usize,
    #[module(skip)]
    ffn: FfnKind,
}

impl<B: CapaBackend> TransformerBlock<B> {
    fn new(config: &NetConfig, device: &B::Device) -> Self {
        let width = config.channels;
        let hidden = width * config.ffn_multiplier;
        let offsets = (2 * config.game.ranks() - 1) * (2 * config.game.files() - 1);
        let projection = || LinearConfig::new(width, width).with_bias(config.qkv_bias).init(device);
        let head_norm = || config.qk_norm.then(|| TokenNorm::new(NormKind::Rms, width / config.heads, device));
        let gates = match config.ffn {
            FfnKind::Mish => 1,
            FfnKind::Swiglu => 2,
        };
        TransformerBlock {
            attention_norm: TokenNorm::new(config.norm, width, device),
            query: projection(),
            key: projection(),
            value: projection(),
            query_norm: head_norm(),
            key_norm: head_norm(),
            out: LinearConfig::new(width, width).init(device),
            position_bias: Param::from_tensor(Tensor::zeros([config.heads, offsets], device)),
            ffn_norm: TokenNorm::new(config.norm, width, device),
            ffn_in: LinearConfig::new(width, gates * hidden).init(device),
            ffn_out: LinearConfig::new(hidden, width).init(device),
            heads: config.heads,
            ffn: config.ffn,
        }
    }

    /// `x`: `[batch, squares, width]`; `positions`: [`relative_positions`].
    fn forward(&self, x: Tensor<B, 3>, positions: Tensor<B, 1, Int>) -> Tensor<B, 3> {
        let [batch, squares, width] = x.dims();
        // The projections see every square of the batch as one row of a
        // matrix: one large product each rather than one per sample.
        let x = x.reshape([batch * squares, width]);
        let tokens = |t: Tensor<B, 2>| t.reshape([batch, squares, width]);
        let per_head = |t: Tensor<B, 2>, norm: &Option<TokenNorm<B>>| match norm {
            Some(norm) => {
                let heads = t.reshape([batch * squares * self.heads, width / self.heads]);
                tokens(norm.forward(heads).reshape([batch * squares, width]))
            }
            None => tokens(t),
        };
        let h = self.attention_norm.forward(x.clone());
        let bias = self.position_bias.val().select(1, positions).reshape([self.heads, squares, squares]);
        let context = biased_attention(
            per_head(dense(&self.query, h.clone()), &self.query_norm),
            per_head(dense(&self.key, h.clone()), &self.key_norm),
            tokens(dense(&self.value, h)),
            bias,
            self.heads,
        );
        let x = x + dense(&self.out, context.reshape([batch * squares, width]));
        let h = dense(&self.ffn_in, self.ffn_norm.forward(x.clone()));
        let h = match self.ffn {
            FfnKind::Mish => mish(h),
            FfnKind::Swiglu => {
                let hidden = h.dims()[1] / 2;
                silu(h.clone().narrow(1, 0, hidden)) * h.narrow(1, hidden, hidden)
            }
        };
        tokens(x + dense(&self.ffn_out, h))
    }
}

/// For each (query square, key square), the index of their offset in a
/// transformer block's position-bias table: `(dr + ranks - 1) * (2 files - 1) + df + files - 1`.
pub fn relative_positions<B: Backend>(ranks: usize, files: usize, device: &B::Device) -> Tensor<B, 1, Int> {
    let squares = ranks * files;
    let mut indices = Vec::with_capacity(squares * squares);
    for query in 0..squares {
        for key in 0..squares {
            let rank_delta = query / files + ranks - 1 - key / files;
            let file_delta = query % files + files - 1 - key % files;
            indices.push((rank_delta * (2 * files - 1) + file_delta) as i64);
        }
    }
    Tensor::from_data(TensorData::new(indices, [squares * squares]), device)
}

/// The policy and future-move head: 1x1 conv -> Mish -> flatten -> linear
/// ([`PolicyHeadKind::Dense`]), or 1x1 conv -> Mish -> 1x1 conv to move
/// planes -> each move's logit gathered at its from-square
/// ([`PolicyHeadKind::Conv`]; 3x3 convolutions and Lc0's activation in
/// Lc0's family).
#[derive(Module, Debug)]
pub struct PolicyHead<B: Backend> {
    conv: Conv<B>,
    /// The dense head's layer.
    out: Option<Linear<B>>,
    /// The convolutional head's move planes.
    planes: Option<Conv<B>>,
    /// Where each move's logit lies in the flattened move planes.
    #[module(skip)]
    gather: Vec<i64>,
    #[module(skip)]
    activation: Activation,
}

impl<B: CapaBackend> PolicyHead<B> {
    fn new(config: &NetConfig, device: &B::Device) -> Self {
        let (game, channels) = (config.game, config.channels);
        match config.policy_head {
            PolicyHeadKind::Dense => PolicyHead {
                conv: conv1x1(channels, POLICY_CHANNELS, device),
                out: Some(output_layer(POLICY_CHANNELS * game.squares(), game.policy_size(), device)),
                planes: None,
                gather: Vec::new(),
                activation: config.activation,
            },
            PolicyHeadKind::Conv => {
                let map = game.policy_map().expect("NetConfig::validate keeps the conv head to chess games");
                let kernel = config.policy_kernel();
                PolicyHead {
                    conv: match config.family {
                        NetFamily::Capa => conv1x1(channels, channels, device),
                        NetFamily::Lc0 => activated_conv3x3(channels, channels, device),
                    },
                    out: None,
                    planes: Some(output_conv(channels, map.move_planes(), kernel, device)),
                    gather: map.move_plane_indices().into_iter().map(|i| i as i64).collect(),
                    activation: config.activation,
                }
            }
        }
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        let hidden = activate(self.activation, self.conv.forward(x));
        match (&self.out, &self.planes) {
            (Some(out), _) => dense(out, hidden.flatten(1, 3)),
            (None, Some(planes)) => {
                let device = hidden.device();
                let gather = Tensor::from_data(TensorData::new(self.gather.clone(), [self.gather.len()]), &device);
                planes.forward(hidden).flatten(1, 3).select(1, gather)
            }
            (None, None) => unreachable!("a policy head has a dense layer or move planes"),
        }
    }
}

/// 1x1 conv -> Mish -> flatten -> linear -> Mish -> linear (WDL and moves
/// left; Lc0's activation in Lc0's family).
#[derive(Module, Debug)]
pub struct ScalarHead<B: Backend> {
    conv: Conv<B>,
    hidden: Linear<B>,
    out: Linear<B>,
    #[module(skip)]
    activation: Activation,
}

impl<B: CapaBackend> ScalarHead<B> {
    fn new(config: &NetConfig, channels: usize, hidden: usize, outputs: usize, device: &B::Device) -> Self {
        ScalarHead {
            conv: conv1x1(config.channels, channels, device),
            hidden: LinearConfig::new(channels * config.game.squares(), hidden).init(device),
            out: output_layer(hidden, outputs, device),
            activation: config.activation,
        }
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        let h = activate(self.activation, self.conv.forward(x)).flatten(1, 3);
        dense(&self.out, activate(self.activation, dense(&self.hidden, h)))
    }
}

/// 1x1 conv -> Mish -> 1x1 conv to one logit per point: whether the side
/// to move owns the point at the end of the game.
#[derive(Module, Debug)]
pub struct OwnershipHead<B: Backend> {
    conv: Conv<B>,
    out: Conv<B>,
}

impl<B: CapaBackend> OwnershipHead<B> {
    fn new(config: &NetConfig, device: &B::Device) -> Self {
        OwnershipHead {
            conv: conv1x1(config.channels, POLICY_CHANNELS, device),
            out: output_conv(POLICY_CHANNELS, 1, 1, device),
        }
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        self.out.forward(mish(self.conv.forward(x))).flatten(1, 3)
    }
}

/// Which heads a forward pass runs, beside the policy, WDL and moves-left
/// that every pass computes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Heads {
    /// The future-move head (training only).
    pub future: bool,
    /// The ownership and score heads (training and analysis).
    pub territory: bool,
}

impl Heads {
    /// What a search needs: no further head.
    pub const SEARCH: Heads = Heads { future: false, territory: false };
    /// What analysis shows: the ownership and score heads too.
    pub const ANALYSIS: Heads = Heads { future: false, territory: true };
    /// Every head the network has.
    pub const ALL: Heads = Heads { future: true, territory: true };
}

/// The whole network. Build it with [`Net::new`] from a [`NetConfig`].
#[derive(Module, Debug)]
pub struct Net<B: Backend> {
    input_conv: Conv<B>,
    /// Capa's family only.
    input_norm: Option<GroupNorm<B>>,
    blocks: Vec<ResBlock<B>>,
    /// Added to the tokens before the first transformer block, `[squares, channels]`.
    position_embedding: Option<Param<Tensor<B, 2>>>,
    transformer: Vec<TransformerBlock<B>>,
    policy: PolicyHead<B>,
    wdl: ScalarHead<B>,
    moves_left: ScalarHead<B>,
    future: Option<PolicyHead<B>>,
    ownership: Option<OwnershipHead<B>>,
    score: Option<ScalarHead<B>>,
    #[module(skip)]
    config: NetConfig,
}

/// What the network says about a batch of positions.
#[derive(Debug)]
pub struct NetOutput<B: Backend> {
    /// Policy logits over the whole map, `[batch, policy_size]`; mask
    /// illegal moves before the softmax.
    pub policy: Tensor<B, 2>,
    /// Win, draw, loss logits for the side to move, `[batch, 3]`.
    pub wdl: Tensor<B, 2>,
    /// Plies left in the game, in units of [`MOVES_LEFT_SCALE`], `[batch, 1]`, non-negative.
    pub moves_left: Tensor<B, 2>,
    /// Logits for the side to move's next move after this one, `[batch,
    /// policy_size]`, when asked for and the network has the head.
    pub future: Option<Tensor<B, 2>>,
    /// Go: a logit per point that the side to move owns it at the end,
    /// `[batch, squares]`, when asked for and the network has the head.
    pub ownership: Option<Tensor<B, 2>>,
    /// Go: logits over the final area difference for the side to move,
    /// from -squares to +squares (`[batch, 2 squares + 1]`), when asked
    /// for and the network has the head.
    pub score: Option<Tensor<B, 2>>,
}

impl<B: Backend> Net<B> {
    /// The architecture this network was built from.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }
}

impl<B: CapaBackend> Net<B> {
    /// A freshly initialised network. The config must have passed
    /// [`NetConfig::validate`].
    ///
    /// Its weights are drawn here, not on first use (burn's default): a
    /// clone of a lazily initialised network draws its own, so the copies
    /// that training makes (the EMA, a replica per device) would start from
    /// different weights.
    pub fn new(config: &NetConfig, device: &B::Device) -> Self {
        struct Draw;
        impl<B: Backend> ModuleVisitor<B> for Draw {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
                let _ = param.val();
            }
        }
        let (channels, planes) = (config.channels, crate::input_planes(config.game));
        let mut net = Net {
            input_conv: match config.family {
                NetFamily::Capa => conv3x3(planes, channels, config.family, device),
                NetFamily::Lc0 => activated_conv3x3(planes, channels, device),
            },
            input_norm: (config.family == NetFamily::Capa).then(|| GroupNorm::new(config.groups, channels, device)),
            blocks: (0..config.blocks).map(|_| ResBlock::new(config, device)).collect(),
            position_embedding: config
                .position_embedding
                .then(|| Initializer::Normal { mean: 0.0, std: 0.02 }.init([config.game.squares(), channels], device)),
            transformer: (0..config.transformer_blocks).map(|_| TransformerBlock::new(config, device)).collect(),
            policy: PolicyHead::new(config, device),
            wdl: ScalarHead::new(config, config.value_channels, config.value_hidden, 3, device),
            moves_left: ScalarHead::new(config, MOVES_LEFT_CHANNELS, MOVES_LEFT_HIDDEN, 1, device),
            future: config.future_head.then(|| PolicyHead::new(config, device)),
            ownership: config.ownership_head.then(|| OwnershipHead::new(config, device)),
            score: config.score_head.then(|| {
                ScalarHead::new(config, config.value_channels, config.value_hidden, score_bins(config.game), device)
            }),
            config: config.clone(),
        };
        if config.family == NetFamily::Lc0 {
            // The moves-left head ends in a ReLU: it starts at 20 plies, where
            // the ReLU passes gradients, rather than at 0.
            let bias = Tensor::ones([1], device);
            net.moves_left.out.bias = Some(Param::from_tensor(bias));
        }
        net.visit(&mut Draw);
        net
    }

    /// Runs the network on `planes`, `[batch, planes, ranks, files]`, with
    /// the further `heads` that it has.
    ///
    /// The planes take the weights' float type (see [`Net::cast`]); the
    /// outputs are f32.
    pub fn forward(&self, planes: Tensor<B, 4>, heads: Heads) -> NetOutput<B> {
        let game = self.config.game;
        let device = planes.device();
        let planes = in_dtype(planes, self.input_conv.weight.val().dtype());
        let x = self.input_conv.forward(planes);
        let mut x = match &self.input_norm {
            Some(norm) => norm.forward_mish(x),
            None => activate(self.config.activation, x),
        };
        for block in &self.blocks {
            x = block.forward(x);
        }
        if !self.transformer.is_empty() {
            let [batch, channels, ranks, files] = x.dims();
            let positions = relative_positions::<B>(ranks, files, &device);
            let mut tokens = swap_last_dims(x.reshape([batch, channels, ranks * files]));
            if let Some(embedding) = &self.position_embedding {
                tokens = tokens + embedding.val().unsqueeze::<3>();
            }
            for block in &self.transformer {
                tokens = block.forward(tokens, positions.clone());
            }
            x = swap_last_dims(tokens).reshape([batch, channels, game.ranks(), game.files()]);
        }
        let f32 = |t: Tensor<B, 2>| in_dtype(t, DType::F32);
        // In f32 before the softplus, whose exponential overflows f16 from 11.
        let moves_left = f32(self.moves_left.forward(x.clone()));
        NetOutput {
            policy: f32(self.policy.forward(x.clone())),
            wdl: f32(self.wdl.forward(x.clone())),
            moves_left: match self.config.family {
                NetFamily::Capa => softplus(moves_left, 1.0),
                NetFamily::Lc0 => relu(moves_left),
            },
            future: self.future.as_ref().filter(|_| heads.future).map(|head| f32(head.forward(x.clone()))),
            ownership: self.ownership.as_ref().filter(|_| heads.territory).map(|head| f32(head.forward(x.clone()))),
            score: self.score.as_ref().filter(|_| heads.territory).map(|head| f32(head.forward(x))),
        }
    }
}

impl<B: CapaBackend> Net<B> {
    /// The network with every weight cast to `precision` (the same
    /// network for f32). Differentiable: on an autodiff backend the
    /// gradients reach the original weights, in their type.
    pub fn cast(self, precision: Precision) -> Net<B> {
        if precision == Precision::F32 {
            return self;
        }
        self.map(&mut Cast(precision.dtype()))
    }
}

struct Cast(FloatDType);

impl<B: Backend> ModuleMapper<B> for Cast {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        Param::from_mapped_value(id, tensor.cast(self.0), mapper)
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::Flex;
    use burn::backend::flex::FlexDevice;
    use burn::tensor::Distribution;

    use super::*;
    use crate::ops::tests::{Ad, Gradients, assert_close, random};

    /// Each architecture option on its own and all together: the outputs
    /// keep their shapes, the parameters number what `parameter_count`
    /// says, every parameter gets a finite gradient, and the gradient of the
    /// input agrees with a central difference along a random direction (for
    /// the smooth activations).
    #[test]
    fn every_architecture_option_has_its_shapes_and_gradients() {
        let game = capa_rules::GameKind::Chess;
        let base =
            NetConfig { channels: 16, blocks: 1, groups: 4, heads: 2, transformer_blocks: 2, ..NetConfig::small(game) };
        let every = NetConfig {
            ffn: FfnKind::Swiglu,
            norm: NormKind::Rms,
            qk_norm: true,
            qkv_bias: false,
            position_embedding: true,
            value_channels: 48,
            value_hidden: 160,
            ..base.clone()
        };
        let configs = [
            NetConfig { ffn: FfnKind::Swiglu, ..base.clone() },
            NetConfig { norm: NormKind::Rms, ..base.clone() },
            NetConfig { qk_norm: true, ..base.clone() },
            NetConfig { qkv_bias: false, ..base.clone() },
            NetConfig { position_embedding: true, ..base.clone() },
            NetConfig { value_channels: 48, value_hidden: 160, ..base.clone() },
            every,
            NetConfig { channels: 16, blocks: 2, ..NetConfig::lc0(game) },
            NetConfig { channels: 16, blocks: 2, activation: Activation::Relu, ..NetConfig::lc0(game) },
        ];
        for config in configs {
            config.validate().unwrap();
            let net = Net::<Ad>::new(&config, &FlexDevice);
            assert_eq!(net.num_params(), config.parameter_count(), "{config:?}");
            let planes = random([2, crate::input_planes(game), 8, 8]);
            let weights = [game.policy_size(), 3, 1, game.policy_size()]
                .map(|width| Tensor::<Flex, 2>::random([2, width], Distribution::Normal(0.0, 1.0), &FlexDevice));
            // A scalar of every output, on either backend.
            fn score<B: CapaBackend>(net: &Net<B>, planes: Tensor<B, 4>, weights: &[Tensor<B, 2>; 4]) -> Tensor<B, 1> {
                let out = net.forward(planes, Heads::ALL);
                let [p, w, m, f] = weights.clone();
                (out.policy * p).sum()
                    + (out.wdl * w).sum()
                    + (out.moves_left * m).sum()
                    + (out.future.unwrap() * f).sum()
            }
            let out = net.forward(Tensor::from_inner(planes.clone()), Heads::ALL);
            assert_eq!(out.policy.dims(), [2, game.policy_size()]);
            assert_eq!(out.wdl.dims(), [2, 3]);
            assert_eq!(out.moves_left.dims(), [2, 1]);
            assert_eq!(out.future.unwrap().dims(), [2, game.policy_size()]);

            let input = Tensor::<Ad, 4>::from_inner(planes.clone()).require_grad();
            let grads = score(&net, input.clone(), &weights.clone().map(Tensor::from_inner)).backward();
            let mut visitor = Gradients { grads: &grads, checked: 0 };
            net.visit(&mut visitor);
            assert!(visitor.checked > 0);

            // A central difference is only a derivative where the function is
            // smooth: across thousands of ReLUs some kink always lies within
            // any usable step, so the ReLU net's input gradient is left to the
            // Mish net of the same family (the same layers).
            if config.activation == Activation::Relu {
                continue;
            }
            let direction = random([2, crate::input_planes(game), 8, 8]);
            let analytic: f32 = (input.grad(&grads).unwrap() * direction.clone()).sum().into_scalar();
            let inference = burn::module::AutodiffModule::valid(&net);
            let at = |step: f32| score(&inference, planes.clone() + direction.clone() * step, &weights).into_scalar();
            let step = 1e-2;
            let numeric = (at(step) - at(-step)) / (2.0 * step);
            assert!(
                (analytic - numeric).abs() <= 2e-2 * (1.0 + numeric.abs()),
                "{config:?}: the gradient gives {analytic} along a direction, a central difference {numeric}"
            );
        }
    }

    /// burn's GroupNorm with the same gamma and beta.
    fn burn_group_norm<B: Backend>(ours: &GroupNorm<B>, channels: usize) -> burn::nn::GroupNorm<B> {
        let device = ours.gamma.device();
        let mut reference = burn::nn::GroupNormConfig::new(ours.groups, channels).init::<B>(&device);
        reference.gamma = Some(ours.gamma.clone());
        reference.beta = Some(ours.beta.clone());
        reference
    }

    /// GN then Mish (channel moments and the fused scale-shift-Mish, with
    /// their backward passes) against burn's GroupNorm and Mish, values and
    /// gradients of the input, gamma and beta.
    #[test]
    fn group_norm_matches_burns_with_its_gradients() {
        type Ad = burn::backend::Autodiff<Flex>;
        let x = random([3, 16, 8, 10]);
        let ours = GroupNorm::<Ad> {
            gamma: Param::from_tensor(Tensor::random([16], Distribution::Normal(1.0, 0.3), &FlexDevice)),
            beta: Param::from_tensor(Tensor::random([16], Distribution::Normal(0.0, 0.3), &FlexDevice)),
            groups: 4,
        };
        let reference = burn_group_norm(&ours, 16);
        let weights = Tensor::<Ad, 4>::from_inner(random([3, 16, 8, 10]));
        let (x1, x2) =
            (Tensor::<Ad, 4>::from_inner(x.clone()).require_grad(), Tensor::<Ad, 4>::from_inner(x).require_grad());
        let (y1, y2) = (ours.forward_mish(x1.clone()), burn::tensor::activation::mish(reference.forward(x2.clone())));
        assert_close(y1.clone().inner(), y2.clone().inner(), 1e-4);
        let g1 = (y1 * weights.clone()).sum().backward();
        let g2 = (y2 * weights).sum().backward();
        assert_close(x1.grad(&g1).unwrap(), x2.grad(&g2).unwrap(), 1e-3);
        assert_close(ours.gamma.grad(&g1).unwrap(), reference.gamma.as_ref().unwrap().grad(&g2).unwrap(), 1e-3);
        assert_close(ours.beta.grad(&g1).unwrap(), reference.beta.as_ref().unwrap().grad(&g2).unwrap(), 1e-3);
    }

    /// The residual block with GN2 and the SE folded into one fused op
    /// against the plain sequence in burn's own ops, values and the input's
    /// gradient.
    #[test]
    fn folded_residual_block_matches_the_plain_one() {
        type Ad = burn::backend::Autodiff<Flex>;
        let config = NetConfig { channels: 16, groups: 4, ..NetConfig::small(capa_rules::GameKind::Chess) };
        let block = ResBlock::<Ad>::new(&config, &FlexDevice);
        let x = random([2, 16, 8, 8]);
        let (x1, x2) =
            (Tensor::<Ad, 4>::from_inner(x.clone()).require_grad(), Tensor::<Ad, 4>::from_inner(x).require_grad());
        // conv -> GN -> Mish -> conv -> GN -> SE (pool, scale, bias) -> + x -> Mish, step by step.
        let plain_mish = burn::tensor::activation::mish;
        let (norm1, norm2) = (block.norm1.as_ref().unwrap(), block.norm2.as_ref().unwrap());
        let h = plain_mish(burn_group_norm(norm1, 16).forward(block.conv1.forward(x2.clone())));
        let h = burn_group_norm(norm2, 16).forward(block.conv2.forward(h));
        let pooled = h.clone().mean_dim(3).mean_dim(2).reshape([2, 16]);
        let (scale, bias) = block.se.excitation(pooled, Activation::Mish);
        let plain = plain_mish(h * scale.reshape([2, 16, 1, 1]) + bias.reshape([2, 16, 1, 1]) + x2.clone());
        let folded = block.forward(x1.clone());
        assert_close(folded.clone().inner(), plain.clone().inner(), 1e-4);
        let (g1, g2) = (folded.sum().backward(), plain.sum().backward());
        assert_close(x1.grad(&g1).unwrap(), x2.grad(&g2).unwrap(), 1e-3);
    }
}
