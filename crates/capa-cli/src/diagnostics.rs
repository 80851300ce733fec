//! `capa policy-health`: how peaked a network's policy is on positions from
//! random games. (`buffer-stats` and `overfit-check` read a run and live in
//! capa-train, beside the buffer they measure.)

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use capa_mcts::{Evaluations, Evaluator, LeafRequest, Rng, random_opening};
use capa_net::{DeviceSpec, GameKind, NetEvaluator, NetGame};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;

/// Positions per network batch.
const BATCH: usize = 256;
/// Random games are this many plies long at most.
const MAX_PLIES: u64 = 60;

/// Prints, per network, the mean over `positions` positions of the largest
/// prior times the number of legal moves: 1.0 for a uniform policy, the
/// number of legal moves for one that puts everything on one move.
///
/// # Errors
/// A network that cannot be read or run.
pub fn policy_health(nets: &[PathBuf], positions: usize, seed: u64, device: DeviceSpec) -> Result<()> {
    if positions == 0 {
        anyhow::bail!("--positions must be at least 1");
    }
    for net in nets {
        let game = capa_net::read_net_config(net).with_context(|| format!("cannot read {}", net.display()))?.game;
        let (mean, median) = match game {
            GameKind::Capablanca => peakedness::<Capablanca>(net, positions, seed, device)?,
            GameKind::Chess => peakedness::<Chess>(net, positions, seed, device)?,
        };
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
    let evaluator =
        NetEvaluator::<G>::from_file(net, device).with_context(|| format!("cannot load {}", net.display()))?;
    let mut rng = Rng::new(seed);
    let requests: Vec<LeafRequest<G>> = (0..positions)
        .map(|_| {
            let plies = (rng.next_u64() % (MAX_PLIES + 1)) as u32;
            LeafRequest::from_history(&random_opening::<G>(plies, &mut rng))
        })
        .collect();
    let mut values = Vec::with_capacity(positions);
    let mut out = Evaluations::default();
    for batch in requests.chunks(BATCH) {
        out.clear();
        evaluator.evaluate(batch, &mut out).map_err(|e| anyhow::anyhow!("{e}"))?;
        for i in 0..out.len() {
            let (priors, _) = out.get(i);
            let total: f32 = priors.iter().sum();
            let max = priors.iter().copied().fold(0.0, f32::max);
            values.push(f64::from(max / total.max(f32::MIN_POSITIVE)) * priors.len() as f64);
        }
    }
    values.sort_by(f64::total_cmp);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    Ok((mean, values[values.len() / 2]))
}
