//! The loop: self-play -> replay buffer -> training -> network and
//! checkpoint -> metrics, iteration after iteration, resumable.
//!
//! The run directory (a local path or an object store, see [`RunDir`]):
//!
//! ```text
//! config.toml                       the config (resume checks the game and the architecture)
//! nets/<hash>.safetensors           every network that played, named by its content's hash
//! LATEST                            hash of the newest network
//! games/<hash>/local-i<iteration>-g<game>.capa    one game record per file
//! pgn/iter-<iteration>.pgn          the same games for people (workers: pgn/<worker>-<n>.pgn)
//! checkpoints/iter-<iteration>.safetensors        trainer state (weights, EMA, optimizer)
//! checkpoints/latest.json           the last completed iteration: the commit point
//! metrics.jsonl                     one line per completed iteration
//! LOCK                              held by the one trainer of a local run
//! ```
//!
//! An iteration counts once `checkpoints/latest.json` names it; everything
//! it wrote before is either read again (games) or overwritten (a
//! checkpoint file) when a killed run resumes. Random choices derive from
//! the seed and the iteration, so a resumed run continues as it would have.

use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use burn::prelude::*;
use capa_data::{GameRecord, to_pgn};
use capa_mcts::Rng;
use capa_net::{
    BackendTask, CapaAutodiffBackend, CapaBackend, GameKind, LossWeights, Net, NetEvaluator, NetGame, Targets, Trainer,
    burn, load_checkpoint, losses, save_checkpoint, save_net, with_backend,
};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::buffer::{HostBatch, ReplayBuffer, ValueTarget};
use crate::config::{RunConfig, RunMode};
use crate::curriculum::{Curriculum, CurriculumReport};
use crate::evaluate::{Evaluation, check_engine, evaluate};
use crate::rundir::{Entry, RunDir};
use crate::selfplay::{SelfPlaySettings, SelfPlayStats, mix, play};

/// The saved config.
const CONFIG: &str = "config.toml";
/// The commit point of an iteration.
const COMMIT: &str = "checkpoints/latest.json";
/// One JSON line per iteration.
pub(crate) const METRICS: &str = "metrics.jsonl";

/// How a run ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Finish {
    /// All configured iterations are done.
    Completed,
    /// Ctrl-C or SIGTERM: the iteration in flight was dropped.
    Interrupted,
}

/// The commit point of an iteration.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Latest {
    iteration: u64,
    checkpoint: String,
    network: String,
    /// The curriculum engine's `UCI_Elo` for the next iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    curriculum_elo: Option<i64>,
}

/// Runs `config` until its iterations are done or `stop` is raised.
///
/// # Errors
/// Anything that stops the run: a config that does not match the run
/// directory's, an unreadable checkpoint, a failing device or disk.
pub fn run(config: &RunConfig, stop: &AtomicBool) -> Result<Finish> {
    let data = &config.distill.data;
    if config.run.mode == RunMode::Distill && !data.is_dir() {
        bail!("distill.data: {} is not a folder (run `capa distill gen` to make one)", data.display());
    }
    match config.game.name {
        GameKind::Capablanca => check_engine::<Capablanca>(&config.eval)?,
        GameKind::Chess => check_engine::<Chess>(&config.eval)?,
    }
    let dir = RunDir::open(&config.run.dir)?;
    let _only_trainer = dir.lock()?;
    prepare(config, &dir)?;
    match config.game.name {
        GameKind::Capablanca => with_backend(config.device(), Loop::<Capablanca>::new(config, &dir, stop))?,
        GameKind::Chess => with_backend(config.device(), Loop::<Chess>::new(config, &dir, stop))?,
    }
}

/// Checks that the config fits the run already in `dir` (if any), clears
/// what killed writers left, and saves the config.
fn prepare(config: &RunConfig, dir: &RunDir) -> Result<()> {
    if let Some(saved) = dir.read(CONFIG)? {
        let saved = String::from_utf8(saved)
            .map_err(anyhow::Error::from)
            .and_then(|text| RunConfig::parse(&text, &[]))
            .with_context(|| format!("the run's {CONFIG} in {} is unreadable", dir.location()))?;
        if saved.game.name != config.game.name {
            bail!(
                "{} plays {}, this config {}: use another run.dir for another game",
                dir.location(),
                saved.game.name.name(),
                config.game.name.name()
            );
        }
        let (was, now) = (saved.net_config()?, config.net_config()?);
        if was != now {
            bail!(
                "the network in {} is {was:?}; this config asks for {now:?}. The architecture cannot change \
                 during a run: restore the [net] section or use another run.dir",
                dir.location()
            );
        }
    }
    let removed = dir.remove_stale_temporaries()?;
    if removed > 0 {
        eprintln!("removed {removed} temporary file(s) a killed run left");
    }
    dir.write(CONFIG, config.to_toml().as_bytes())
}

struct Loop<'a, G> {
    config: &'a RunConfig,
    dir: &'a RunDir,
    stop: &'a AtomicBool,
    _game: PhantomData<G>,
}

impl<'a, G> Loop<'a, G> {
    fn new(config: &'a RunConfig, dir: &'a RunDir, stop: &'a AtomicBool) -> Self {
        Loop { config, dir, stop, _game: PhantomData }
    }
}

impl<G: NetGame> BackendTask for Loop<'_, G> {
    type Output = Result<Finish>;

    fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Result<Finish> {
        let Loop { config, dir, stop, .. } = self;
        if config.run.mode == RunMode::Distill {
            return crate::distill::distill::<B, G>(config, dir, stop, &device);
        }
        let Resumed { mut trainer, first_iteration, mut network, curriculum_elo: resumed_elo } =
            start_trainer::<B>(config, dir, &device)?;
        let (mut buffer, mut seen) = rebuild_buffer::<G>(config, dir, first_iteration)?;
        let settings = SelfPlaySettings::new(&config.selfplay, &config.game);
        // Workers play their own games: the curriculum is the trainer's.
        let mut curriculum =
            if config.selfplay.local { Curriculum::start::<G>(&config.curriculum, resumed_elo)? } else { None };
        let last = if config.run.iterations == 0 { u64::MAX } else { config.run.iterations };
        for iteration in first_iteration..=last {
            let started = Instant::now();
            // Self-play with the newest network, or the workers' games.
            let played = if config.selfplay.local {
                let games = Games { dir, settings: &settings, buffer: &mut buffer, curriculum: curriculum.as_mut() };
                play_locally(config, games, &trainer, &device, iteration, &network, stop)?
            } else {
                collect_worker_games(config, dir, &mut buffer, &mut seen, stop)?
            };
            let Some(stats) = played.filter(|_| !stop.load(Ordering::Relaxed)) else {
                return Ok(Finish::Interrupted);
            };
            let new_positions = new_positions(config, &stats);
            let curriculum_report = curriculum.as_mut().map(Curriculum::end_iteration).transpose()?;
            let selfplay_seconds = started.elapsed().as_secs_f64();

            // Training.
            let trained = Instant::now();
            let Some(report) = train(config, &mut trainer, &buffer, config.train.steps, iteration, &device, stop)?
            else {
                return Ok(Finish::Interrupted);
            };
            let train_seconds = trained.elapsed().as_secs_f64();

            // The new network and the checkpoint; latest.json commits the iteration.
            let saved = Instant::now();
            let previous = std::mem::replace(&mut network, publish_net(&trainer.inference_net(), dir)?);
            let checkpoint_seconds = saved.elapsed().as_secs_f64();
            // Before the commit, so that a run killed here redoes the
            // iteration and its line in metrics.jsonl is never missing.
            let evaluation = if config.eval.every > 0 && iteration.is_multiple_of(config.eval.every) {
                Some(evaluate::<B, G>(config, dir, &trainer, &device, &previous, iteration)?)
            } else {
                None
            };
            let saved = Instant::now();
            commit(config, dir, &trainer, iteration, &network, curriculum.as_ref().map(Curriculum::elo))?;
            let checkpoint_seconds = checkpoint_seconds + saved.elapsed().as_secs_f64();

            let metrics = Metrics::new(
                iteration,
                &stats,
                &buffer,
                &report,
                config,
                [selfplay_seconds, train_seconds, checkpoint_seconds],
                &network,
                evaluation,
                curriculum_report,
            );
            dir.append_line(METRICS, &serde_json::to_string(&metrics)?)?;
            eprintln!("{}", metrics.summary());
            for warning in warnings(config, new_positions) {
                eprintln!("warning: {warning}");
            }
        }
        Ok(Finish::Completed)
    }
}

/// Where a run starts: its trainer, first iteration and newest network.
pub(crate) struct Resumed<B: CapaAutodiffBackend> {
    pub trainer: Trainer<B>,
    pub first_iteration: u64,
    pub network: String,
    pub curriculum_elo: Option<i64>,
}

/// The trainer of the last committed iteration, or a fresh one (published
/// as the run's first network).
pub(crate) fn start_trainer<B: CapaAutodiffBackend>(
    config: &RunConfig,
    dir: &RunDir,
    device: &B::Device,
) -> Result<Resumed<B>> {
    Ok(match read_latest(dir)? {
        Some(latest) => {
            let key = format!("checkpoints/{}", latest.checkpoint);
            let path = dir
                .local_copy(&key)?
                .with_context(|| format!("{COMMIT} in {} names {key}, which is missing", dir.location()))?;
            let trainer = load_checkpoint::<B>(&path, config.optimizer.clone(), device)
                .with_context(|| format!("cannot resume from {key} in {}", dir.location()))?;
            eprintln!("resuming {} after iteration {}", dir.location(), latest.iteration);
            truncate_metrics(dir, latest.iteration)?;
            Resumed {
                trainer,
                first_iteration: latest.iteration + 1,
                network: latest.network,
                curriculum_elo: latest.curriculum_elo,
            }
        }
        None => {
            B::seed(device, config.run.seed);
            let net = Net::<B>::new(&config.net_config()?, device);
            let trainer = Trainer::new(net, config.optimizer.clone())?;
            let network = publish_net(&trainer.inference_net(), dir)?;
            Resumed { trainer, first_iteration: 1, network, curriculum_elo: None }
        }
    })
}

/// Saves the iteration's checkpoint and commits the iteration (`latest.json`),
/// then prunes old checkpoints.
pub(crate) fn commit<B: CapaAutodiffBackend>(
    config: &RunConfig,
    dir: &RunDir,
    trainer: &Trainer<B>,
    iteration: u64,
    network: &str,
    curriculum_elo: Option<i64>,
) -> Result<()> {
    let checkpoint = format!("iter-{iteration:06}.safetensors");
    dir.save_with(&format!("checkpoints/{checkpoint}"), |path| Ok(save_checkpoint(trainer, path)?))?;
    let latest = Latest { iteration, checkpoint, network: network.to_string(), curriculum_elo };
    dir.write(COMMIT, serde_json::to_string_pretty(&latest)?.as_bytes())?;
    prune_checkpoints(dir, iteration, config.checkpoint.every, config.checkpoint.keep)
}

/// Where the trainer's own games go, and how they are played.
struct Games<'a, G: NetGame> {
    dir: &'a RunDir,
    settings: &'a SelfPlaySettings,
    buffer: &'a mut ReplayBuffer<G>,
    curriculum: Option<&'a mut Curriculum>,
}

/// One iteration's self-play with the trainer's network, each game written
/// and added to the buffer as it ends. `None` when stopped.
fn play_locally<B: CapaAutodiffBackend, G: NetGame>(
    config: &RunConfig,
    games: Games<'_, G>,
    trainer: &Trainer<B>,
    device: &B::Device,
    iteration: u64,
    network: &str,
    stop: &AtomicBool,
) -> Result<Option<SelfPlayStats>> {
    let Games { dir, settings, buffer, curriculum } = games;
    let evaluator = NetEvaluator::<G>::from_net(trainer.inference_net(), device.clone())?;
    let bar = progress(u64::from(config.selfplay.games), &format!("iteration {iteration} self-play"));
    let (started, mut plies) = (Instant::now(), 0usize);
    let mut pgn = String::new();
    let stats = play::<G, _>(
        &evaluator,
        settings,
        config.selfplay.games,
        mix(config.run.seed, iteration),
        network,
        stop,
        curriculum,
        |index, record| {
            dir.write(&format!("games/{network}/{}", game_file_name(iteration, index)), &record.to_bytes())?;
            plies += record.plies.len();
            bar.set_message(format!("{:.1} plies/s", plies as f64 / started.elapsed().as_secs_f64()));
            pgn.push_str(&to_pgn(&record, "capa self-play", &format!("{iteration}.{}", index + 1)));
            buffer.push(record);
            bar.inc(1);
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    dir.write(&format!("pgn/iter-{iteration:06}.pgn"), pgn.as_bytes())?;
    Ok((!stop.load(Ordering::Relaxed)).then_some(stats))
}

/// A game file's name: the iteration, then the game, so names sort in play order.
fn game_file_name(iteration: u64, index: u32) -> String {
    format!("local-i{iteration:06}-g{index:06}.capa")
}

/// The iteration a game file belongs to.
fn game_file_iteration(name: &str) -> Option<u64> {
    name.strip_prefix("local-i")?.split('-').next()?.parse().ok()
}

/// Every game file of the run, oldest first (by modification time, then key).
pub(crate) fn list_games(dir: &RunDir) -> Result<Vec<Entry>> {
    let mut files = dir.list("games")?;
    files.retain(|file| file.key.ends_with(".capa"));
    files.sort_by(|a, b| (a.modified, &a.key).cmp(&(b.modified, &b.key)));
    Ok(files)
}

/// The file name part of a key.
pub(crate) fn file_name(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// Reads a game file; a damaged one is reported and skipped.
fn read_game<G: NetGame>(dir: &RunDir, key: &str) -> Result<Option<GameRecord<G>>> {
    let Some(bytes) = dir.read(key)? else { return Ok(None) };
    match GameRecord::<G>::from_bytes(&bytes) {
        Ok(record) => Ok(Some(record)),
        Err(e) => {
            eprintln!("warning: skipping {key} in {}: {e}", dir.location());
            Ok(None)
        }
    }
}

/// The newest games among `files` (oldest first) that fill the replay
/// window, read and returned oldest first.
pub(crate) fn window_games<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    files: &[Entry],
) -> Result<Vec<GameRecord<G>>> {
    newest_games(dir, files, config.buffer.window, config.train.value_target())
}

/// The newest games among `files` (oldest first) with `positions` training
/// positions or just more, read and returned oldest first.
pub(crate) fn newest_games<G: NetGame>(
    dir: &RunDir,
    files: &[Entry],
    positions: usize,
    value: ValueTarget,
) -> Result<Vec<GameRecord<G>>> {
    let mut newest = Vec::new();
    let mut held = 0;
    for file in files.iter().rev() {
        if held >= positions {
            break;
        }
        if let Some(record) = read_game::<G>(dir, &file.key)? {
            held += record.plies.iter().filter(|p| value.trains_on(p)).count();
            newest.push(record);
        }
    }
    newest.reverse();
    Ok(newest)
}

/// The newest games of the run, enough to fill the window, into a buffer,
/// and the set of every game file seen. The trainer's own games of an
/// iteration that never completed are removed: it is played again.
fn rebuild_buffer<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    first_iteration: u64,
) -> Result<(ReplayBuffer<G>, HashSet<String>)> {
    let mut files = Vec::new();
    for file in list_games(dir)? {
        match game_file_iteration(file_name(&file.key)) {
            Some(iteration) if iteration >= first_iteration => dir.remove(&file.key)?,
            _ => files.push(file),
        }
    }
    let mut buffer = ReplayBuffer::new(config.buffer.window, config.buffer.sampling, config.train.value_target());
    for record in window_games::<G>(config, dir, &files)? {
        buffer.push(record);
    }
    if buffer.games() > 0 {
        eprintln!("replay buffer: {} positions from {} games in the run", buffer.positions(), buffer.games());
    }
    Ok((buffer, files.into_iter().map(|file| file.key).collect()))
}

/// Without local self-play: waits until workers have written
/// `selfplay.games` games the trainer has not seen, and adds every new one
/// to the buffer. `None` when stopped while waiting.
fn collect_worker_games<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    buffer: &mut ReplayBuffer<G>,
    seen: &mut HashSet<String>,
    stop: &AtomicBool,
) -> Result<Option<SelfPlayStats>> {
    let started = Instant::now();
    let mut announced = false;
    let fresh = loop {
        let fresh: Vec<Entry> = list_games(dir)?.into_iter().filter(|file| !seen.contains(&file.key)).collect();
        if fresh.len() >= config.selfplay.games as usize {
            break fresh;
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if !announced {
            eprintln!(
                "waiting for self-play workers: {} of {} new games in {}",
                fresh.len(),
                config.selfplay.games,
                dir.location()
            );
            announced = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    let mut stats = SelfPlayStats::default();
    for file in fresh {
        if let Some(record) = read_game::<G>(dir, &file.key)? {
            stats.count(&record);
            buffer.push(record);
        }
        seen.insert(file.key);
    }
    stats.seconds = started.elapsed().as_secs_f64();
    Ok(Some(stats))
}

/// Averages over an iteration's training steps.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct TrainReport {
    pub steps: u64,
    pub skipped: u64,
    pub loss: f64,
    pub policy: f64,
    pub wdl: f64,
    pub moves_left: f64,
    pub future: f64,
    pub grad_norm: f64,
    pub learning_rate: f64,
    pub data_wait_share: f64,
}

/// Trains `steps` steps on batches a loader thread draws and encodes while
/// the previous step runs. `None` when stopped.
pub(crate) fn train<B: CapaAutodiffBackend, G: NetGame>(
    config: &RunConfig,
    trainer: &mut Trainer<B>,
    buffer: &ReplayBuffer<G>,
    steps: u64,
    iteration: u64,
    device: &B::Device,
    stop: &AtomicBool,
) -> Result<Option<TrainReport>> {
    let mut report = TrainReport::default();
    if steps == 0 || buffer.positions() == 0 {
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
                let Some(batch) = buffer.sample(config.train.batch, &mut rng) else { return };
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
            report.grad_norm += f64::from(step.grad_norm);
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
    for value in [
        &mut report.loss,
        &mut report.policy,
        &mut report.wdl,
        &mut report.moves_left,
        &mut report.future,
        &mut report.grad_norm,
    ] {
        *value /= n;
    }
    report.data_wait_share = waited / started.elapsed().as_secs_f64().max(1e-9);
    Ok(Some(report))
}

/// A network's mean losses over positions of a buffer.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MeanLosses {
    /// Policy cross-entropy.
    pub policy: f64,
    /// WDL cross-entropy.
    pub wdl: f64,
    /// The weighted total.
    pub total: f64,
    /// Share of the positions where the network's most likely legal move is
    /// one the target ranks first.
    pub top1_agreement: f64,
}

/// `net`'s mean losses on the training positions `range` of `buffer`, in
/// batches of 256.
pub(crate) fn mean_losses<B: CapaBackend, G: NetGame>(
    net: &Net<B>,
    buffer: &ReplayBuffer<G>,
    range: std::ops::Range<usize>,
    weights: &LossWeights,
    device: &B::Device,
) -> MeanLosses {
    const BATCH: usize = 256;
    let mut sums = MeanLosses::default();
    for start in range.clone().step_by(BATCH) {
        let chunk = start..(start + BATCH).min(range.end);
        let size = chunk.len() as f64;
        let (planes, targets) = to_tensors::<B, G>(buffer.encode_range(chunk), device);
        let output = net.forward(planes, true);
        // The network's choice: the largest logit among legal moves.
        let masked = output.policy.clone().mask_fill(targets.legal.clone().bool_not(), f32::NEG_INFINITY);
        let chosen = targets.policy.clone().gather(1, masked.argmax(1));
        let best = targets.policy.clone().max_dim(1);
        let agree: Vec<f32> = chosen.greater_equal(best).float().into_data().to_vec().expect("f32 data");
        sums.top1_agreement += agree.iter().map(|&a| f64::from(a)).sum::<f64>();
        let l = losses(output, targets, weights);
        let scalar = |t: Tensor<B, 1>| f64::from(t.into_scalar().elem::<f32>());
        sums.policy += size * scalar(l.policy);
        sums.wdl += size * scalar(l.wdl);
        sums.total += size * scalar(l.total);
    }
    let n = range.len().max(1) as f64;
    MeanLosses {
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

/// Saves the network under its hash and points `LATEST` at it.
pub(crate) fn publish_net<B: capa_net::CapaBackend>(net: &Net<B>, dir: &RunDir) -> Result<String> {
    let staged = std::env::temp_dir().join(format!("capa-net-{}.safetensors", std::process::id()));
    save_net(net, &staged)?;
    let bytes = std::fs::read(&staged).with_context(|| format!("cannot read {}", staged.display()));
    let _ = std::fs::remove_file(&staged);
    let bytes = bytes?;
    // The safetensors header's metadata comes in no fixed order: name the
    // network by its architecture and its weights (what follows the header).
    let header = bytes.get(..8).map_or(0, |len| u64::from_le_bytes(len.try_into().expect("8 bytes")));
    let weights = bytes.get(8 + header as usize..).unwrap_or_default();
    let hash = format!("{:016x}", fnv1a(format!("{:?}", net.config()).as_bytes().iter().chain(weights)));
    dir.write(&format!("nets/{hash}.safetensors"), &bytes)?;
    dir.publish_latest(&hash)?;
    Ok(hash)
}

/// FNV-1a, 64 bits: names a network by its bytes.
fn fnv1a<'a>(bytes: impl IntoIterator<Item = &'a u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn read_latest(dir: &RunDir) -> Result<Option<Latest>> {
    let Some(bytes) = dir.read(COMMIT)? else { return Ok(None) };
    let latest =
        serde_json::from_slice(&bytes).with_context(|| format!("{COMMIT} in {} is damaged", dir.location()))?;
    Ok(Some(latest))
}

/// Keeps the latest checkpoint and the newest `keep` whose iteration is a multiple of `every`.
fn prune_checkpoints(dir: &RunDir, latest: u64, every: u64, keep: usize) -> Result<()> {
    let mut numbered: Vec<(u64, String)> = Vec::new();
    for entry in dir.list("checkpoints")? {
        let iteration = file_name(&entry.key).strip_prefix("iter-").and_then(|n| n.strip_suffix(".safetensors"));
        if let Some(iteration) = iteration.and_then(|n| n.parse::<u64>().ok()) {
            numbered.push((iteration, entry.key));
        }
    }
    numbered.sort();
    let kept: Vec<u64> = numbered.iter().map(|(i, _)| *i).filter(|i| i % every == 0).rev().take(keep).collect();
    for (iteration, key) in numbered {
        if iteration != latest && !kept.contains(&iteration) {
            dir.remove(&key)?;
        }
    }
    Ok(())
}

/// One line of metrics.jsonl.
#[derive(Clone, Debug, Serialize)]
struct Metrics {
    iteration: u64,
    network: String,
    games: u64,
    plies: u64,
    new_positions: usize,
    buffer_positions: usize,
    white_draw_black: [u64; 3],
    mean_game_length: f64,
    resigned: u64,
    resign_checked: u64,
    resign_wrong: u64,
    selfplay_plies_per_second: f64,
    selfplay_playouts_per_second: f64,
    passes_per_position: f64,
    train: TrainReport,
    seconds_selfplay: f64,
    seconds_train: f64,
    seconds_checkpoint: f64,
    inference_share_of_selfplay: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    eval: Option<Evaluation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    curriculum: Option<CurriculumReport>,
}

impl Metrics {
    #[allow(clippy::too_many_arguments)]
    fn new<G: NetGame>(
        iteration: u64,
        stats: &SelfPlayStats,
        buffer: &ReplayBuffer<G>,
        train: &TrainReport,
        config: &RunConfig,
        [selfplay, training, checkpoint]: [f64; 3],
        network: &str,
        eval: Option<Evaluation>,
        curriculum: Option<CurriculumReport>,
    ) -> Metrics {
        let per_second = |n: u64| n as f64 / stats.seconds.max(1e-9);
        let new_positions = new_positions(config, stats);
        Metrics {
            iteration,
            network: network.to_string(),
            games: stats.games,
            plies: stats.plies,
            new_positions,
            buffer_positions: buffer.positions(),
            white_draw_black: stats.results,
            mean_game_length: stats.plies as f64 / stats.games.max(1) as f64,
            resigned: stats.resigned,
            resign_checked: stats.resign_checked,
            resign_wrong: stats.resign_wrong,
            selfplay_plies_per_second: per_second(stats.plies),
            selfplay_playouts_per_second: per_second(stats.playouts),
            passes_per_position: passes_per_position(config, new_positions),
            train: train.clone(),
            seconds_selfplay: selfplay,
            seconds_train: training,
            seconds_checkpoint: checkpoint,
            inference_share_of_selfplay: stats.inference_seconds / stats.seconds.max(1e-9),
            eval,
            curriculum,
        }
    }

    fn summary(&self) -> String {
        let curriculum = self.curriculum.as_ref().map_or_else(String::new, |c| {
            format!("; vs engine at UCI_Elo {}: +{} ={} -{}, next {}", c.elo, c.wins, c.draws, c.losses, c.next_elo)
        });
        let eval = self.eval.as_ref().map_or_else(String::new, |e| format!("; {}", e.summary()));
        format!(
            "iteration {}: {} games ({} plies, W/D/B {:?}), {:.1} plies/s; {} steps, loss {:.3} (policy {:.3}, wdl {:.3}); \
             {:.0}s self-play, {:.0}s training; data wait {:.0}%; network {}{eval}{curriculum}",
            self.iteration,
            self.games,
            self.plies,
            self.white_draw_black,
            self.selfplay_plies_per_second,
            self.train.steps,
            self.train.loss,
            self.train.policy,
            self.train.wdl,
            self.seconds_selfplay,
            self.seconds_train,
            100.0 * self.train.data_wait_share,
            self.network
        )
    }
}

/// Training samples per new position: steps x batch / new positions.
/// The iteration's new training positions: its fully searched plies, and
/// with `train.fast_search_values` the fast ones too.
fn new_positions(config: &RunConfig, stats: &SelfPlayStats) -> usize {
    (if config.train.fast_search_values { stats.plies } else { stats.full_plies }) as usize
}

fn passes_per_position(config: &RunConfig, new_positions: usize) -> f64 {
    (config.train.steps as f64 * config.train.batch as f64) / new_positions.max(1) as f64
}

/// The warnings the seed's users learned the hard way.
fn warnings(config: &RunConfig, new_positions: usize) -> Vec<String> {
    let mut warnings = Vec::new();
    let s = &config.selfplay;
    let ratio = s.simulations as f64 / f64::from(s.parallel_sims);
    if ratio < 12.0 {
        warnings.push(format!(
            "selfplay.simulations / selfplay.parallel_sims = {ratio:.1} is below 12: the visit distributions \
             (the policy targets) drift towards uniform; lower parallel_sims or raise simulations"
        ));
    }
    let passes = passes_per_position(config, new_positions);
    if !(2.0..=7.0).contains(&passes) {
        warnings.push(format!(
            "{passes:.1} passes per position (train.steps x train.batch / new positions) is outside 2 to 7: \
             {}",
            if passes > 7.0 {
                "the network memorises the buffer; play more games or train fewer steps"
            } else {
                "the new games are barely learned from; train more steps"
            }
        ));
    }
    warnings
}

/// Keeps the metric lines of completed iterations (a killed run may have
/// left a partial line or one of an iteration that never committed).
fn truncate_metrics(dir: &RunDir, completed: u64) -> Result<()> {
    let Some(bytes) = dir.read(METRICS)? else { return Ok(()) };
    let text = String::from_utf8_lossy(&bytes);
    let kept: String = text
        .lines()
        .filter(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("iteration")?.as_u64())
                .is_some_and(|i| i <= completed)
        })
        .map(|line| format!("{line}\n"))
        .collect();
    if kept != text {
        dir.write(METRICS, kept.as_bytes())?;
    }
    Ok(())
}

pub(crate) fn progress(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {per_sec} {msg} (eta {eta})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar
}
