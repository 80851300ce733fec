//! The architecture, as a plain struct that travels with every checkpoint.

use capa_rules::{GameKind, PolicyMap, for_game};
use serde::{Deserialize, Serialize};

use crate::NetError;
use crate::encode::NetGame;

/// Input planes per position of `game`'s networks: the network's fact about
/// a game, beside the rules' facts on [`GameKind`].
pub fn input_planes(game: GameKind) -> usize {
    for_game!(game, G => G::PLANES)
}

/// Channels of the policy and future-move heads' 1x1 convolution.
pub const POLICY_CHANNELS: usize = 32;
/// Channels of the moves-left head's 1x1 convolution.
pub const MOVES_LEFT_CHANNELS: usize = 8;
/// Hidden width of the moves-left head.
pub const MOVES_LEFT_HIDDEN: usize = 128;

/// The network's architecture. Saved in every checkpoint; a checkpoint only
/// loads into the architecture it was saved from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    /// The game: input planes, board size and policy width follow from it.
    pub game: GameKind,
    /// capa's own network, or the SE-ResNet that Lc0's weights file
    /// describes (chess only; `capa net export-lc0` writes it for lc0).
    #[serde(default)]
    pub family: NetFamily,
    /// The activation of an [`NetFamily::Lc0`] network (capa's own is
    /// Mish throughout).
    #[serde(default)]
    pub activation: Activation,
    /// Channels of the residual tower, and the transformer's model width.
    pub channels: usize,
    /// Residual blocks (conv, GroupNorm, Mish, conv, GroupNorm, SE).
    pub blocks: usize,
    /// Squeeze-excitation reduction: the SE bottleneck has channels / se_ratio units.
    #[serde(default = "default_se_ratio")]
    pub se_ratio: usize,
    /// GroupNorm groups; must divide `channels`.
    #[serde(default = "default_groups")]
    pub groups: usize,
    /// Transformer blocks after the residual tower (0 for a pure ResNet).
    pub transformer_blocks: usize,
    /// Attention heads; must divide `channels`.
    #[serde(default = "default_heads")]
    pub heads: usize,
    /// The transformer's feed-forward width, in multiples of `channels`.
    #[serde(default = "default_ffn_multiplier")]
    pub ffn_multiplier: usize,
    /// Whether the network has the future-move head (used in training only).
    #[serde(default = "default_future_head")]
    pub future_head: bool,
    /// How the policy and future-move heads turn the tower's output into
    /// move logits.
    #[serde(default)]
    pub policy_head: PolicyHeadKind,
    /// The transformer's feed-forward: Mish, or SwiGLU (a gated unit with
    /// three matrices instead of two).
    #[serde(default)]
    pub ffn: FfnKind,
    /// The transformer's normalisation: LayerNorm or RMSNorm.
    #[serde(default)]
    pub norm: NormKind,
    /// RMS-normalise each head's queries and keys before their product
    /// (QK-norm), which bounds the attention logits.
    #[serde(default)]
    pub qk_norm: bool,
    /// Whether the query, key and value projections have a bias.
    #[serde(default = "yes")]
    pub qkv_bias: bool,
    /// A learned embedding per square added to the tokens before the first
    /// transformer block, beside each block's relative position bias.
    #[serde(default)]
    pub position_embedding: bool,
    /// Channels of the value head's 1x1 convolution.
    #[serde(default = "default_value_channels")]
    pub value_channels: usize,
    /// Hidden width of the value head.
    #[serde(default = "default_value_hidden")]
    pub value_hidden: usize,
    /// Go: the ownership head, each point's owner at the end of the game
    /// (KataGo's ownership target), learned from games that ended scored.
    #[serde(default)]
    pub ownership_head: bool,
    /// Go: the score head, a distribution over the final area difference
    /// for the side to move (KataGo's score belief), learned from games
    /// that ended scored. Its mean and spread are the score lead that
    /// analysis reports.
    #[serde(default)]
    pub score_head: bool,
}

/// Outputs of `game`'s score head: one per area difference for the side
/// to move, from -squares to +squares.
pub fn score_bins(game: GameKind) -> usize {
    2 * game.squares() + 1
}

/// Which network the architecture describes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetFamily {
    /// capa's: GroupNorm after each convolution, Mish, squeeze-excitation
    /// with a scale and a bias, transformer blocks after the residual tower.
    #[default]
    Capa,
    /// Lc0's classical SE-ResNet, as its weights file describes it:
    /// convolutions with biases and no normalisation (what lc0 runs once
    /// it has folded batch normalisation), Lc0's squeeze-excitation, the
    /// 3x3 convolutional policy head, the WDL and moves-left heads. No
    /// transformer blocks; the future-move head is capa's training aid and
    /// stays out of an export.
    Lc0,
}

/// The activation of an [`NetFamily::Lc0`] network: Lc0's
/// `default_activation`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// `x tanh(softplus(x))` (lc0 0.29 and later).
    #[default]
    Mish,
    /// `max(x, 0)`.
    Relu,
}

/// The transformer's feed-forward.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FfnKind {
    /// linear -> Mish -> linear.
    #[default]
    Mish,
    /// SwiGLU: `(SiLU(x W) * x V) W2`, with `W` and `V` one product of
    /// twice the width.
    Swiglu,
}

/// The transformer's normalisation before attention and feed-forward.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NormKind {
    /// LayerNorm: centred and scaled, with a learned scale and shift.
    #[default]
    Layer,
    /// RMSNorm: scaled by the root mean square, with a learned scale only.
    Rms,
}

/// The shape of the policy (and future-move) head.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyHeadKind {
    /// A 1x1 convolution to 32 channels, then a dense layer to every move:
    /// its cost and size grow with the board squared (on 10x8 it has more
    /// parameters than a small tower).
    #[default]
    Dense,
    /// A 1x1 convolution (channels to channels), then a 1x1 convolution to
    /// one plane per kind of move (queen direction and distance, knight
    /// jump, promotion), each move's logit read at its from-square
    /// (AlphaZero's and Lc0's convolutional policy): its cost scales with
    /// the tower.
    Conv,
}

fn default_se_ratio() -> usize {
    4
}
fn default_groups() -> usize {
    8
}
fn default_heads() -> usize {
    4
}
fn default_ffn_multiplier() -> usize {
    2
}
fn default_future_head() -> bool {
    true
}
fn yes() -> bool {
    true
}
fn default_value_channels() -> usize {
    32
}
fn default_value_hidden() -> usize {
    128
}

impl NetConfig {
    /// The small configuration: 64 channels, 4 blocks, 1 transformer block.
    /// Trains and plays on a CPU.
    pub fn small(game: GameKind) -> NetConfig {
        NetConfig {
            game,
            family: NetFamily::Capa,
            activation: Activation::Mish,
            channels: 64,
            blocks: 4,
            se_ratio: default_se_ratio(),
            groups: default_groups(),
            transformer_blocks: 1,
            heads: 4,
            ffn_multiplier: default_ffn_multiplier(),
            future_head: true,
            policy_head: PolicyHeadKind::Dense,
            ffn: FfnKind::Mish,
            norm: NormKind::Layer,
            qk_norm: false,
            qkv_bias: true,
            position_embedding: false,
            value_channels: default_value_channels(),
            value_hidden: default_value_hidden(),
            ownership_head: false,
            score_head: false,
        }
    }

    /// The typical configuration: 256 channels, 15 blocks, 4 transformer
    /// blocks with 8 heads. Wants a GPU.
    pub fn typical(game: GameKind) -> NetConfig {
        NetConfig { channels: 256, blocks: 15, transformer_blocks: 4, heads: 8, ..NetConfig::small(game) }
    }

    /// Lc0's classical SE-ResNet ([`NetFamily::Lc0`]) for chess: 64
    /// channels, 6 blocks, SE ratio 4, Mish. Lc0's own networks are wider
    /// and deeper (`channels`, `blocks`).
    pub fn lc0(game: GameKind) -> NetConfig {
        NetConfig {
            family: NetFamily::Lc0,
            blocks: 6,
            transformer_blocks: 0,
            policy_head: PolicyHeadKind::Conv,
            ..NetConfig::small(game)
        }
    }

    /// The configuration named `name` (`small`, `typical` or `lc0`).
    ///
    /// # Errors
    /// [`NetError::Config`] for any other name.
    pub fn preset(name: &str, game: GameKind) -> Result<NetConfig, NetError> {
        match name {
            "small" => Ok(NetConfig::small(game)),
            "typical" => Ok(NetConfig::typical(game)),
            "lc0" => Ok(NetConfig::lc0(game)),
            other => Err(NetError::Config(format!("no preset named `{other}`: use `small`, `typical` or `lc0`"))),
        }
    }

    /// The number of parameters (floats) of a network with this architecture.
    pub fn parameter_count(&self) -> usize {
        let (c, game) = (self.channels, self.game);
        let (squares, policy) = (game.squares(), game.policy_size());
        let linear = |inputs: usize, outputs: usize| inputs * outputs + outputs;
        // A GroupNorm's scale and shift, or an Lc0 convolution's bias.
        let norm = match self.family {
            NetFamily::Capa => 2 * c,
            NetFamily::Lc0 => c,
        };
        let bottleneck = c / self.se_ratio.max(1);
        let block = 2 * (9 * c * c + norm) + linear(c, bottleneck) + linear(bottleneck, 2 * c);
        let policy_kernel = self.policy_kernel() * self.policy_kernel();
        let width = c * self.ffn_multiplier;
        let offsets = (2 * game.ranks() - 1) * (2 * game.files() - 1);
        let token_norm = match self.norm {
            NormKind::Layer => 2 * c,
            NormKind::Rms => c,
        };
        let qkv = 3 * (c * c + if self.qkv_bias { c } else { 0 });
        let qk_norm = if self.qk_norm { 2 * (c / self.heads.max(1)) } else { 0 };
        let ffn_in = match self.ffn {
            FfnKind::Mish => linear(c, width),
            FfnKind::Swiglu => linear(c, 2 * width),
        };
        let transformer =
            2 * token_norm + qkv + qk_norm + linear(c, c) + self.heads * offsets + ffn_in + linear(width, c);
        let position_embedding = if self.position_embedding { squares * c } else { 0 };
        let policy_head = match self.policy_head {
            PolicyHeadKind::Dense => linear(c, POLICY_CHANNELS) + linear(POLICY_CHANNELS * squares, policy),
            PolicyHeadKind::Conv => {
                linear(policy_kernel * c, c)
                    + linear(policy_kernel * c, game.policy_map().map_or(0, PolicyMap::move_planes))
            }
        };
        let scalar_head = |channels: usize, hidden: usize, outputs: usize| {
            linear(c, channels) + linear(channels * squares, hidden) + linear(hidden, outputs)
        };
        9 * input_planes(game) * c
            + norm
            + self.blocks * block
            + position_embedding
            + self.transformer_blocks * transformer
            + policy_head * (1 + usize::from(self.future_head))
            + scalar_head(self.value_channels, self.value_hidden, 3)
            + scalar_head(MOVES_LEFT_CHANNELS, MOVES_LEFT_HIDDEN, 1)
            + if self.ownership_head { linear(c, POLICY_CHANNELS) + linear(POLICY_CHANNELS, 1) } else { 0 }
            + if self.score_head { scalar_head(self.value_channels, self.value_hidden, score_bins(game)) } else { 0 }
    }

    /// Floating-point operations of one position's forward pass without the
    /// future, ownership and score heads (a search runs none of them): two per multiply-add of the convolutions, the dense
    /// layers and the attention; element-wise work is left out. Training
    /// costs about three times this (and the future head).
    pub fn forward_flops(&self) -> f64 {
        let (c, game) = (self.channels as f64, self.game);
        let (squares, policy) = (game.squares() as f64, game.policy_size() as f64);
        let per_square = |inputs: f64, outputs: f64| 2.0 * inputs * outputs * squares;
        let policy_kernel = (self.policy_kernel() * self.policy_kernel()) as f64;
        let bottleneck = c / self.se_ratio.max(1) as f64;
        let block = 2.0 * per_square(9.0 * c, c) + 2.0 * (c * bottleneck + bottleneck * 2.0 * c);
        let width = c * self.ffn_multiplier as f64;
        let attention = 2.0 * 2.0 * squares * squares * c;
        let gates = match self.ffn {
            FfnKind::Mish => 1.0,
            FfnKind::Swiglu => 2.0,
        };
        let transformer = 4.0 * per_square(c, c) + attention + per_square(c, gates * width) + per_square(width, c);
        let policy_head = match self.policy_head {
            PolicyHeadKind::Dense => {
                per_square(c, POLICY_CHANNELS as f64) + 2.0 * POLICY_CHANNELS as f64 * squares * policy
            }
            PolicyHeadKind::Conv => {
                per_square(policy_kernel * c, c)
                    + per_square(policy_kernel * c, game.policy_map().map_or(0, PolicyMap::move_planes) as f64)
            }
        };
        let scalar_head = |channels: usize, hidden: usize, outputs: f64| {
            let (channels, hidden) = (channels as f64, hidden as f64);
            per_square(c, channels) + 2.0 * channels * squares * hidden + 2.0 * hidden * outputs
        };
        per_square(9.0 * input_planes(game) as f64, c)
            + self.blocks as f64 * block
            + self.transformer_blocks as f64 * transformer
            + policy_head
            + scalar_head(self.value_channels, self.value_hidden, 3.0)
            + scalar_head(MOVES_LEFT_CHANNELS, MOVES_LEFT_HIDDEN, 1.0)
    }

    /// The convolutional policy head's kernel: 1x1 in capa's family, 3x3
    /// in Lc0's.
    pub fn policy_kernel(&self) -> usize {
        match self.family {
            NetFamily::Capa => 1,
            NetFamily::Lc0 => 3,
        }
    }

    /// Checks that the numbers fit together.
    ///
    /// # Errors
    /// [`NetError::Config`] naming the field and what to change.
    pub fn validate(&self) -> Result<(), NetError> {
        let fail = |msg: String| Err(NetError::Config(msg));
        if !(1..=4096).contains(&self.channels) {
            return fail(format!("channels = {} must be in 1..=4096", self.channels));
        }
        if self.blocks > 256 || self.transformer_blocks > 64 {
            return fail(format!(
                "blocks = {} must be at most 256 and transformer_blocks = {} at most 64",
                self.blocks, self.transformer_blocks
            ));
        }
        if self.groups == 0 || !self.channels.is_multiple_of(self.groups) {
            return fail(format!("groups = {} must divide channels = {}", self.groups, self.channels));
        }
        if self.se_ratio == 0 || self.channels / self.se_ratio == 0 {
            return fail(format!("se_ratio = {} must be in 1..=channels ({})", self.se_ratio, self.channels));
        }
        if self.heads == 0 || !self.channels.is_multiple_of(self.heads) {
            return fail(format!("heads = {} must divide channels = {}", self.heads, self.channels));
        }
        if !(1..=16).contains(&self.ffn_multiplier) {
            return fail(format!("ffn_multiplier = {} must be in 1..=16", self.ffn_multiplier));
        }
        if !(1..=1024).contains(&self.value_channels) || !(1..=4096).contains(&self.value_hidden) {
            return fail(format!(
                "value_channels = {} must be in 1..=1024 and value_hidden = {} in 1..=4096",
                self.value_channels, self.value_hidden
            ));
        }
        if self.policy_head == PolicyHeadKind::Conv && !self.game.is_chess() {
            return fail(format!(
                "policy_head = \"conv\" draws a chess game's move planes; {} networks use policy_head = \"dense\"",
                self.game.name()
            ));
        }
        if (self.ownership_head || self.score_head) && self.game.is_chess() {
            return fail(format!(
                "ownership_head and score_head learn who owns each point at the end of a Go game; {} networks \
                 have neither",
                self.game.name()
            ));
        }
        if self.family == NetFamily::Lc0 {
            if self.game != GameKind::Chess {
                return fail(format!(
                    "family = \"lc0\" is Lc0's chess network; {} networks use capa's family",
                    self.game.name()
                ));
            }
            if self.transformer_blocks != 0 || self.policy_head != PolicyHeadKind::Conv {
                return fail(
                    "family = \"lc0\" is Lc0's classical SE-ResNet: transformer_blocks = 0 and policy_head = \"conv\""
                        .to_string(),
                );
            }
        } else if self.activation != Activation::Mish {
            return fail("activation = \"relu\" is for family = \"lc0\"; capa's family uses Mish".to_string());
        }
        if self.transformer_blocks == 0 {
            let transformer_options = [
                ("ffn", self.ffn != FfnKind::Mish),
                ("norm", self.norm != NormKind::Layer),
                ("qk_norm", self.qk_norm),
                ("qkv_bias", !self.qkv_bias),
                ("position_embedding", self.position_embedding),
            ];
            if let Some((name, _)) = transformer_options.iter().find(|(_, set)| *set) {
                return fail(format!(
                    "{name} shapes the transformer blocks, and transformer_blocks = 0: add blocks or leave {name} \
                     at its default"
                ));
            }
        }
        Ok(())
    }
}
