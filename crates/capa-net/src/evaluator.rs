//! The search's evaluator backed by the network.
//!
//! The network lives on a thread of its own per device (burn's device handles need not
//! be shareable between threads); `evaluate` encodes the batch in parallel,
//! hands the planes over, and turns the answer into priors over the legal
//! moves. Batches are padded to the next power of two so that a backend
//! that compiles kernels per shape sees few shapes.

use std::marker::PhantomData;
use std::path::Path;

use capa_mcts::{EvalError, Evaluations, Evaluator, LeafRequest, Value};
use rayon::prelude::*;

use crate::NetError;
use crate::config::NetConfig;
use crate::device::DeviceSpec;
use crate::encode::{NetGame, encode_batch};
use crate::erased::Inference;
use crate::model::{Heads, Net};
use crate::ops::CapaBackend;
use crate::threads::{HostOutput, NetThreads};

/// Evaluates leaves with a network on a thread of its own per device.
pub struct NetEvaluator<G: NetGame> {
    threads: NetThreads,
    policy_size: usize,
    _game: PhantomData<fn() -> G>,
}

impl<G: NetGame> NetEvaluator<G> {
    /// Evaluates with a copy of `net` on each of `devices`, each on a
    /// thread of its own taking the next batch as it is free (a search
    /// with several batches in flight keeps them all busy).
    ///
    /// # Errors
    /// [`NetError::Config`] when the network plays another game than `G`
    /// or `devices` is empty.
    pub fn from_net<B: CapaBackend>(net: Net<B>, devices: &[B::Device]) -> Result<NetEvaluator<G>, NetError> {
        NetEvaluator::on(NetThreads::start(net, devices)?)
    }

    /// Evaluates with `inference`'s network, a copy on each of its devices,
    /// computing in its precision.
    ///
    /// # Errors
    /// [`NetError::Config`] when the network plays another game than `G`;
    /// [`NetError::Backend`] when the GPU runtime fails.
    pub fn from_inference(inference: &Inference) -> Result<NetEvaluator<G>, NetError> {
        NetEvaluator::on(inference.threads()?)
    }

    /// Loads a network file onto the device `spec` names, to compute in its precision.
    ///
    /// # Errors
    /// As [`Inference::load`]; [`NetError::Config`] when the
    /// network plays another game than `G`.
    pub fn from_file(path: &Path, spec: DeviceSpec) -> Result<NetEvaluator<G>, NetError> {
        NetEvaluator::from_inference(&Inference::load(path, spec)?)
    }

    fn on(threads: NetThreads) -> Result<NetEvaluator<G>, NetError> {
        let game = threads.config().game;
        if game.name() != G::NAME {
            return Err(NetError::Config(format!("the network plays {}, not {}", game.name(), G::NAME)));
        }
        Ok(NetEvaluator { threads, policy_size: game.policy_size(), _game: PhantomData })
    }

    /// The network's architecture: which heads it has.
    pub fn config(&self) -> &NetConfig {
        self.threads.config()
    }

    /// The network's outputs for `batch`, with the ownership and score
    /// where it has those heads (analysis; a search needs neither). Row `i`
    /// of the answer is request `i`'s.
    ///
    /// # Errors
    /// A request without a position, or a failed network call.
    pub fn analyse(&self, batch: &[LeafRequest<G>]) -> Result<HostOutput, NetError> {
        self.run(batch, Heads::ANALYSIS).map_err(NetError::Backend)
    }

    fn run(&self, batch: &[LeafRequest<G>], heads: Heads) -> Result<HostOutput, String> {
        if let Some(i) = batch.iter().position(|r| r.history().is_empty() || r.history().len() != r.repeated().len()) {
            return Err(format!("request {i} of the batch has no position or mismatched repetition flags"));
        }
        let rows = batch.len().next_power_of_two();
        // Padding rows stay zero.
        let mut planes = vec![0.0; rows * G::INPUT_LEN];
        encode_batch::<G>(batch.par_iter().map(|r| (r.history(), r.repeated())), &mut planes);
        self.threads.run(planes, rows, heads)
    }
}

impl<G: NetGame> Evaluator<G> for NetEvaluator<G> {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        if batch.is_empty() {
            return Ok(());
        }
        let answer = self.run(batch, Heads::SEARCH)?;
        let used = batch.len();
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        if !(finite(&answer.policy[..used * self.policy_size])
            && finite(&answer.wdl[..used * 3])
            && finite(&answer.moves_left[..used]))
        {
            return Err("the network's output is not finite (damaged or diverged weights)".into());
        }
        for (row, request) in batch.iter().enumerate() {
            let logits = &answer.policy[row * self.policy_size..][..self.policy_size];
            let position = request.position();
            let legal = request.legal_moves();
            let max = legal.iter().map(|&m| logits[position.policy_index(m)]).fold(f32::NEG_INFINITY, f32::max);
            let priors = legal.iter().map(|&m| (logits[position.policy_index(m)] - max).exp());
            let wdl = answer.win_draw_loss(row);
            out.push(priors, Value { wdl, moves_left: answer.moves_left[row] });
        }
        Ok(())
    }
}
