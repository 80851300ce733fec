//! The loop: self-play -> replay buffer -> training -> network and
//! checkpoint -> metrics, iteration after iteration, resumable.
//!
//! The run directory:
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
//! ```
//!
//! An iteration counts once `checkpoints/latest.json` names it; everything
//! it wrote before is either read again (games) or overwritten (a
//! checkpoint file) when a killed run resumes. Random choices derive from
//! the seed and the iteration, so a resumed run continues as it would have.

use std::collections::HashSet;
use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use burn::prelude::*;
use capa_data::{GameRecord, remove_stale_temporaries, to_pgn, write_atomically};
use capa_mcts::Rng;
use capa_net::{
    BackendTask, CapaAutodiffBackend, GameKind, Net, NetEvaluator, NetGame, Targets, Trainer, burn, load_checkpoint,
    save_checkpoint, save_net, with_backend,
};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::buffer::{HostBatch, ReplayBuffer};
use crate::config::RunConfig;
use crate::selfplay::{SelfPlaySettings, SelfPlayStats, mix, play};

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
}

/// Runs `config` until its iterations are done or `stop` is raised.
///
/// # Errors
/// Anything that stops the run: a config that does not match the run
/// directory's, an unreadable checkpoint, a failing device or disk.
pub fn run(config: &RunConfig, stop: &AtomicBool) -> Result<Finish> {
    let dir = &config.run.dir;
    prepare(config, dir)?;
    match config.game.name {
        GameKind::Capablanca => with_backend(config.device(), Loop::<Capablanca>::new(config, stop))?,
        GameKind::Chess => with_backend(config.device(), Loop::<Chess>::new(config, stop))?,
    }
}

/// Creates the run directory, or checks that the config fits the run in it,
/// and clears what killed writers left.
fn prepare(config: &RunConfig, dir: &Path) -> Result<()> {
    for sub in ["nets", "games", "checkpoints", "pgn"] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("cannot create {}", dir.join(sub).display()))?;
    }
    let saved_path = dir.join("config.toml");
    if saved_path.exists() {
        let saved = RunConfig::load(&saved_path, &[])
            .with_context(|| format!("the run directory's config {} is unreadable", saved_path.display()))?;
        if saved.game.name != config.game.name {
            bail!(
                "{} plays {}, this config {}: use another run.dir for another game",
                dir.display(),
                saved.game.name.name(),
                config.game.name.name()
            );
        }
        let (was, now) = (saved.net_config()?, config.net_config()?);
        if was != now {
            bail!(
                "the network in {} is {was:?}; this config asks for {now:?}. The architecture cannot change \
                 during a run: restore the [net] section or use another run.dir",
                dir.display()
            );
        }
    }
    let removed = remove_stale_temporaries(dir).with_context(|| format!("cannot clean {}", dir.display()))?;
    if removed > 0 {
        eprintln!("removed {removed} temporary file(s) a killed run left");
    }
    write_atomically(&saved_path, config.to_toml().as_bytes())
        .with_context(|| format!("cannot write {}", saved_path.display()))
}

struct Loop<'a, G> {
    config: &'a RunConfig,
    stop: &'a AtomicBool,
    _game: PhantomData<G>,
}

impl<'a, G> Loop<'a, G> {
    fn new(config: &'a RunConfig, stop: &'a AtomicBool) -> Self {
        Loop { config, stop, _game: PhantomData }
    }
}

impl<G: NetGame> BackendTask for Loop<'_, G> {
    type Output = Result<Finish>;

    fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Result<Finish> {
        let Loop { config, stop, .. } = self;
        let dir = &config.run.dir;
        let latest_path = dir.join("checkpoints/latest.json");
        let (mut trainer, first_iteration, mut network) = match read_latest(&latest_path)? {
            Some(latest) => {
                let path = dir.join("checkpoints").join(&latest.checkpoint);
                let trainer = load_checkpoint::<B>(&path, config.optimizer.clone(), &device)
                    .with_context(|| format!("cannot resume from {}", path.display()))?;
                eprintln!("resuming {} after iteration {}", dir.display(), latest.iteration);
                truncate_metrics(&dir.join("metrics.jsonl"), latest.iteration)?;
                (trainer, latest.iteration + 1, latest.network)
            }
            None => {
                B::seed(&device, config.run.seed);
                let net = Net::<B>::new(&config.net_config()?, &device);
                let trainer = Trainer::new(net, config.optimizer.clone())?;
                let network = publish_net(&trainer.inference_net(), dir)?;
                (trainer, 1, network)
            }
        };
        let (mut buffer, mut seen) = rebuild_buffer::<G>(config, first_iteration)?;
        let settings = SelfPlaySettings::new(&config.selfplay, config.game.ply_cap);
        let last = if config.run.iterations == 0 { u64::MAX } else { config.run.iterations };
        for iteration in first_iteration..=last {
            let started = Instant::now();
            // Self-play with the newest network, or the workers' games.
            let played = if config.selfplay.local {
                play_locally(config, &settings, &trainer, &device, &mut buffer, iteration, &network, stop)?
            } else {
                collect_worker_games(config, &mut buffer, &mut seen, stop)?
            };
            let Some((stats, new_positions)) = played.filter(|_| !stop.load(Ordering::Relaxed)) else {
                return Ok(Finish::Interrupted);
            };
            let selfplay_seconds = started.elapsed().as_secs_f64();

            // Training.
            let trained = Instant::now();
            let Some(report) = train(config, &mut trainer, &buffer, iteration, &device, stop)? else {
                return Ok(Finish::Interrupted);
            };
            let train_seconds = trained.elapsed().as_secs_f64();

            // The new network and the checkpoint; latest.json commits the iteration.
            let saved = Instant::now();
            network = publish_net(&trainer.inference_net(), dir)?;
            let checkpoint = format!("iter-{iteration:06}.safetensors");
            save_checkpoint(&trainer, &dir.join("checkpoints").join(&checkpoint))?;
            let latest = Latest { iteration, checkpoint, network: network.clone() };
            write_atomically(&latest_path, serde_json::to_string_pretty(&latest)?.as_bytes())
                .with_context(|| format!("cannot write {}", latest_path.display()))?;
            prune_checkpoints(dir, iteration, config.checkpoint.every, config.checkpoint.keep)?;
            let checkpoint_seconds = saved.elapsed().as_secs_f64();

            let metrics = Metrics::new(
                iteration,
                &stats,
                new_positions,
                &buffer,
                &report,
                config,
                [selfplay_seconds, train_seconds, checkpoint_seconds],
                &network,
            );
            append_metrics(&dir.join("metrics.jsonl"), &metrics)?;
            eprintln!("{}", metrics.summary());
            for warning in warnings(config, new_positions) {
                eprintln!("warning: {warning}");
            }
        }
        Ok(Finish::Completed)
    }
}

/// One iteration's self-play with the trainer's network, each game written
/// and added to the buffer as it ends. `None` when stopped.
#[allow(clippy::too_many_arguments)]
fn play_locally<B: CapaAutodiffBackend, G: NetGame>(
    config: &RunConfig,
    settings: &SelfPlaySettings,
    trainer: &Trainer<B>,
    device: &B::Device,
    buffer: &mut ReplayBuffer<G>,
    iteration: u64,
    network: &str,
    stop: &AtomicBool,
) -> Result<Option<(SelfPlayStats, usize)>> {
    let games_dir = config.run.dir.join("games").join(network);
    std::fs::create_dir_all(&games_dir).with_context(|| format!("cannot create {}", games_dir.display()))?;
    let evaluator = NetEvaluator::<G>::from_net(trainer.inference_net(), device.clone())?;
    let bar = progress(u64::from(config.selfplay.games), &format!("iteration {iteration} self-play"));
    let mut new_positions = 0usize;
    let mut pgn = String::new();
    let stats = play::<G, _>(
        &evaluator,
        settings,
        config.selfplay.games,
        mix(config.run.seed, iteration),
        network,
        stop,
        |index, record| {
            let path = games_dir.join(game_file_name(iteration, index));
            record.write(&path)?;
            new_positions += record.plies.iter().filter(|p| p.full_search).count();
            pgn.push_str(&to_pgn(&record, "capa self-play", &format!("{iteration}.{}", index + 1)));
            buffer.push(record);
            bar.inc(1);
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    let pgn_path = config.run.dir.join("pgn").join(format!("iter-{iteration:06}.pgn"));
    write_atomically(&pgn_path, pgn.as_bytes()).with_context(|| format!("cannot write {}", pgn_path.display()))?;
    Ok((!stop.load(Ordering::Relaxed)).then_some((stats, new_positions)))
}

/// A game file's name: the iteration, then the game, so names sort in play order.
fn game_file_name(iteration: u64, index: u32) -> String {
    format!("local-i{iteration:06}-g{index:06}.capa")
}

/// The iteration a game file belongs to.
fn game_file_iteration(name: &str) -> Option<u64> {
    name.strip_prefix("local-i")?.split('-').next()?.parse().ok()
}

/// A game file in the run directory.
struct GameFile {
    path: PathBuf,
    name: String,
    modified: std::time::SystemTime,
}

/// Every game file of the run, oldest first (by modification time, then name).
fn list_games(dir: &Path) -> Result<Vec<GameFile>> {
    let games = dir.join("games");
    let mut files = Vec::new();
    for net in std::fs::read_dir(&games).with_context(|| format!("cannot list {}", games.display()))? {
        let net = net?.path();
        if !net.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&net).with_context(|| format!("cannot list {}", net.display()))? {
            let file = file?;
            let name = file.file_name().to_string_lossy().into_owned();
            if name.ends_with(".capa") && !name.starts_with('.') {
                let modified = file.metadata()?.modified()?;
                files.push(GameFile { path: file.path(), name, modified });
            }
        }
    }
    files.sort_by(|a, b| (a.modified, &a.name).cmp(&(b.modified, &b.name)));
    Ok(files)
}

/// The newest games of the run, enough to fill the window, into a buffer,
/// and the set of every game file seen. The trainer's own games of an
/// iteration that never completed are removed: it is played again.
fn rebuild_buffer<G: NetGame>(config: &RunConfig, first_iteration: u64) -> Result<(ReplayBuffer<G>, HashSet<PathBuf>)> {
    let mut files = list_games(&config.run.dir)?;
    files.retain(|file| match game_file_iteration(&file.name) {
        Some(iteration) if iteration >= first_iteration => {
            let _ = std::fs::remove_file(&file.path);
            false
        }
        _ => true,
    });
    let mut newest = Vec::new();
    let mut positions = 0;
    for file in files.iter().rev() {
        if positions >= config.buffer.window {
            break;
        }
        match GameRecord::<G>::read(&file.path) {
            Ok(record) => {
                positions += record.plies.iter().filter(|p| p.full_search).count();
                newest.push(record);
            }
            Err(e) => eprintln!("warning: skipping a game: {e}"),
        }
    }
    let mut buffer = ReplayBuffer::new(config.buffer.window, config.buffer.sampling, config.train.value_q_weight);
    for record in newest.into_iter().rev() {
        buffer.push(record);
    }
    if buffer.games() > 0 {
        eprintln!("replay buffer: {} positions from {} games on disk", buffer.positions(), buffer.games());
    }
    Ok((buffer, files.into_iter().map(|file| file.path).collect()))
}

/// Without local self-play: waits until workers have written
/// `selfplay.games` games the trainer has not seen, and adds every new one
/// to the buffer. `None` when stopped while waiting.
fn collect_worker_games<G: NetGame>(
    config: &RunConfig,
    buffer: &mut ReplayBuffer<G>,
    seen: &mut HashSet<PathBuf>,
    stop: &AtomicBool,
) -> Result<Option<(SelfPlayStats, usize)>> {
    let started = Instant::now();
    let mut announced = false;
    let fresh = loop {
        let fresh: Vec<GameFile> =
            list_games(&config.run.dir)?.into_iter().filter(|file| !seen.contains(&file.path)).collect();
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
                config.run.dir.join("games").display()
            );
            announced = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    let mut stats = SelfPlayStats::default();
    let mut new_positions = 0;
    for file in fresh {
        seen.insert(file.path.clone());
        match GameRecord::<G>::read(&file.path) {
            Ok(record) => {
                stats.count(&record);
                new_positions += record.plies.iter().filter(|p| p.full_search).count();
                buffer.push(record);
            }
            Err(e) => eprintln!("warning: skipping a game: {e}"),
        }
    }
    stats.seconds = started.elapsed().as_secs_f64();
    Ok(Some((stats, new_positions)))
}

/// Averages over an iteration's training steps.
#[derive(Clone, Debug, Default, Serialize)]
struct TrainReport {
    steps: u64,
    skipped: u64,
    loss: f64,
    policy: f64,
    wdl: f64,
    moves_left: f64,
    future: f64,
    grad_norm: f64,
    learning_rate: f64,
    data_wait_share: f64,
}

/// Trains `config.train.steps` steps on batches a loader thread draws and
/// encodes while the previous step runs. `None` when stopped.
fn train<B: CapaAutodiffBackend, G: NetGame>(
    config: &RunConfig,
    trainer: &mut Trainer<B>,
    buffer: &ReplayBuffer<G>,
    iteration: u64,
    device: &B::Device,
    stop: &AtomicBool,
) -> Result<Option<TrainReport>> {
    let steps = config.train.steps;
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

fn to_tensors<B: CapaAutodiffBackend, G: NetGame>(batch: HostBatch, device: &B::Device) -> (Tensor<B, 4>, Targets<B>) {
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

/// Saves the network under its content's hash and points `LATEST` at it.
fn publish_net<B: capa_net::CapaBackend>(net: &Net<B>, dir: &Path) -> Result<String> {
    let pending = dir.join("nets/pending.safetensors");
    save_net(net, &pending)?;
    let bytes = std::fs::read(&pending).with_context(|| format!("cannot read {}", pending.display()))?;
    // The safetensors header's metadata comes in no fixed order: name the
    // network by its architecture and its weights (what follows the header).
    let header = bytes.get(..8).map_or(0, |len| u64::from_le_bytes(len.try_into().expect("8 bytes")));
    let weights = bytes.get(8 + header as usize..).unwrap_or_default();
    let hash = format!("{:016x}", fnv1a(format!("{:?}", net.config()).as_bytes().iter().chain(weights)));
    let path = dir.join("nets").join(format!("{hash}.safetensors"));
    std::fs::rename(&pending, &path).with_context(|| format!("cannot rename to {}", path.display()))?;
    write_atomically(&dir.join("LATEST"), hash.as_bytes()).context("cannot write LATEST")?;
    Ok(hash)
}

/// FNV-1a, 64 bits: names a network by its bytes.
fn fnv1a<'a>(bytes: impl IntoIterator<Item = &'a u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn read_latest(path: &Path) -> Result<Option<Latest>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Keeps the latest checkpoint and the newest `keep` whose iteration is a multiple of `every`.
fn prune_checkpoints(dir: &Path, latest: u64, every: u64, keep: usize) -> Result<()> {
    let checkpoints = dir.join("checkpoints");
    let mut numbered: Vec<(u64, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(&checkpoints).with_context(|| format!("cannot list {}", checkpoints.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let iteration = name.strip_prefix("iter-").and_then(|n| n.strip_suffix(".safetensors"));
        if let Some(iteration) = iteration.and_then(|n| n.parse::<u64>().ok()) {
            numbered.push((iteration, path));
        }
    }
    numbered.sort();
    let kept: Vec<u64> = numbered.iter().map(|(i, _)| *i).filter(|i| i % every == 0).rev().take(keep).collect();
    for (iteration, path) in numbered {
        if iteration != latest && !kept.contains(&iteration) {
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
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
}

impl Metrics {
    #[allow(clippy::too_many_arguments)]
    fn new<G: NetGame>(
        iteration: u64,
        stats: &SelfPlayStats,
        new_positions: usize,
        buffer: &ReplayBuffer<G>,
        train: &TrainReport,
        config: &RunConfig,
        [selfplay, training, checkpoint]: [f64; 3],
        network: &str,
    ) -> Metrics {
        let per_second = |n: u64| n as f64 / stats.seconds.max(1e-9);
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
        }
    }

    fn summary(&self) -> String {
        format!(
            "iteration {}: {} games ({} plies, W/D/B {:?}), {:.1} plies/s; {} steps, loss {:.3} (policy {:.3}, wdl {:.3}); \
             {:.0}s self-play, {:.0}s training; data wait {:.0}%; network {}",
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

fn append_metrics(path: &Path, metrics: &Metrics) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    writeln!(file, "{}", serde_json::to_string(metrics)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.sync_all().with_context(|| format!("cannot sync {}", path.display()))
}

/// Keeps the metric lines of completed iterations (a killed run may have
/// left a partial line or one of an iteration that never committed).
fn truncate_metrics(path: &Path, completed: u64) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(()) };
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
        write_atomically(path, kept.as_bytes()).with_context(|| format!("cannot rewrite {}", path.display()))?;
    }
    Ok(())
}

fn progress(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {per_sec} {msg} (eta {eta})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar
}
