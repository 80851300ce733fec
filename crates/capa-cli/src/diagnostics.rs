//! Diagnostics: `capa policy-health`, how peaked a network's policy is on
//! positions from random games; `buffer-stats` and `overfit-check`, whose
//! work lives in capa-train beside the buffer they measure.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use capa_mcts::{Evaluations, Evaluator, LeafRequest};
use capa_net::{DeviceSpec, NetEvaluator, NetGame};
use capa_rules::{Rng, random_opening};

use crate::args::DeviceArgs;

/// Positions per network batch.
const BATCH: usize = 256;
/// Random games are this many plies long at most.
const MAX_PLIES: u64 = 60;

/// How peaked each network's policy is.
/// The mean, over positions of
/// seeded random games (up to 60 plies), of the largest prior times the
/// number of legal moves. 1.0 means uniform; a trained network scores
/// well above. One line per network.
#[derive(clap::Args, Debug)]
pub struct PolicyHealthCommand {
    /// Network files.
    #[arg(required = true)]
    pub nets: Vec<PathBuf>,
    /// Positions to measure on.
    #[arg(long, default_value_t = 512)]
    pub positions: usize,
    /// Seeds the random games (the same positions for every network).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

impl PolicyHealthCommand {
    /// Prints a line per network.
    ///
    /// # Errors
    /// As [`policy_health`].
    pub fn run(self) -> Result<()> {
        policy_health(&self.nets, self.positions, self.seed, self.device.spec())
    }
}

/// The replay window of a run (the newest games that fill
/// `buffer.window`): results, endings, game lengths, and the value
/// targets' win/draw/loss shares for the side to move.
#[derive(clap::Args, Debug)]
pub struct BufferStatsCommand {
    /// The run directory (a path, or an s3://, gs://, az:// URL).
    pub run: PathBuf,
}

impl BufferStatsCommand {
    /// Prints the statistics.
    ///
    /// # Errors
    /// As [`capa_train::buffer_stats`].
    pub fn run(self) -> Result<()> {
        println!("{}", capa_train::buffer_stats(&self.run)?);
        Ok(())
    }
}

/// Whether training memorises the buffer: the newest network's losses
/// on the oldest and on the newest positions of the replay window. A
/// newest/oldest ratio of 2 or more means memorising.
#[derive(clap::Args, Debug)]
pub struct OverfitCheckCommand {
    /// The run directory (a path, or an s3://, gs://, az:// URL).
    pub run: PathBuf,
    /// Positions at each end of the window.
    #[arg(long, default_value_t = 2048)]
    pub positions: usize,
    #[command(flatten)]
    pub device: DeviceArgs,
}

impl OverfitCheckCommand {
    /// Prints the report.
    ///
    /// # Errors
    /// As [`capa_train::overfit_check`].
    pub fn run(self) -> Result<()> {
        if self.positions == 0 {
            anyhow::bail!("--positions must be at least 1");
        }
        println!("{}", capa_train::overfit_check(&self.run, self.positions, self.device.spec())?);
        Ok(())
    }
}

/// Prints, per network, the mean over `positions` positions of the largest
/// prior times the number of legal moves: 1.0 for a uniform policy, the
/// number of legal moves for one that puts everything on one move.
///
/// # Errors
/// A network that cannot be read or run.
fn policy_health(nets: &[PathBuf], positions: usize, seed: u64, device: DeviceSpec) -> Result<()> {
    if positions == 0 {
        anyhow::bail!("--positions must be at least 1");
    }
    for net in nets {
        let game = capa_net::read_net_config(net).with_context(|| format!("cannot read {}", net.display()))?.game;
        let (mean, median) = capa_rules::for_game!(game, G => peakedness::<G>(net, positions, seed, device))?;
        println!(
            "{}: max prior x legal moves {mean:.2} (median {median:.2}) over {positions} positions; 1.0 is uniform",
            net.display()
        );
    }
    Ok(())
}

/// Mean and median of max prior x legal moves over positions of seeded
/// random games (the same positions for every network).
fn peakedness<G: NetGame>(net: &Path, positions: usize, seed: u64, device: DeviceSpec) -> Result<(f64, f64)> {
    let mut rng = Rng::new(seed);
    let requests: Vec<LeafRequest<G>> = (0..positions)
        .map(|_| {
            let plies = (rng.next_u64() % (MAX_PLIES + 1)) as u32;
            LeafRequest::from_history(&random_opening::<G>(plies, &mut rng))
        })
        .collect();
    let mut values = Vec::with_capacity(positions);
    for_each_policy(net, &requests, device, |_, priors| {
        let total: f32 = priors.iter().sum();
        let max = priors.iter().copied().fold(0.0, f32::max);
        values.push(f64::from(max / total.max(f32::MIN_POSITIVE)) * priors.len() as f64);
    })?;
    values.sort_by(f64::total_cmp);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    Ok((mean, values[values.len() / 2]))
}

/// Calls `each` with every request and the network's priors over its
/// legal moves, in order, evaluating in batches.
///
/// # Errors
/// A network that cannot be read or run.
pub(crate) fn for_each_policy<G: NetGame>(
    net: &Path,
    requests: &[LeafRequest<G>],
    device: DeviceSpec,
    mut each: impl FnMut(&LeafRequest<G>, &[f32]),
) -> Result<()> {
    let evaluator =
        NetEvaluator::<G>::from_file(net, device).with_context(|| format!("cannot load {}", net.display()))?;
    let mut out = Evaluations::default();
    for batch in requests.chunks(BATCH) {
        out.clear();
        evaluator.evaluate(batch, &mut out).map_err(|e| anyhow::anyhow!("{}: {e}", net.display()))?;
        for (i, request) in batch.iter().enumerate() {
            each(request, out.get(i).0);
        }
    }
    Ok(())
}
