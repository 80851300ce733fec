//! The run configuration: one TOML file, overridable key by key with
//! `--set section.key=value`, checked whole before any work starts.
//!
//! Every key is documented in `configs/README.md`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use capa_net::{
    Activation, BackendKind, DeviceSpec, FfnKind, NetConfig, NormKind, PolicyHeadKind, Precision, TrainConfig,
};
use capa_rules::GameKind;
use serde::{Deserialize, Serialize};

use crate::buffer::{Sampling, ValueTarget};

/// A whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Where and how long.
    #[serde(default)]
    pub run: RunSection,
    /// Which game.
    #[serde(default)]
    pub game: GameSection,
    /// The network's architecture.
    #[serde(default)]
    pub net: NetSection,
    /// Self-play.
    #[serde(default)]
    pub selfplay: SelfPlaySection,
    /// The replay buffer.
    #[serde(default)]
    pub buffer: BufferSection,
    /// Training per iteration.
    #[serde(default)]
    pub train: TrainSection,
    /// How the weights are updated (capa-net's `TrainConfig`).
    #[serde(default)]
    pub optimizer: TrainConfig,
    /// Checkpoints.
    #[serde(default)]
    pub checkpoint: CheckpointSection,
    /// `[eval]`: the new network against the previous one or an engine.
    #[serde(default)]
    pub eval: EvalSection,
    /// `[gate]`: self-play plays the newest network only once it beats
    /// the one before.
    #[serde(default)]
    pub gate: GateSection,
    /// `[curriculum]`: some self-play games against a UCI engine.
    #[serde(default)]
    pub curriculum: CurriculumSection,
    /// `[distill]`: the teacher data of `run.mode = "distill"`.
    #[serde(default)]
    pub distill: DistillSection,
    /// `[supervised]`: the Lc0 V6 data of `run.mode = "supervised"`.
    #[serde(default)]
    pub supervised: SupervisedSection,
}

/// `[run]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSection {
    /// The run directory (created if missing; an existing one is resumed).
    pub dir: PathBuf,
    /// Seed of every random choice of the run.
    pub seed: u64,
    /// Iterations to run in all (0: until Ctrl-C).
    pub iterations: u64,
    /// `cpu`, `wgpu` or `cuda`.
    pub backend: BackendKind,
    /// The device's index on the backend (for wgpu: discrete GPUs first, then
    /// integrated, virtual, CPU-type).
    pub device: usize,
    /// Several devices of the backend instead of `device`, e.g. `[0, 1, 2, 3]`:
    /// training is data-parallel (each device takes a shard of every batch,
    /// gradients are summed with an all-reduce) and self-play's batches go
    /// to whichever device is free (give `selfplay.groups` one more than
    /// there are devices). Empty: `device` alone.
    pub devices: Vec<usize>,
    /// The network's arithmetic in self-play, training and evaluation:
    /// `f32`, or on a GPU backend `f16` or `bf16` (weights, gradients and
    /// optimizer state stay f32).
    pub precision: Precision,
    /// `selfplay`: learn from the network's own games; `distill`: from a
    /// teacher's or from game records such as `capa sgf convert` writes
    /// (`[distill]`), an epoch per iteration; `supervised`: from
    /// Lc0 V6 training data (`[supervised]`, chess), `train.steps` steps
    /// per iteration.
    pub mode: RunMode,
    /// A network file the run's first network starts from (a distilled
    /// student, another run's network); its architecture must be `[net]`'s.
    /// Absent: fresh weights from `seed`. Read once, when the run starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init: Option<PathBuf>,
}

impl Default for RunSection {
    fn default() -> RunSection {
        RunSection {
            dir: PathBuf::from("runs/capa"),
            seed: 1,
            iterations: 0,
            backend: BackendKind::Cpu,
            device: 0,
            devices: Vec::new(),
            precision: Precision::F32,
            mode: RunMode::SelfPlay,
            init: None,
        }
    }
}

/// What the network learns from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    /// Its own self-play games (or the workers').
    SelfPlay,
    /// A teacher's games (`capa distill gen`), or game records such as
    /// `capa sgf convert` writes.
    Distill,
    /// Lc0 V6 training data (chess).
    Supervised,
}

/// `[game]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GameSection {
    /// `capablanca`, `chess`, `go9`, `go13` or `go19`.
    pub name: GameKind,
    /// Plies after which a self-play game is adjudicated.
    pub ply_cap: u32,
    /// At the ply cap, the side ahead by at least this much
    /// ([`capa_rules::Game::adjudication_lead`]: pawns of material in
    /// chess, points of area with komi in Go) wins; 0: always a draw.
    pub ply_cap_win_margin: u32,
    /// Go: the points White gets on top of its area, a multiple of 0.5.
    /// Absent: 7.5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub komi: Option<f32>,
    /// Go: `simple` (no immediate recapture of a single stone) or `superko`
    /// (positional superko: no earlier position again). Absent: simple.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ko_rule: Option<KoRuleKind>,
}

impl Default for GameSection {
    fn default() -> GameSection {
        GameSection { name: GameKind::Capablanca, ply_cap: 400, ply_cap_win_margin: 0, komi: None, ko_rule: None }
    }
}

/// `game.ko_rule`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KoRuleKind {
    /// No immediate recapture of a single stone.
    Simple,
    /// Positional superko.
    Superko,
}

impl GameSection {
    /// The text form of the position self-play starts from when it is not
    /// the game's own start (Go with `komi` or `ko_rule` set); `None`
    /// otherwise.
    ///
    /// # Errors
    /// The key and what is wrong: a komi off the half-point grid, or either
    /// key for a chess game.
    pub fn start_text(&self) -> Result<Option<String>, (&'static str, String)> {
        fn go<const N: usize>(komi: Option<f32>, ko_rule: Option<KoRuleKind>) -> Result<String, String> {
            let mut start = <capa_rules::go::Go<N> as capa_rules::Game>::startpos();
            if let Some(komi) = komi {
                start = start.with_komi(komi)?;
            }
            if let Some(ko_rule) = ko_rule {
                start = start.with_ko_rule(match ko_rule {
                    KoRuleKind::Simple => capa_rules::go::KoRule::Simple,
                    KoRuleKind::Superko => capa_rules::go::KoRule::PositionalSuperko,
                });
            }
            Ok(capa_rules::Game::fen(&start))
        }
        if self.komi.is_none() && self.ko_rule.is_none() {
            return Ok(None);
        }
        let key = if self.komi.is_some() { "game.komi" } else { "game.ko_rule" };
        let text = match self.name {
            GameKind::Go9 => go::<9>(self.komi, self.ko_rule),
            GameKind::Go13 => go::<13>(self.komi, self.ko_rule),
            GameKind::Go19 => go::<19>(self.komi, self.ko_rule),
            GameKind::Chess | GameKind::Capablanca => {
                Err(format!("is a rule of Go: leave it out for {}", self.name.name()))
            }
        };
        text.map(Some).map_err(|message| (key, message))
    }
}

/// `[net]`: a preset, and any of its numbers changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetSection {
    /// `small`, `typical` or `lc0`.
    pub preset: String,
    /// Overrides of the preset's numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<usize>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks: Option<usize>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transformer_blocks: Option<usize>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heads: Option<usize>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<usize>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub se_ratio: Option<usize>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ffn_multiplier: Option<usize>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub future_head: Option<bool>,
    /// `dense` or `conv` (see configs/README.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_head: Option<PolicyHeadKind>,
    /// `mish` or `swiglu`: the transformer's feed-forward.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ffn: Option<FfnKind>,
    /// `layer` or `rms`: the transformer's normalisation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub norm: Option<NormKind>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qk_norm: Option<bool>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qkv_bias: Option<bool>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_embedding: Option<bool>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_channels: Option<usize>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_hidden: Option<usize>,
    /// `mish` or `relu`: the `lc0` family's activation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    /// Go: the ownership head (each point's final owner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ownership_head: Option<bool>,
    /// Go: the score head (the final area difference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_head: Option<bool>,
}

impl Default for NetSection {
    fn default() -> NetSection {
        NetSection {
            preset: "small".to_string(),
            channels: None,
            blocks: None,
            transformer_blocks: None,
            heads: None,
            groups: None,
            se_ratio: None,
            ffn_multiplier: None,
            future_head: None,
            policy_head: None,
            ffn: None,
            norm: None,
            qk_norm: None,
            qkv_bias: None,
            position_embedding: None,
            value_channels: None,
            value_hidden: None,
            activation: None,
            ownership_head: None,
            score_head: None,
        }
    }
}

/// `[selfplay]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfPlaySection {
    /// Whether the trainer plays its own games; `false` trains only on what
    /// `capa-train selfplay` workers write into the run directory.
    pub local: bool,
    /// Games per iteration (without local self-play: new worker games to wait for).
    pub games: u32,
    /// Games played at once (0: all of the iteration's).
    pub concurrent: u32,
    /// Playouts of a full search (a training target).
    pub simulations: u32,
    /// Playouts of a fast search (not a training target).
    pub fast_simulations: u32,
    /// Share of moves searched fast (KataGo's playout cap randomization).
    pub fast_probability: f32,
    /// Leaves one game gathers per round.
    pub parallel_sims: u16,
    /// Groups of games whose rounds alternate with the network's batches.
    pub groups: usize,
    /// The root's search: `puct` (AlphaZero's, with Dirichlet noise and
    /// visit-count targets) or `gumbel` (Gumbel AlphaZero's: sampled moves,
    /// sequential halving, the improved policy as the target).
    pub search: RootSearch,
    /// Gumbel: root moves sampled (`m`).
    pub gumbel_considered: u16,
    /// Gumbel: `c_visit` of σ, the weight of Q against the prior.
    pub gumbel_c_visit: f32,
    /// Gumbel: `c_scale` of σ.
    pub gumbel_c_scale: f32,
    /// PUCT exploration constant.
    pub cpuct: f32,
    /// Root Dirichlet noise's alpha (full searches only).
    pub dirichlet_alpha: f32,
    /// Root noise's weight (0: no noise).
    pub dirichlet_epsilon: f32,
    /// Temperature at the first move.
    pub temperature: f32,
    /// Moves over which the temperature decays to 0 (0: no decay).
    pub temperature_decay_moves: u32,
    /// The move (both sides counted, from 0) from which `temperature_after_cutoff` applies.
    pub temperature_cutoff_move: u32,
    /// Temperature from the cutoff on.
    pub temperature_after_cutoff: f32,
    /// Resign when the best move's loss probability (the search's WDL for
    /// the side to move) reaches this (0: never).
    pub resign_loss: f32,
    /// Share of games played out whatever the score, to measure wrong resignations.
    pub resign_disabled_fraction: f32,
    /// A draw counts `-contempt` for the side to move at the root.
    pub contempt: f32,
    /// Prove a node lost for its mover as it is expanded when the side to
    /// move there mates at once (`SearchParams::prove_mate_in_one`).
    pub prove_mate_in_one: bool,
    /// Evaluations the network's cache keeps (`capa_mcts::CachedEvaluator`):
    /// a position seen again in the iteration costs no network call; 0 off.
    pub cache: usize,
    /// Lc0's KLD-gain stop: a search ends once its root visit distribution
    /// changes by less than this (nats per new visit) over `kld_interval`
    /// visits; 0 turns it off.
    pub kld_min_gain_per_node: f64,
    /// Visits between two KLD-gain checks.
    pub kld_interval: u32,
}

impl Default for SelfPlaySection {
    fn default() -> SelfPlaySection {
        SelfPlaySection {
            local: true,
            games: 64,
            concurrent: 0,
            simulations: 200,
            fast_simulations: 0,
            fast_probability: 0.0,
            parallel_sims: 16,
            groups: 2,
            search: RootSearch::Puct,
            gumbel_considered: 16,
            gumbel_c_visit: 50.0,
            gumbel_c_scale: 1.0,
            cpuct: 1.745,
            dirichlet_alpha: 0.3,
            dirichlet_epsilon: 0.25,
            temperature: 1.0,
            temperature_decay_moves: 0,
            temperature_cutoff_move: 30,
            temperature_after_cutoff: 0.0,
            resign_loss: 0.0,
            resign_disabled_fraction: 0.1,
            contempt: 0.0,
            prove_mate_in_one: true,
            cache: 200_000,
            kld_min_gain_per_node: 0.0,
            kld_interval: 100,
        }
    }
}

/// How self-play searches the root.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RootSearch {
    /// PUCT with Dirichlet noise; the policy target is the visit distribution.
    Puct,
    /// Gumbel AlphaZero: Gumbel-top-k, sequential halving, the improved policy.
    Gumbel,
}

/// `[buffer]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BufferSection {
    /// Training positions kept, newest first: the most the window grows to.
    pub window: usize,
    /// `uniform` or `value-balanced`.
    pub sampling: Sampling,
    /// KataGo's growing window: its size `c` while the run has made fewer
    /// than `c` positions; 0 keeps the window at `window` throughout.
    pub window_start: usize,
    /// The growing window's exponent `α`.
    pub window_exponent: f64,
    /// The growing window's rate `β`.
    pub window_growth: f64,
}

impl Default for BufferSection {
    fn default() -> BufferSection {
        BufferSection {
            window: 100_000,
            sampling: Sampling::Uniform,
            window_start: 0,
            window_exponent: 0.75,
            window_growth: 0.4,
        }
    }
}

impl BufferSection {
    /// The window's size once the run has made `seen` training positions:
    /// KataGo's `c (1 + β ((N/c)^α - 1) / α)` from `c = window_start`, at
    /// most `window`.
    pub fn window_at(&self, seen: u64) -> usize {
        if self.window_start == 0 {
            return self.window;
        }
        let c = self.window_start as f64;
        let n = (seen as f64).max(c);
        let (alpha, beta) = (self.window_exponent, self.window_growth);
        let grown = c * (1.0 + beta * ((n / c).powf(alpha) - 1.0) / alpha);
        (grown as usize).min(self.window)
    }
}

/// `[train]`: how much to train per iteration, and the value target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainSection {
    /// Positions per step.
    pub batch: usize,
    /// Steps per iteration.
    pub steps: u64,
    /// In self-play, steps per iteration set from the new positions instead:
    /// `passes × new positions / batch`, so that each position is drawn
    /// about this many times in its life in the window (seed 004: 3 to 4).
    /// 0: `steps` decides.
    pub passes: f64,
    /// Share of the search's value of its best move in the value target
    /// (the rest is the game's result).
    pub value_q_weight: f32,
    /// Train the value, moves-left and future heads on fast-search plies too.
    pub fast_search_values: bool,
}

impl TrainSection {
    /// The replay buffer's value target.
    pub fn value_target(&self) -> ValueTarget {
        ValueTarget { q_weight: self.value_q_weight, fast_plies: self.fast_search_values }
    }
}

impl Default for TrainSection {
    fn default() -> TrainSection {
        TrainSection { batch: 256, steps: 100, passes: 0.0, value_q_weight: 0.0, fast_search_values: false }
    }
}

/// `[checkpoint]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointSection {
    /// Keep a numbered checkpoint every this many iterations (the latest is always kept).
    pub every: u64,
    /// Numbered checkpoints kept.
    pub keep: usize,
}

impl Default for CheckpointSection {
    fn default() -> CheckpointSection {
        CheckpointSection { every: 1, keep: 5 }
    }
}

/// `[eval]`: every `every` iterations, a short match of the new network
/// against the one it replaces, or its Elo against a UCI engine of set
/// strength; logged in the iteration's metrics line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalSection {
    /// Evaluate every this many iterations; 0 never.
    pub every: u64,
    /// Games per match, or per probe against the engine (rounded up to
    /// pairs with colours swapped).
    pub games: u32,
    /// The network's playouts per move (both networks').
    pub simulations: u32,
    /// Uniformly random plies that open each pair of games.
    pub random_plies: u32,
    /// A UCI engine with `UCI_LimitStrength` and `UCI_Elo`
    /// (`fairy-stockfish`) to measure the network's Elo against; empty: the
    /// previous network is the opponent.
    pub engine: String,
    /// A calibrated ladder file (`configs/ladder-capablanca.toml`, see
    /// `capa ladder`) to place the network on instead: a bisection over its
    /// rungs, up to `max_probes` matches of `games` games, so that every
    /// network of the run gets an Elo on one scale that reaches below the
    /// engine's weakest level. Takes the place of `engine`; `method`,
    /// `anchor`, `bracket`, `tolerance` and `nodes` do not apply (each
    /// rung has its own nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ladder: Option<PathBuf>,
    /// The engine's nodes per move (`go nodes`).
    pub nodes: u64,
    /// Against the engine: Elo by bisection over its `UCI_Elo`, or one
    /// match at `anchor`.
    pub method: EvalMethod,
    /// The engine's `UCI_Elo` in `method = "anchor"`.
    pub anchor: i64,
    /// The bisection's starting bracket of `UCI_Elo`; the engine's whole
    /// range when absent.
    pub bracket: Option<[i64; 2]>,
    /// The bisection stops once its bracket is this narrow (or a probe
    /// scores 45% to 55%).
    pub tolerance: i64,
    /// The bisection stops after this many probes.
    pub max_probes: u32,
    /// Evaluate once this many minutes of the run's work (self-play,
    /// training, checkpoints, evaluations) have passed since the last
    /// evaluation, instead of every `every` iterations; 0: `every` decides.
    pub every_minutes: f64,
    /// Against the engine: milliseconds per move for both sides (`go
    /// movetime`), the network played by `capa uci` (the `capa` program
    /// beside `capa-train`); 0: `simulations` and `nodes` per move.
    pub movetime: u64,
    /// Games at once in a `movetime` match (each side thinks on one
    /// thread per game); 0: one per CPU core.
    pub concurrency: usize,
}

impl EvalSection {
    /// Whether `[eval]` evaluates at all.
    pub fn enabled(&self) -> bool {
        self.every > 0 || self.every_minutes > 0.0
    }
}

impl Default for EvalSection {
    fn default() -> EvalSection {
        EvalSection {
            every: 0,
            games: 20,
            simulations: 32,
            random_plies: 6,
            engine: String::new(),
            ladder: None,
            nodes: 10_000,
            method: EvalMethod::Bisection,
            anchor: 1350,
            bracket: None,
            tolerance: 100,
            max_probes: 5,
            every_minutes: 0.0,
            movetime: 0,
            concurrency: 0,
        }
    }
}

/// How `[eval]` measures a network against an engine.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvalMethod {
    /// Probes over the engine's `UCI_Elo`, halving a bracket (the
    /// authoritative figure).
    Bisection,
    /// One match at a fixed `UCI_Elo` (the quick check).
    Anchor,
}

/// `[gate]` (AlphaGo Zero's evaluator): every `every` iterations the
/// new network plays `games` games against the network self-play plays
/// with, and takes its place only if it scores `threshold`; training
/// goes on from the newest weights either way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateSection {
    /// Challenge the player every this many iterations; 0: no gate, self-play
    /// plays the newest network.
    pub every: u64,
    /// Games of each challenge (rounded up to pairs with colours swapped).
    pub games: u32,
    /// Playouts per move for both networks.
    pub simulations: u32,
    /// The challenger's score that makes it the player, in (0.5, 1].
    pub threshold: f64,
}

impl GateSection {
    /// Whether the run has a gate.
    pub fn enabled(&self) -> bool {
        self.every > 0
    }
}

impl Default for GateSection {
    fn default() -> GateSection {
        GateSection { every: 0, games: 40, simulations: 64, threshold: 0.55 }
    }
}

/// `[curriculum]`: a share of the trainer's self-play games against a UCI
/// engine whose `UCI_Elo` follows the network's score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CurriculumSection {
    /// The engine command (`fairy-stockfish`); empty turns the curriculum off.
    pub engine: String,
    /// Share of the self-play games played against it.
    pub fraction: f32,
    /// Its `UCI_Elo` at the start of the run (clamped to its range).
    pub elo: i64,
    /// How far its `UCI_Elo` moves after an iteration in which the network
    /// scored above 60% (up) or below 40% (down).
    pub step: i64,
    /// Its nodes per move (`go nodes`).
    pub nodes: u64,
    /// A calibrated ladder file whose rungs are the opponent instead of
    /// `engine`, so that the curriculum can start below the engine's
    /// weakest `UCI_Elo`: from the rung nearest `elo`, a rung up or down
    /// after each iteration; `engine`, `step` and `nodes` do not apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ladder: Option<PathBuf>,
}

impl Default for CurriculumSection {
    fn default() -> CurriculumSection {
        CurriculumSection { engine: String::new(), fraction: 0.25, elo: 1350, step: 50, nodes: 10_000, ladder: None }
    }
}

/// Which policy target distillation uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// `softmax(cp / (100 T))` over the teacher's candidates.
    Soft,
    /// All on the teacher's best move (the ablation).
    Hard,
}

/// `[distill]`: the teacher data the network learns from when `run.mode =
/// "distill"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DistillSection {
    /// The positions to learn from: the folder `capa distill gen` wrote
    /// (teacher games), a folder of game records (`capa sgf convert`: the
    /// moves played are the policy targets, the results the value targets),
    /// or a run directory (its `games/`) when `teacher_net` is set.
    pub data: PathBuf,
    /// A network whose outputs on the positions of `data` are the targets
    /// (policy over the legal moves, WDL, moves left) in place of the
    /// records' own: distils one network into the `[net]` architecture,
    /// bigger or smaller. The future-move target stays the record's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teacher_net: Option<PathBuf>,
    /// `soft` or `hard`.
    pub targets: TargetKind,
    /// The soft targets' temperature, in pawns.
    pub temperature: f32,
    /// Share of the games held out to measure agreement with the teacher.
    pub holdout: f32,
    /// With `run.mode = "selfplay"`: the run's first `epochs` iterations
    /// are distillation epochs on `data`, then self-play goes on from that
    /// network (teacher first, then self-play, in one run); 0 none. With
    /// `run.mode = "distill"`, `run.iterations` counts the epochs instead.
    pub epochs: u64,
    /// Share of the teacher's evaluation of each position in its value
    /// target; the rest is the game's result. The positions of one game
    /// share its result, so a network trained on a few hundred games
    /// memorises them through the result; the teacher's evaluation is a
    /// target of each position's own.
    pub value_q_weight: f32,
    /// With `epochs` > 0, or `data` given to a self-play run (one that goes
    /// on from a distilled network through `run.init`): the teacher's
    /// training games fill the replay buffer before the first self-play
    /// game, and the network's own games push them out as they come, so
    /// that the first self-play iterations do not train on a few dozen games
    /// alone. They keep the value target of `value_q_weight`;
    /// `train.value_q_weight` is the own games'.
    pub seed_buffer: bool,
    /// With `seed_buffer`: the teacher's positions that leave the window at
    /// the start of every self-play iteration, oldest first, whatever room
    /// the run's own games leave (so that a growing window does not keep
    /// them); 0: they leave only as the own games push them out.
    pub seed_leave: usize,
}

impl Default for DistillSection {
    fn default() -> DistillSection {
        DistillSection {
            data: PathBuf::new(),
            teacher_net: None,
            targets: TargetKind::Soft,
            temperature: 1.0,
            holdout: 0.05,
            epochs: 0,
            value_q_weight: 1.0,
            seed_buffer: true,
            seed_leave: 0,
        }
    }
}

impl DistillSection {
    /// The policy target the section asks for.
    pub fn policy_target(&self) -> capa_data::PolicyTarget {
        match self.targets {
            TargetKind::Soft => capa_data::PolicyTarget::Soft { temperature: self.temperature },
            TargetKind::Hard => capa_data::PolicyTarget::Hard,
        }
    }
}

/// `[supervised]`: the Lc0 V6 training data of `run.mode = "supervised"`,
/// streamed as lczero-training's chunk parser does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SupervisedSection {
    /// V6 files (`.gz`), `.tar` archives of them (read in place, as Lc0
    /// ships its training runs and `capa lc0 pack` writes them), `.tar.gz`
    /// archives, and folders searched for all three.
    pub data: Vec<PathBuf>,
    /// Share of the chunks (files, archive members) held out to measure the
    /// network; the split hashes the names, so it never changes.
    pub holdout: f32,
    /// Held-out positions measured after each iteration (the first ones of
    /// the held-out chunks, in name order).
    pub held_out_positions: usize,
    /// Keep one record in this many, at random (1: all). lczero-training
    /// keeps 1 in 32 of self-play data, whose neighbouring positions are alike.
    pub sample_rate: u32,
    /// Positions the shuffle buffer holds (about 1.2 KB each).
    pub shuffle_buffer: usize,
    /// Reader threads decompressing and decoding chunks.
    pub readers: usize,
    /// Share of the value target from the search's Q and D (`q_source`);
    /// the rest is the game's result (lczero-training's `q_ratio`).
    pub q_ratio: f32,
    /// `best`: the best move's Q and D, as lczero-training; `root`: the root's.
    pub q_source: QSourceKind,
}

impl Default for SupervisedSection {
    fn default() -> SupervisedSection {
        SupervisedSection {
            data: Vec::new(),
            holdout: 0.05,
            held_out_positions: 20_000,
            sample_rate: 1,
            shuffle_buffer: 200_000,
            readers: 2,
            q_ratio: 0.0,
            q_source: QSourceKind::Best,
        }
    }
}

/// Whose Q and D the supervised value target mixes in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QSourceKind {
    /// The best move's.
    Best,
    /// The root's.
    Root,
}

impl SupervisedSection {
    /// How records become samples.
    pub fn sample_settings(&self) -> capa_lc0::SampleSettings {
        let q_source = match self.q_source {
            QSourceKind::Best => capa_lc0::QSource::Best,
            QSourceKind::Root => capa_lc0::QSource::Root,
        };
        capa_lc0::SampleSettings { q_ratio: self.q_ratio, q_source }
    }
}

impl RunConfig {
    /// Whether the run learns from teacher data, in all its iterations or
    /// in its first `distill.epochs`.
    pub fn distills(&self) -> bool {
        self.run.mode == RunMode::Distill || self.distill.epochs > 0
    }

    /// The run's last iteration: `run.iterations`, or no end when it is 0.
    pub fn last_iteration(&self) -> u64 {
        if self.run.iterations == 0 { u64::MAX } else { self.run.iterations }
    }

    /// Reads `path` and applies `sets` (`section.key=value`, in order).
    ///
    /// # Errors
    /// The first problem, naming the key and, for keys from the file, its line.
    pub fn load(path: &Path, sets: &[String]) -> Result<RunConfig> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        RunConfig::parse(&text, sets).with_context(|| format!("bad config {}", path.display()))
    }

    /// [`RunConfig::load`] on the file's text.
    ///
    /// # Errors
    /// As [`RunConfig::load`].
    pub fn parse(text: &str, sets: &[String]) -> Result<RunConfig> {
        // The file alone first: its errors carry lines.
        let mut config: RunConfig = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        if !sets.is_empty() {
            let mut table: toml::Table = text.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
            for set in sets {
                apply_set(&mut table, set)?;
                config = RunConfig::deserialize(toml::Value::Table(table.clone()))
                    .map_err(|e| anyhow::anyhow!("--set {set}: {e}"))?;
            }
        }
        config.validate().map_err(|(key, message)| {
            let overridden = sets.iter().any(|s| s.split('=').next().is_some_and(|k| k.trim() == key));
            match locate(text, &key).filter(|_| !overridden) {
                Some(line) => anyhow::anyhow!("{key} (line {line}): {message}"),
                None => anyhow::anyhow!("{key}: {message}"),
            }
        })?;
        Ok(config)
    }

    /// The config as TOML, as saved in the run directory.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("every field serialises")
    }

    /// The network's architecture: the preset with the section's overrides.
    ///
    /// # Errors
    /// An unknown preset or numbers that do not fit together.
    pub fn net_config(&self) -> Result<NetConfig> {
        let n = &self.net;
        let mut net = NetConfig::preset(&n.preset, self.game.name).map_err(|e| anyhow::anyhow!("net.preset: {e}"))?;
        // Each key the section sets replaces the preset's value.
        fn set<T: Copy>(field: &mut T, value: Option<T>) {
            if let Some(value) = value {
                *field = value;
            }
        }
        set(&mut net.channels, n.channels);
        set(&mut net.blocks, n.blocks);
        set(&mut net.transformer_blocks, n.transformer_blocks);
        set(&mut net.heads, n.heads);
        set(&mut net.groups, n.groups);
        set(&mut net.se_ratio, n.se_ratio);
        set(&mut net.ffn_multiplier, n.ffn_multiplier);
        set(&mut net.future_head, n.future_head);
        set(&mut net.policy_head, n.policy_head);
        set(&mut net.ffn, n.ffn);
        set(&mut net.norm, n.norm);
        set(&mut net.qk_norm, n.qk_norm);
        set(&mut net.qkv_bias, n.qkv_bias);
        set(&mut net.position_embedding, n.position_embedding);
        set(&mut net.value_channels, n.value_channels);
        set(&mut net.value_hidden, n.value_hidden);
        set(&mut net.activation, n.activation);
        set(&mut net.ownership_head, n.ownership_head);
        set(&mut net.score_head, n.score_head);
        net.validate().map_err(|e| anyhow::anyhow!("[net]: {e}"))?;
        Ok(net)
    }

    /// The (first) device the run trains and plays on.
    pub fn device(&self) -> DeviceSpec {
        DeviceSpec { backend: self.run.backend, index: self.devices()[0], precision: self.run.precision }
    }

    /// The indices of every device the run trains and plays on.
    pub fn devices(&self) -> Vec<usize> {
        if self.run.devices.is_empty() { vec![self.run.device] } else { self.run.devices.clone() }
    }

    /// Checks every range; on failure the key and what is wrong.
    fn validate(&self) -> Result<(), (String, String)> {
        let fail = |key: &str, message: String| Err((key.to_string(), message));
        if let Err((key, message)) = self.game.start_text() {
            return fail(key, message);
        }
        let s = &self.selfplay;
        let unit = |v: f32| (0.0..=1.0).contains(&v);
        let checks: [(&str, bool, String); 27] = [
            ("game.ply_cap", (1..=10_000).contains(&self.game.ply_cap), "must be 1 to 10000".into()),
            ("game.ply_cap_win_margin", self.game.ply_cap_win_margin <= 100, "must be 0 to 100".into()),
            ("selfplay.games", s.games >= 1, "must be at least 1".into()),
            ("selfplay.simulations", (1..=1_000_000).contains(&s.simulations), "must be 1 to 1000000".into()),
            (
                "selfplay.fast_simulations",
                s.fast_probability == 0.0 || (1..=s.simulations).contains(&s.fast_simulations),
                "must be 1 to selfplay.simulations when fast_probability > 0".into(),
            ),
            ("selfplay.fast_probability", (0.0..1.0).contains(&s.fast_probability), "must be in [0, 1)".into()),
            ("selfplay.parallel_sims", (1..=8192).contains(&s.parallel_sims), "must be 1 to 8192".into()),
            ("selfplay.groups", (1..=64).contains(&s.groups), "must be 1 to 64".into()),
            ("selfplay.cpuct", s.cpuct > 0.0 && s.cpuct <= 100.0, "must be in (0, 100]".into()),
            (
                "selfplay.kld_min_gain_per_node",
                s.kld_min_gain_per_node.is_finite() && s.kld_min_gain_per_node >= 0.0,
                "must be a number >= 0 (0: off)".into(),
            ),
            ("selfplay.kld_interval", s.kld_interval >= 1, "must be at least 1".into()),
            (
                "selfplay.dirichlet_alpha",
                s.dirichlet_alpha > 0.0 && s.dirichlet_alpha <= 10.0,
                "must be in (0, 10]".into(),
            ),
            ("selfplay.dirichlet_epsilon", unit(s.dirichlet_epsilon), "must be in [0, 1]".into()),
            ("selfplay.temperature", (0.0..=10.0).contains(&s.temperature), "must be in [0, 10]".into()),
            (
                "selfplay.temperature_after_cutoff",
                (0.0..=10.0).contains(&s.temperature_after_cutoff),
                "must be in [0, 10]".into(),
            ),
            (
                "selfplay.resign_loss",
                s.resign_loss == 0.0 || (0.5..=1.0).contains(&s.resign_loss),
                "must be 0 (never resign) or in [0.5, 1]".into(),
            ),
            ("selfplay.gumbel_considered", s.gumbel_considered >= 1, "must be at least 1".into()),
            (
                "selfplay.gumbel_c_visit",
                s.gumbel_c_visit.is_finite() && s.gumbel_c_visit >= 0.0,
                "must be a number >= 0".into(),
            ),
            (
                "selfplay.gumbel_c_scale",
                s.gumbel_c_scale.is_finite() && s.gumbel_c_scale > 0.0,
                "must be a number > 0".into(),
            ),
            ("selfplay.resign_disabled_fraction", unit(s.resign_disabled_fraction), "must be in [0, 1]".into()),
            ("selfplay.contempt", (-1.0..=1.0).contains(&s.contempt), "must be in [-1, 1]".into()),
            ("buffer.window", self.buffer.window >= 1, "must be at least 1".into()),
            (
                "buffer.window_start",
                self.buffer.window_start <= self.buffer.window,
                format!("must be at most buffer.window ({})", self.buffer.window),
            ),
            (
                "buffer.window_exponent",
                self.buffer.window_exponent > 0.0 && self.buffer.window_exponent <= 1.0,
                "must be in (0, 1]".into(),
            ),
            (
                "buffer.window_growth",
                self.buffer.window_growth.is_finite() && self.buffer.window_growth >= 0.0,
                "must be a number >= 0".into(),
            ),
            (
                "train.passes",
                self.train.passes.is_finite() && (0.0..=100.0).contains(&self.train.passes),
                "must be 0 (train.steps decides) or a number of passes up to 100".into(),
            ),
            ("train.value_q_weight", unit(self.train.value_q_weight), "must be in [0, 1]".into()),
        ];
        if let Some((key, _, message)) = checks.into_iter().find(|(_, ok, _)| !ok) {
            return fail(key, message);
        }
        let more = [
            ("train.batch", (1..=65_536).contains(&self.train.batch), "must be 1 to 65536"),
            ("checkpoint.every", self.checkpoint.every >= 1, "must be at least 1"),
            ("checkpoint.keep", self.checkpoint.keep >= 1, "must be at least 1"),
            ("run.dir", !self.run.dir.as_os_str().is_empty(), "must name a directory"),
            (
                "run.devices",
                self.run.devices.is_empty() || self.run.device == 0,
                "takes the place of run.device: set one of them",
            ),
            (
                "run.devices",
                self.run.devices.iter().enumerate().all(|(i, d)| !self.run.devices[..i].contains(d)),
                "lists a device twice",
            ),
            (
                "run.devices",
                self.train.batch >= self.devices().len(),
                "has more devices than train.batch has positions",
            ),
            ("eval.games", !self.eval.enabled() || self.eval.games >= 1, "must be at least 1"),
            (
                "eval.every_minutes",
                self.eval.every_minutes.is_finite() && self.eval.every_minutes >= 0.0,
                "must be a number of minutes >= 0 (0: eval.every decides)",
            ),
            (
                "eval.movetime",
                self.eval.movetime == 0 || !self.eval.engine.trim().is_empty(),
                "plays against eval.engine: name the engine",
            ),
            ("eval.simulations", (1..=1_000_000).contains(&self.eval.simulations), "must be 1 to 1000000"),
            ("eval.nodes", self.eval.nodes >= 1, "must be at least 1"),
            ("eval.tolerance", self.eval.tolerance >= 1, "must be at least 1 Elo"),
            ("eval.max_probes", self.eval.max_probes >= 1, "must be at least 1"),
            (
                "eval.bracket",
                self.eval.bracket.is_none_or(|[low, high]| low < high),
                "must be [low, high] with low below high",
            ),
            (
                "eval.ladder",
                self.eval.ladder.is_none()
                    || self.eval.engine.trim().is_empty()
                    || self.eval.method == EvalMethod::Anchor,
                "with eval.engine, the engine plays one match at eval.anchor after the ladder's placement: \
                 set eval.method = \"anchor\", or leave eval.engine out",
            ),
            ("gate.games", self.gate.games >= 2, "must be at least 2 (one pair, colours swapped)"),
            ("gate.simulations", (1..=1_000_000).contains(&self.gate.simulations), "must be 1 to 1000000"),
            (
                "gate.threshold",
                self.gate.threshold > 0.5 && self.gate.threshold <= 1.0,
                "must be in (0.5, 1]: a challenger that merely draws even does not take over",
            ),
            (
                "gate.every",
                !self.gate.enabled() || self.run.mode == RunMode::SelfPlay,
                "gates the network self-play plays with: only a self-play run (run.mode = \"selfplay\") has one",
            ),
            ("curriculum.fraction", (0.0..=1.0).contains(&self.curriculum.fraction), "must be in [0, 1]"),
            ("curriculum.step", (0..=1000).contains(&self.curriculum.step), "must be 0 to 1000"),
            ("curriculum.nodes", self.curriculum.nodes >= 1, "must be at least 1"),
            (
                "curriculum.ladder",
                self.curriculum.ladder.is_none() || self.curriculum.engine.trim().is_empty(),
                "takes the place of curriculum.engine: set one of them",
            ),
            (
                "distill.data",
                !self.distills() || !self.distill.data.as_os_str().is_empty(),
                "must name the folder `capa distill gen` or `capa sgf convert` wrote (or, with distill.teacher_net, a \
                 run directory) when run.mode = \"distill\" or distill.epochs > 0",
            ),
            (
                "distill.temperature",
                self.distill.temperature > 0.0 && self.distill.temperature <= 100.0,
                "must be in (0, 100] pawns",
            ),
            ("distill.holdout", (0.0..=0.5).contains(&self.distill.holdout), "must be in [0, 0.5]"),
            ("distill.value_q_weight", (0.0..=1.0).contains(&self.distill.value_q_weight), "must be in [0, 1]"),
            (
                "eval.every",
                !self.eval.enabled() || self.game.name.is_chess(),
                "rates against UCI engines, which play chess games: set eval.every = 0 for Go (and match the \
                 networks with `capa gtp`)",
            ),
            (
                "curriculum.engine",
                self.curriculum.engine.trim().is_empty() || self.game.name.is_chess(),
                "is a UCI engine, which plays chess games: leave it out for Go",
            ),
            (
                "run.mode",
                self.run.mode != RunMode::Supervised || self.game.name == GameKind::Chess,
                "\"supervised\" reads Lc0's V6 chess data: set game.name = \"chess\" (other games learn from game \
                 records, such as `capa sgf convert` writes, with run.mode = \"distill\")",
            ),
            (
                "supervised.data",
                self.run.mode != RunMode::Supervised || !self.supervised.data.is_empty(),
                "must list V6 files, archives or folders when run.mode = \"supervised\"",
            ),
            ("supervised.holdout", (0.0..=0.5).contains(&self.supervised.holdout), "must be in [0, 0.5]"),
            ("supervised.sample_rate", self.supervised.sample_rate >= 1, "must be at least 1"),
            (
                "supervised.shuffle_buffer",
                (1..=10_000_000).contains(&self.supervised.shuffle_buffer),
                "must be 1 to 10000000",
            ),
            ("supervised.readers", (1..=64).contains(&self.supervised.readers), "must be 1 to 64"),
            ("supervised.q_ratio", (0.0..=1.0).contains(&self.supervised.q_ratio), "must be in [0, 1]"),
        ];
        if let Some((key, _, message)) = more.into_iter().find(|(_, ok, _)| !ok) {
            return fail(key, message.to_string());
        }
        if let Err(e) = self.optimizer.validate() {
            // capa-net's message starts with the field's name.
            let text = e.to_string();
            let message = text.rsplit(": ").next().unwrap_or(&text);
            let key = message.split_whitespace().next().unwrap_or_default();
            return fail(&format!("optimizer.{key}"), message.to_string());
        }
        if self.optimizer.init_decay > 0.0 && self.run.init.is_none() {
            return fail("optimizer.init_decay", "decays towards run.init's weights: set run.init too".to_string());
        }
        if let Err(e) = self.net_config() {
            return fail("net", format!("{e:#}"));
        }
        Ok(())
    }
}

/// Sets `section.key` in `table` to `value`, read as a TOML value (a bare
/// word that is not one is a string).
fn apply_set(table: &mut toml::Table, set: &str) -> Result<()> {
    let Some((key, value)) = set.split_once('=') else {
        bail!("--set {set}: expected section.key=value");
    };
    let path: Vec<&str> = key.trim().split('.').collect();
    if path.iter().any(|part| part.is_empty()) {
        bail!("--set {set}: `{}` is not a key like section.key", key.trim());
    }
    let value = value.trim();
    let value = match format!("v = {value}").parse::<toml::Table>() {
        Ok(mut parsed) => parsed.remove("v").expect("parsed the key"),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let (last, sections) = path.split_last().expect("not empty");
    let mut current = table;
    for section in sections {
        let entry = current.entry(section.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = match entry {
            toml::Value::Table(table) => table,
            _ => bail!("--set {set}: `{section}` is not a section"),
        };
    }
    current.insert(last.to_string(), value);
    Ok(())
}

/// The line (from 1) of `section.key` in the file's text, if it is there.
fn locate(text: &str, key: &str) -> Option<usize> {
    let (section, name) = key.rsplit_once('.').unwrap_or(("", key));
    let mut current = String::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = header.trim().to_string();
        } else if current == section && line.split_once('=').is_some_and(|(k, _)| k.trim().trim_matches('"') == name) {
            return Some(index + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str, sets: &[&str]) -> String {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        format!("{:#}", RunConfig::parse(text, &sets).unwrap_err())
    }

    /// Every shipped config and ladder is valid as written.
    #[test]
    fn the_configs_folder_is_valid() {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name.starts_with("ladder-") {
                    capa_play::Ladder::read(&path).unwrap_or_else(|e| panic!("{e:#}"));
                } else {
                    RunConfig::load(&path, &[]).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                }
                names.push(name);
            }
        }
        names.sort();
        let expected = [
            "capablanca-cpu.toml",
            "capablanca-selfplay.toml",
            "capablanca.toml",
            "chess-cpu.toml",
            "chess.toml",
            "distill.toml",
            "go9.toml",
            "ladder-capablanca.toml",
            "ladder-chess.toml",
            "learn.toml",
            "supervised-chess.toml",
            "tiny.toml",
        ];
        assert_eq!(names, expected);
    }

    #[test]
    fn defaults_are_valid_and_round_trip() {
        let config = RunConfig::parse("", &[]).unwrap();
        assert_eq!(config, RunConfig::default());
        assert_eq!(RunConfig::parse(&config.to_toml(), &[]).unwrap(), config);
    }

    #[test]
    fn errors_name_the_key_and_line() {
        let e = error("[selfplay]\ngames = 4\nsimulatons = 10\n", &[]);
        assert!(e.contains("line 3") && e.contains("simulatons"), "{e}");
        let e = error("[run]\nseed = \"one\"\n", &[]);
        assert!(e.contains("line 2") && e.contains("seed"), "{e}");
        let e = error("[selfplay]\ngames = 4\nparallel_sims = 0\n", &[]);
        assert!(e.contains("selfplay.parallel_sims (line 3)"), "{e}");
        let e = error("[bogus]\nx = 1\n", &[]);
        assert!(e.contains("bogus"), "{e}");
        let e = error("[optimizer]\nlearning_rate = -1.0\n", &[]);
        assert!(e.contains("optimizer.learning_rate") && e.contains("line 2"), "{e}");
        let e = error("[optimizer]\ninit_decay = 10.0\n", &[]);
        assert!(e.contains("optimizer.init_decay (line 2)") && e.contains("run.init"), "{e}");
        let e = error("[net]\npreset = \"huge\"\n", &[]);
        assert!(e.contains("net") && e.contains("huge"), "{e}");
        let e = error("[net]\nchannels = 30\n", &[]);
        assert!(e.contains("net"), "{e}");
        let e = error("[run]\ndevices = [0, 1, 0]\n", &[]);
        assert!(e.contains("run.devices (line 2)") && e.contains("twice"), "{e}");
        let e = error("[run]\ndevice = 1\ndevices = [2, 3]\n", &[]);
        assert!(e.contains("run.devices") && e.contains("run.device"), "{e}");
        let e = error("[run]\nmode = \"supervised\"\n[game]\nname = \"chess\"\n", &[]);
        assert!(e.contains("supervised.data") && e.contains("V6"), "{e}");
        let e = error("[run]\nmode = \"supervised\"\n[supervised]\ndata = [\"v6\"]\n", &[]);
        assert!(e.contains("run.mode (line 2)") && e.contains("chess"), "{e}");
        let e = error("[supervised]\nreaders = 0\n", &[]);
        assert!(e.contains("supervised.readers (line 2)"), "{e}");
        let config = RunConfig::parse("[run]\ndevices = [2, 3]\n", &[]).unwrap();
        assert_eq!((config.devices(), config.device().index), (vec![2, 3], 2));
        let e = error("[selfplay]\nresign_loss = 0.3\n", &[]);
        assert!(e.contains("selfplay.resign_loss (line 2)"), "{e}");
        let e = error("[selfplay]\nsearch = \"mcts\"\n", &[]);
        assert!(e.contains("search") && e.contains("gumbel"), "{e}");
        let e = error("[buffer]\nwindow = 1000\nwindow_start = 2000\n", &[]);
        assert!(e.contains("buffer.window_start (line 3)"), "{e}");
        let e = error("[eval]\nmovetime = 200\n", &[]);
        assert!(e.contains("eval.movetime") && e.contains("engine"), "{e}");
        let e = error("[eval]\nevery = 1\nladder = \"l.toml\"\nengine = \"fairy-stockfish\"\n", &[]);
        assert!(e.contains("eval.ladder") && e.contains("anchor"), "{e}");
    }

    /// KataGo's window: `c` until the run has made `c` positions, then
    /// growing as `c (1 + β ((N/c)^α - 1) / α)`, capped at `window`.
    #[test]
    fn the_window_grows_with_the_positions_made() {
        let fixed = BufferSection { window: 5_000, ..BufferSection::default() };
        assert_eq!(fixed.window_at(1_000_000), 5_000);
        let growing = BufferSection { window: 200_000, window_start: 20_000, ..BufferSection::default() };
        assert_eq!(growing.window_at(0), 20_000);
        assert_eq!(growing.window_at(20_000), 20_000);
        // N = 16c: 16^0.75 = 8, so c (1 + 0.4 · 7 / 0.75).
        let expected = 20_000.0 * (1.0 + 0.4 * 7.0 / 0.75);
        assert!((growing.window_at(320_000) as f64 - expected).abs() <= 1.0);
        assert_eq!(growing.window_at(100_000_000), 200_000);
        let sizes: Vec<usize> = (0..50).map(|i| growing.window_at(i * 40_000)).collect();
        assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{sizes:?}");
    }

    #[test]
    fn sets_override_and_are_checked_like_the_file() {
        let config =
            RunConfig::parse("[selfplay]\ngames = 4\n", &["selfplay.games=9".into(), "run.dir=x/y".into()]).unwrap();
        assert_eq!((config.selfplay.games, config.run.dir), (9, PathBuf::from("x/y")));
        let config = RunConfig::parse("", &["optimizer.loss_weights.future = 0".into()]).unwrap();
        assert_eq!(config.optimizer.loss_weights.future, 0.0);
        let e = error("", &["selfplay.games=many"]);
        assert!(e.contains("--set selfplay.games=many"), "{e}");
        let e = error("", &["selfplay.gmes=3"]);
        assert!(e.contains("gmes"), "{e}");
        let e = error("[selfplay]\ngames = 4\n", &["selfplay.games=0"]);
        assert!(e.contains("selfplay.games: must be at least 1") && !e.contains("line"), "{e}");
        let e = error("", &["games"]);
        assert!(e.contains("expected section.key=value"), "{e}");
        let e = error("", &["run.seed.x=1"]);
        assert!(e.contains("--set run.seed.x=1") && e.contains("run.seed"), "{e}");
        let e = error("[run]\nseed = 3\n", &["run.seed.x=1"]);
        assert!(e.contains("`seed` is not a section"), "{e}");
    }
}
