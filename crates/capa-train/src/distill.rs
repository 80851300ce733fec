//! `run.mode = "distill"`: the network learns from a teacher's games
//! (`capa distill gen`, or the players of `capa sgf convert`'s SGF games)
//! instead of its own. Each iteration is an epoch:
//! as many steps as the training split has positions per batch, on
//! uniformly drawn positions; then the held-out games measure how often
//! the network's first choice is the teacher's, and the policy and value
//! losses there; every `eval.every` epochs `[eval]` measures it in play
//! (its Elo against an engine, or its score against the previous epoch's
//! network). Checkpoints, resume and metrics are the self-play loop's.
//!
//! With `distill.teacher_net` the teacher is a network: its policy, WDL
//! and moves left on each batch's positions are the targets, so a trained
//! network passes what it knows to another architecture; the positions
//! come from teacher games or from a run directory's own games.
//!
//! The split is by game and fixed by the file names, so a resumed run
//! holds out the same games.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use capa_data::{GameRecord, PolicyTarget, RECORD_EXTENSION, TEACHER_EXTENSION, TeacherGame};
use capa_net::{Heads, HostBatch, Inference, NetGame};
use capa_rundir::{DistillWork, MetricsLine, RunDir, Work, keys};

use crate::buffer::{ReplayBuffer, Sampling, ValueTarget};
use crate::commit::{commit, publish_net, start_trainer};
use crate::config::RunConfig;
use crate::evaluate::{self, Networks, evaluate_if_due};
use crate::finish::Finish;
use crate::games::{READ_CHUNK, list_games, read_games};
use crate::progress::progress;
use crate::steps::{MEASURE_BATCH, mean_losses_of, train};

/// The teacher's games, split.
pub(crate) struct TeacherData<G: NetGame> {
    /// What the network trains on.
    pub train: ReplayBuffer<G>,
    /// What measures it.
    pub held_out: ReplayBuffer<G>,
}

/// Whether the game in file `name` is held out: a hash of the name below
/// `share`, so the split never changes for a file.
pub(crate) fn held_out(name: &str, share: f32) -> bool {
    let hash = capa_rules::fnv1a(name.as_bytes());
    (hash % 1_000_000) as f64 / 1e6 < f64::from(share)
}

/// Reads every teacher game in `folder` into the two splits.
///
/// # Errors
/// A missing or empty folder, a damaged file (named), a game of another kind.
pub(crate) fn load<G: NetGame>(
    folder: &Path,
    target: PolicyTarget,
    holdout: f32,
    value: ValueTarget,
) -> Result<TeacherData<G>> {
    let mut data = TeacherData {
        train: ReplayBuffer::new(usize::MAX, Sampling::Uniform, value),
        held_out: ReplayBuffer::new(usize::MAX, Sampling::Uniform, value),
    };
    read_teacher::<G>(folder, target, holdout, |record, held| {
        if held { &mut data.held_out } else { &mut data.train }.push(record);
    })?;
    if data.train.positions() == 0 {
        bail!("distill.data: every game of {} is held out; lower distill.holdout", folder.display());
    }
    Ok(data)
}

/// Reads every game in `folder`, and hands it to `keep` as a training
/// record with whether it is held out: the teacher games of `capa distill
/// gen` and the game records of `capa sgf convert` in file-name order, or,
/// when `folder` is a run directory (it has `games/`), the run's own games,
/// oldest first.
///
/// # Errors
/// A missing or empty folder, a damaged file (named), a game of another
/// kind.
pub(crate) fn read_teacher<G: NetGame>(
    folder: &Path,
    target: PolicyTarget,
    holdout: f32,
    mut keep: impl FnMut(GameRecord<G>, bool),
) -> Result<()> {
    if folder.join(keys::GAMES).is_dir() {
        let run = RunDir::open(folder).context("distill.data")?;
        let files = list_games(&run)?;
        if files.is_empty() {
            bail!("distill.data: the run directory {} holds no games", folder.display());
        }
        let names: Vec<String> = files.into_iter().map(|file| file.key).collect();
        for chunk in names.chunks(READ_CHUNK) {
            for (key, record) in chunk.iter().zip(read_games::<G>(&run, chunk)?) {
                if let Some(record) = record {
                    keep(record, held_out(keys::file_name(key), holdout));
                }
            }
        }
        return Ok(());
    }
    let entries = std::fs::read_dir(folder)
        .with_context(|| format!("distill.data: cannot read {} (run `capa distill gen` first)", folder.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let path = entry.with_context(|| format!("distill.data: cannot list {}", folder.display()))?.path();
        if path.extension().is_some_and(|e| e == TEACHER_EXTENSION || e == RECORD_EXTENSION) {
            names.push(path);
        }
    }
    names.sort();
    if names.is_empty() {
        bail!(
            "distill.data: {} holds no .{TEACHER_EXTENSION} or .{RECORD_EXTENSION} files and is no run directory \
             (run `capa distill gen` or `capa sgf convert` first)",
            folder.display()
        );
    }
    for path in names {
        let record = if path.extension().is_some_and(|e| e == TEACHER_EXTENSION) {
            TeacherGame::<G>::read(&path).context("distill.data")?.to_game_record(target)
        } else {
            GameRecord::<G>::read(&path).context("distill.data")?
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        keep(record, held_out(&name, holdout));
    }
    Ok(())
}

/// `distill.teacher_net`, the network whose outputs are the targets, if
/// the run names one.
///
/// # Errors
/// A file that does not load, or a network of another game.
fn teacher_net(config: &RunConfig) -> Result<Option<Inference>> {
    let Some(path) = &config.distill.teacher_net else { return Ok(None) };
    let net = Inference::load(path, config.device())
        .with_context(|| format!("distill.teacher_net: cannot load {}", path.display()))?;
    if net.config().game != config.game.name {
        bail!(
            "distill.teacher_net: {} plays {}, this run {}",
            path.display(),
            net.config().game.name(),
            config.game.name.name()
        );
    }
    tracing::info!(
        "teacher network {}: {} parameters; the student: {}",
        path.display(),
        net.config().parameter_count(),
        config.net_config()?.parameter_count()
    );
    Ok(Some(net))
}

/// Replaces the policy, WDL and moves-left targets of `batch` by the
/// teacher's outputs on its positions (the policy as a softmax over the
/// legal moves), and its best moves by the teacher's first choices.
fn relabel(teacher: &Inference, mut batch: HostBatch) -> Result<HostBatch> {
    let (rows, width) = (batch.size, teacher.config().game.policy_size());
    let out = teacher.forward(batch.planes.clone(), rows, Heads::SEARCH)?;
    batch.wdl = (0..rows).flat_map(|row| out.win_draw_loss(row)).collect();
    batch.moves_left = out.moves_left;
    batch.best = Vec::with_capacity(rows);
    for ((logits, legal), policy) in
        out.policy.chunks(width).zip(batch.legal.chunks(width)).zip(batch.policy.chunks_mut(width))
    {
        let (mut best, mut max) = (0, f32::NEG_INFINITY);
        for (i, &logit) in logits.iter().enumerate() {
            if legal[i] && logit > max {
                (best, max) = (i, logit);
            }
        }
        let mut total = 0.0;
        for (i, target) in policy.iter_mut().enumerate() {
            *target = if legal[i] { (logits[i] - max).exp() } else { 0.0 };
            total += *target;
        }
        policy.iter_mut().for_each(|target| *target /= total);
        batch.best.push(best as u32);
    }
    Ok(batch)
}

/// The distillation loop: epochs until iteration `last` or `stop`.
pub(crate) fn distill<G: NetGame>(config: &RunConfig, dir: &RunDir, stop: &AtomicBool, last: u64) -> Result<Finish> {
    let resumed = start_trainer(config, dir)?;
    if resumed.first_iteration > last {
        return Ok(Finish::Completed);
    }
    let data = load::<G>(
        &config.distill.data,
        config.distill.policy_target(),
        config.distill.holdout,
        ValueTarget { q_weight: config.distill.value_q_weight, ..config.train.value_target() },
    )?;
    tracing::info!(
        "positions in {}: {} of {} games to train on, {} of {} games held out",
        config.distill.data.display(),
        data.train.positions(),
        data.train.games(),
        data.held_out.positions(),
        data.held_out.games()
    );
    let teacher = teacher_net(config)?;
    let label = |batch: HostBatch| match &teacher {
        Some(teacher) => relabel(teacher, batch),
        None => Ok(batch),
    };
    let bar = progress(1, "labelling the held-out positions");
    let held_out_positions = data.held_out.positions();
    let held_out_batches: Vec<HostBatch> = (0..held_out_positions)
        .step_by(MEASURE_BATCH)
        .map(|start| label(data.held_out.encode_range(start..(start + MEASURE_BATCH).min(held_out_positions))))
        .collect::<Result<_>>()?;
    bar.finish_and_clear();
    // Handed on as they came: distillation changes none of it.
    let (mut trainer, mut network, carried) = (resumed.trainer, resumed.network, resumed.carried);
    let steps = data.train.positions().div_ceil(config.train.batch) as u64;
    for iteration in resumed.first_iteration..=last {
        let started = Instant::now();
        let batches = |rng: &mut _| data.train.sample(config.train.batch, rng).map(label).transpose();
        let Some(report) = train(config, &mut trainer, batches, steps, iteration, stop)? else {
            return Ok(Finish::Interrupted);
        };
        let seconds_train = started.elapsed().as_secs_f64();
        let measured = Instant::now();
        let bar = progress(1, &format!("epoch {iteration} held-out"));
        let held_out = mean_losses_of(
            &trainer.inference()?,
            &mut held_out_batches.iter().cloned(),
            &config.optimizer.loss_weights,
        )?;
        bar.finish_and_clear();
        let seconds_held_out = measured.elapsed().as_secs_f64();
        let saved = Instant::now();
        let previous = std::mem::replace(&mut network, publish_net(&trainer.inference()?, dir)?);
        let seconds_checkpoint = saved.elapsed().as_secs_f64();
        // Before the commit, as in the self-play loop: a run killed during
        // the evaluation redoes the epoch, and its metrics line is whole.
        let networks = Networks { trainer: &trainer, weights: None, current: &network, previous: &previous };
        let seconds = seconds_train + seconds_held_out + seconds_checkpoint;
        let eval = evaluate_if_due::<G>(config, dir, networks, iteration, seconds)?;
        let saved = Instant::now();
        let mut recorded = None;
        commit(config, dir, &trainer, iteration, &network, carried.clone(), || {
            let line = MetricsLine {
                iteration,
                network: network.clone(),
                work: Work::Distill(DistillWork { train_positions: data.train.positions() }),
                train: report,
                held_out: Some(held_out),
                eval,
                gate: None,
                curriculum: None,
                seconds_train,
                seconds_held_out: Some(seconds_held_out),
                seconds_checkpoint: seconds_checkpoint + saved.elapsed().as_secs_f64(),
                store: Some(dir.take_traffic()),
            };
            line.append_to(dir)?;
            recorded = Some(line);
            Ok(())
        })?;
        let metrics = recorded.expect("recorded before the commit");
        eprintln!(
            "epoch {iteration}: {} steps, loss {:.3} (policy {:.3}, wdl {:.3}); held out: top-1 agreement {:.1}%, \
             policy {:.3}, wdl {:.3} on {} positions; {:.0}s training; network {}{}",
            metrics.train.steps,
            metrics.train.loss,
            metrics.train.policy,
            metrics.train.wdl,
            100.0 * held_out.top1_agreement,
            held_out.policy,
            held_out.wdl,
            held_out.positions,
            metrics.seconds_train,
            metrics.network,
            metrics.eval.as_ref().map_or_else(String::new, |e| format!("; {}", evaluate::summary(e)))
        );
    }
    Ok(Finish::Completed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_is_fixed_by_the_name_and_near_the_share() {
        let names: Vec<String> = (0..10_000).map(|i| format!("{i:06}.teacher")).collect();
        let held = names.iter().filter(|n| held_out(n, 0.1)).count();
        assert!((800..1200).contains(&held), "{held} of 10000 held out at 10%");
        assert!(names.iter().all(|n| held_out(n, 0.1) == held_out(n, 0.1)));
        assert!(!names.iter().any(|n| held_out(n, 0.0)));
    }
}
