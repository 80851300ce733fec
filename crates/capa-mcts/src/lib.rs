//! Batched, tree-parallel PUCT search for capa.
//!
//! The search is generic over [`capa_rules::Game`] and knows nothing about
//! tensors: it hands batches of [`LeafRequest`]s to an [`Evaluator`] (the
//! network, on its own thread) and gets priors, WDL and moves-left back.
//!
//! - [`Tree`]: one game's search, in an arena of 32-byte nodes and 4-byte
//!   edges; PUCT with Lc0's defaults ([`SearchParams`]), virtual loss,
//!   root noise or Gumbel AlphaZero's root ([`GumbelParams`]), proofs, KLD-gain stop, tree reuse ([`Tree::advance`]), and
//!   an analysis mode that merges transpositions ([`Tree::analysis`]).
//! - [`search_many`]: hundreds of trees in groups, selection and backup on
//!   the rayon pool, the evaluator pipelined against the CPU work.
//! - [`SearchResult`]: visit distribution, Q/D/M, proofs and a principal
//!   variation per root move; [`Temperature`] and [`PlayoutCap`] for self-play.
//! - [`CachedEvaluator`]: answers a position the network has seen from a
//!   cache (Lc0's NN cache).

#![deny(missing_docs)]

mod cache;
mod driver;
mod error;
mod evaluator;
mod gumbel;
mod node;
mod params;
mod result;
mod selfplay;
mod tree;

pub use cache::CachedEvaluator;
pub use driver::{Pipeline, search_many};
pub use error::SearchError;
pub use evaluator::{
    EvalError, Evaluations, Evaluator, HISTORY_LEN, LeafRequest, RandomEvaluator, UniformEvaluator, Value,
};
pub use gumbel::{GumbelParams, considered_visits, improved_policy};
pub use params::{DirichletNoise, KldStop, MAX_PER_ROUND, MovesLeftUtility, PLAY_PARALLEL_SIMS, SearchParams};
pub use result::{GumbelOutcome, MoveInfo, Proof, SearchResult, StopReason};
pub use selfplay::{PlayoutCap, Temperature};
pub use tree::{Limits, Tree};
