//! Training steps: batches drawn and encoded on a loader thread while the
//! previous step runs, their mean losses per iteration, and a network's
//! mean losses on a buffer's positions (held-out games, diagnostics).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use anyhow::{Result, anyhow};
use burn::prelude::*;
use capa_net::{CapaAutodiffBackend, CapaBackend, LossWeights, Net, NetGame, Targets, Trainer, burn, losses};
use capa_rules::{Rng, mix};
use capa_rundir::{MeanLosses, TrainReport};

use crate::buffer::{HostBatch, ReplayBuffer};
use crate::config::RunConfig;
use crate::progress::progress;

/// Trains `steps` steps on the batches `next_batch` makes (from a generator
/// seeded by the run's seed and `iteration`) on a loader thread while the
/// previous step runs. `None` when stopped.
#[allow(clippy::too_many_arguments)]
pub(crate) fn train<B: CapaAutodiffBackend, G: NetGame>(
    config: &RunConfig,
    trainer: &mut Trainer<B>,
    mut next_batch: impl FnMut(&mut Rng) -> Option<HostBatch> + Send,
    steps: u64,
    iteration: u64,
    device: &B::Device,
    stop: &AtomicBool,
) -> Result<Option<TrainReport>> {
    let mut report = TrainReport::default();
    if steps == 0 {
        return Ok(Some(report));
    }
    let bar = progress(steps, &format!("iteration {iteration} training"));
    let mut waited = 0.0;
    let started = Instant::now();
    let finished = std::thread::scope(|scope| -> Result<bool> {
        let (batches, receiver) = sync_channel::<HostBatch>(2);
        scope.spawn(move || {
            let mut rng = Rng::new(mix(config.run.seed ^ 0x7472_6169_6e00, iteration));
            for _ in 0..steps {
                let Some(batch) = next_batch(&mut rng) else { return };
                if batches.send(batch).is_err() {
                    return;
                }
            }
        });
        for _ in 0..steps {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            let wait = Instant::now();
            let batch = receiver.recv().map_err(|_| anyhow!("the data loader stopped"))?;
            waited += wait.elapsed().as_secs_f64();
            let (planes, targets) = to_tensors::<B, G>(batch, device);
            let step = trainer.step(planes, targets);
            report.steps += 1;
            report.skipped += u64::from(step.skipped);
            report.loss += f64::from(step.total);
            report.policy += f64::from(step.policy);
            report.wdl += f64::from(step.wdl);
            report.moves_left += f64::from(step.moves_left);
            report.future += f64::from(step.future);
            if !step.skipped {
                report.grad_norm += f64::from(step.grad_norm);
            }
            report.learning_rate = step.learning_rate;
            bar.set_message(format!("loss {:.3}", step.total));
            bar.inc(1);
        }
        Ok(true)
    })?;
    bar.finish_and_clear();
    if !finished {
        return Ok(None);
    }
    let n = report.steps.max(1) as f64;
    for value in [&mut report.loss, &mut report.policy, &mut report.wdl, &mut report.moves_left, &mut report.future] {
        *value /= n;
    }
    // A skipped step's norm is not finite.
    report.grad_norm /= (report.steps - report.skipped).max(1) as f64;
    report.data_wait_share = waited / started.elapsed().as_secs_f64().max(1e-9);
    Ok(Some(report))
}

/// Positions per batch when a network is measured.
pub(crate) const MEASURE_BATCH: usize = 256;

/// `net`'s mean losses on the training positions `range` of `buffer`.
pub(crate) fn mean_losses<B: CapaBackend, G: NetGame>(
    net: &Net<B>,
    buffer: &ReplayBuffer<G>,
    range: std::ops::Range<usize>,
    weights: &LossWeights,
    device: &B::Device,
) -> MeanLosses {
    let batches = range
        .clone()
        .step_by(MEASURE_BATCH)
        .map(|start| buffer.encode_range(start..(start + MEASURE_BATCH).min(range.end)));
    mean_losses_of::<B, G>(net, batches, weights, device)
}

/// `net`'s mean losses over `batches`. The top-1 agreement counts against
/// a batch's `best` moves where it has them, else against the target's
/// largest shares.
pub(crate) fn mean_losses_of<B: CapaBackend, G: NetGame>(
    net: &Net<B>,
    batches: impl Iterator<Item = HostBatch>,
    weights: &LossWeights,
    device: &B::Device,
) -> MeanLosses {
    let mut sums = MeanLosses::default();
    let mut positions = 0;
    for mut batch in batches {
        let size = batch.size as f64;
        positions += batch.size;
        let best = std::mem::take(&mut batch.best);
        let (planes, targets) = to_tensors::<B, G>(batch, device);
        let reference = if best.is_empty() {
            targets.policy.clone()
        } else {
            let mut one_hot = vec![0.0f32; best.len() * G::policy_size()];
            for (row, &index) in best.iter().enumerate() {
                one_hot[row * G::policy_size() + index as usize] = 1.0;
            }
            Tensor::from_data(TensorData::new(one_hot, [best.len(), G::policy_size()]), device)
        };
        let output = net.forward(planes, true);
        // The network's choice: the largest logit among legal moves.
        let masked = output.policy.clone().mask_fill(targets.legal.clone().bool_not(), f32::NEG_INFINITY);
        let chosen = reference.clone().gather(1, masked.argmax(1));
        let top = reference.max_dim(1);
        let agree: Vec<f32> = chosen.greater_equal(top).float().into_data().to_vec().expect("f32 data");
        sums.top1_agreement += agree.iter().map(|&a| f64::from(a)).sum::<f64>();
        let l = losses(output, targets, weights);
        let scalar = |t: Tensor<B, 1>| f64::from(t.into_scalar().elem::<f32>());
        sums.policy += size * scalar(l.policy);
        sums.wdl += size * scalar(l.wdl);
        sums.total += size * scalar(l.total);
    }
    let n = positions.max(1) as f64;
    MeanLosses {
        positions,
        policy: sums.policy / n,
        wdl: sums.wdl / n,
        total: sums.total / n,
        top1_agreement: sums.top1_agreement / n,
    }
}

pub(crate) fn to_tensors<B: Backend, G: NetGame>(batch: HostBatch, device: &B::Device) -> (Tensor<B, 4>, Targets<B>) {
    let (n, policy) = (batch.size, G::policy_size());
    let planes = Tensor::from_data(TensorData::new(batch.planes, [n, G::PLANES, G::RANKS, G::FILES]), device);
    let targets = Targets {
        policy: Tensor::from_data(TensorData::new(batch.policy, [n, policy]), device),
        legal: Tensor::from_data(TensorData::new(batch.legal, [n, policy]), device),
        wdl: Tensor::from_data(TensorData::new(batch.wdl, [n, 3]), device),
        moves_left: Tensor::from_data(TensorData::new(batch.moves_left, [n, 1]), device),
        future: Tensor::from_data(TensorData::new(batch.future, [n, policy]), device),
    };
    (planes, targets)
}
