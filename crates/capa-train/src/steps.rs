//! Training steps: batches drawn and encoded on a loader thread while the
//! previous step runs, their mean losses per iteration, and a network's
//! mean losses on a buffer's positions (held-out games, diagnostics).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use anyhow::{Result, anyhow};
use capa_net::{HostBatch, Inference, LossWeights, NetGame, Training};
use capa_rules::{Rng, mix};
use capa_rundir::{MeanLosses, TrainReport};

use crate::buffer::ReplayBuffer;
use crate::config::RunConfig;
use crate::progress::progress;

/// Trains `steps` steps on the batches `next_batch` makes (from a generator
/// seeded by the run's seed and `iteration`) on a loader thread while the
/// previous step runs. `None` when stopped; an error of `next_batch` stops
/// the training with it.
pub(crate) fn train(
    config: &RunConfig,
    trainer: &mut Training,
    mut next_batch: impl FnMut(&mut Rng) -> Result<Option<HostBatch>> + Send,
    steps: u64,
    iteration: u64,
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
        let (batches, receiver) = sync_channel::<Result<HostBatch>>(2);
        scope.spawn(move || {
            let mut rng = Rng::new(mix(config.run.seed ^ 0x7472_6169_6e00, iteration));
            for _ in 0..steps {
                let Some(batch) = next_batch(&mut rng).transpose() else { return };
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
            let batch = receiver.recv().map_err(|_| anyhow!("the data loader stopped"))??;
            waited += wait.elapsed().as_secs_f64();
            let step = trainer.step(batch)?;
            report.steps += 1;
            report.skipped += u64::from(step.skipped);
            report.loss += f64::from(step.total);
            report.policy += f64::from(step.policy);
            report.wdl += f64::from(step.wdl);
            report.moves_left += f64::from(step.moves_left);
            report.future += f64::from(step.future);
            report.ownership += f64::from(step.ownership);
            report.score += f64::from(step.score);
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
    let means = [
        &mut report.loss,
        &mut report.policy,
        &mut report.wdl,
        &mut report.moves_left,
        &mut report.future,
        &mut report.ownership,
        &mut report.score,
    ];
    for value in means {
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
pub(crate) fn mean_losses<G: NetGame>(
    net: &Inference,
    buffer: &ReplayBuffer<G>,
    range: std::ops::Range<usize>,
    weights: &LossWeights,
) -> Result<MeanLosses> {
    let mut batches = range
        .clone()
        .step_by(MEASURE_BATCH)
        .map(|start| buffer.encode_range(start..(start + MEASURE_BATCH).min(range.end)));
    mean_losses_of(net, &mut batches, weights)
}

/// `net`'s mean losses over `batches`. The top-1 agreement counts against
/// a batch's `best` moves where it has them, else against the target's
/// largest shares.
pub(crate) fn mean_losses_of(
    net: &Inference,
    batches: &mut dyn Iterator<Item = HostBatch>,
    weights: &LossWeights,
) -> Result<MeanLosses> {
    let mut sums = MeanLosses::default();
    for batch in batches {
        let size = batch.size;
        let losses = net.losses(batch, weights)?;
        let n = size as f64;
        sums.positions += size;
        sums.policy += n * losses.policy;
        sums.wdl += n * losses.wdl;
        sums.total += n * losses.total;
        sums.top1_agreement += n * losses.top1_agreement;
    }
    let n = sums.positions.max(1) as f64;
    Ok(MeanLosses {
        positions: sums.positions,
        policy: sums.policy / n,
        wdl: sums.wdl / n,
        total: sums.total / n,
        top1_agreement: sums.top1_agreement / n,
    })
}
