//! The self-play loop: self-play -> replay buffer -> training -> network
//! and checkpoint -> metrics, iteration after iteration, resumable.
//!
//! An iteration counts once its commit point names it ([`crate::commit`]);
//! everything it wrote before is either read again (games) or overwritten
//! (a checkpoint file) when a killed run resumes. Random choices derive
//! from the seed and the iteration, so a resumed run continues as it would
//! have.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use capa_data::to_pgn;
use capa_mcts::CachedEvaluator;
use capa_net::{Inference, NetEvaluator, NetGame};
use capa_rules::mix;
use capa_rundir::{Carried, GamesLayout, RunDir, Work, keys};

use crate::buffer::ReplayBuffer;
use crate::commit::{Resumed, commit, save_net, start_trainer};
use crate::config::RunConfig;
use crate::curriculum::Curriculum;
use crate::distill::read_teacher;
use crate::evaluate::{Networks, evaluate_if_due};
use crate::finish::Finish;
use crate::games::{Intake, READ_CHUNK, legacy_intake, read_games, trained_games};
use crate::gate::{self, Player};
use crate::metrics::{new_positions, selfplay_line, summary, warnings};
use crate::progress::progress;
use crate::selfplay::{SelfPlaySettings, SelfPlayStats, play};
use crate::steps::train;

/// Runs the self-play loop until `run.iterations` or `stop`.
///
/// # Errors
/// Anything that stops the run: an unreadable checkpoint, a failing
/// device, engine or disk.
pub(crate) fn iterate<G: NetGame>(config: &RunConfig, dir: &RunDir, stop: &AtomicBool) -> Result<Finish> {
    let starting = Instant::now();
    let Resumed { mut trainer, first_iteration, mut network, carried } = start_trainer(config, dir)?;
    // Without a gate, self-play plays the newest network.
    let mut player = Player::new(carried.player.clone().filter(|_| config.gate.enabled()).unwrap_or(network.clone()));
    let last = config.last_iteration();
    if first_iteration > last {
        return Ok(Finish::Completed);
    }
    let (mut buffer, mut intake) = rebuild_buffer::<G>(config, dir, first_iteration, &carried)?;
    let seconds = starting.elapsed().as_secs_f64();
    tracing::info!("ready to play after {seconds:.2} s of reading the run: {}", dir.traffic());
    // A run from before the count: at least the positions its window holds.
    let mut positions_made = carried.positions_made.unwrap_or(buffer.positions() as u64);
    let settings = SelfPlaySettings::new(&config.selfplay, &config.game)?;
    // Workers play their own games: the curriculum is the trainer's.
    let mut curriculum =
        if config.selfplay.local { Curriculum::start::<G>(&config.curriculum, carried.curriculum_elo)? } else { None };
    for iteration in first_iteration..=last {
        let started = Instant::now();
        buffer.drop_teacher(config.distill.seed_leave);
        buffer.set_window(config.buffer.window_at(positions_made));
        // Self-play with the player, or the workers' games.
        player.load(config, dir, &network)?;
        let played = if config.selfplay.local {
            let games = Games { dir, settings: &settings, buffer: &mut buffer, curriculum: curriculum.as_mut() };
            let trainers;
            let weights = match player.weights() {
                Some(weights) => weights,
                None => {
                    trainers = trainer.inference()?;
                    &trainers
                }
            };
            play_locally(config, games, weights, iteration, player.name(), stop)?
        } else {
            collect_worker_games(config, dir, &mut buffer, &mut intake, stop)?
        };
        let Some((stats, trained_on)) = played.filter(|_| !stop.load(Ordering::Relaxed)) else {
            return Ok(Finish::Interrupted);
        };
        let new_positions = new_positions(config, &stats);
        positions_made += new_positions as u64;
        let curriculum_report = curriculum.as_mut().map(Curriculum::end_iteration::<G>).transpose()?;
        let selfplay_seconds = started.elapsed().as_secs_f64();

        // Training.
        let trained = Instant::now();
        let steps = match (buffer.positions(), config.train.passes) {
            (0, _) => 0,
            (held, passes) if passes > 0.0 => steps_for_passes(passes, new_positions, held, buffer.window(), config),
            _ => config.train.steps,
        };
        let batches = |rng: &mut _| Ok(buffer.sample(config.train.batch, rng));
        let Some(report) = train(config, &mut trainer, batches, steps, iteration, stop)? else {
            return Ok(Finish::Interrupted);
        };
        let train_seconds = trained.elapsed().as_secs_f64();

        // The new network, the gate's match, LATEST (the player) and the
        // checkpoint; latest.json commits the iteration.
        let saved = Instant::now();
        let newest = trainer.inference()?;
        network = save_net(&newest, dir)?;
        let checkpoint_seconds = saved.elapsed().as_secs_f64();
        let previous = player.name().to_string();
        let gate = if !config.gate.enabled() {
            player.promote(&network);
            None
        } else if gate::due(config, iteration) {
            let challenge = gate::challenge::<G>(config, dir, &newest, &network, &previous, iteration)?;
            if challenge.promoted {
                player.promote(&network);
            }
            Some(challenge)
        } else {
            None
        };
        // Every iteration: a run killed after this, before its commit,
        // may have named a player the iteration played again does not keep.
        dir.publish_latest(player.name())?;
        // Before the commit, so that a run killed here redoes the
        // iteration and its line in metrics.jsonl is never missing.
        player.load(config, dir, &network)?;
        let networks =
            Networks { trainer: &trainer, weights: player.weights(), current: player.name(), previous: &previous };
        let evaluation = evaluate_if_due::<G>(config, dir, networks, iteration, started.elapsed().as_secs_f64())?;
        let saved = Instant::now();
        let carried = Carried {
            curriculum_elo: curriculum.as_ref().map(Curriculum::elo),
            positions_made: Some(positions_made),
            workers_taken: intake.taken().clone(),
            player: config.gate.enabled().then(|| player.name().to_string()),
            ..Carried::default()
        };
        let mut recorded = None;
        commit(config, dir, &trainer, iteration, &network, carried, || {
            dir.write(&keys::ledger(iteration), trained_on.join("\n").as_bytes())?;
            let checkpoint_seconds = checkpoint_seconds + saved.elapsed().as_secs_f64();
            let mut line = selfplay_line(
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
            line.gate = gate;
            line.store = Some(dir.take_traffic());
            line.append_to(dir)?;
            recorded = Some(line);
            Ok(())
        })?;
        let line = recorded.expect("recorded before the commit");
        if let Work::SelfPlay(work) = &line.work {
            eprintln!("{}", summary(&line, work));
            for warning in warnings(config, &line, work) {
                tracing::warn!("{warning}");
            }
        }
    }
    Ok(Finish::Completed)
}

/// Steps that draw each position about `passes` times in its life in the
/// window: `passes × new / batch` once the window is full. While it fills
/// nothing leaves, so the rate is scaled by how full it is (`held /
/// window`); otherwise the first positions would be drawn many times the
/// plan (seed 004's fresh run that overfitted), and at most twice it now.
fn steps_for_passes(passes: f64, new: usize, held: usize, window: usize, config: &RunConfig) -> u64 {
    let full = (held as f64 / window.max(1) as f64).min(1.0);
    (passes * new as f64 * full / config.train.batch as f64).ceil() as u64
}

/// `capa bench selfplay`: `games` games of self-play as `config` plays
/// them (its `[selfplay]` and `[game]`), with the network in the file
/// `net`, nothing written; the throughput figures of its metrics line.
///
/// # Errors
/// A config or network that cannot be used, a failing search.
pub fn bench_selfplay(config: &RunConfig, net: &std::path::Path, games: u32) -> Result<capa_rundir::SelfPlayWork> {
    capa_rules::for_game!(config.game.name, G => bench_game::<G>(config, net, games))
}

fn bench_game<G: NetGame>(config: &RunConfig, net: &std::path::Path, games: u32) -> Result<capa_rundir::SelfPlayWork> {
    let inference = capa_net::Inference::load(net, config.device())
        .with_context(|| format!("cannot load the network {}", net.display()))?;
    let evaluator = CachedEvaluator::new(NetEvaluator::<G>::from_inference(&inference)?, config.selfplay.cache);
    let settings = SelfPlaySettings::new(&config.selfplay, &config.game)?;
    let bar = progress(u64::from(games), "self-play");
    let stop = AtomicBool::new(false);
    let stats = play::<G, _>(&evaluator, &settings, games, config.run.seed, "bench", &stop, None, |_, _| {
        bar.inc(1);
        Ok(())
    })?;
    bar.finish_and_clear();
    Ok(crate::metrics::throughput(&stats, new_positions(config, &stats)))
}

/// Where the trainer's own games go, and how they are played.
struct Games<'a, G: NetGame> {
    dir: &'a RunDir,
    settings: &'a SelfPlaySettings,
    buffer: &'a mut ReplayBuffer<G>,
    curriculum: Option<&'a mut Curriculum>,
}

/// One iteration's self-play with the network `network` (its weights
/// `weights`), each game written and added to the buffer as it ends, and
/// the games' keys. `None` when stopped.
fn play_locally<G: NetGame>(
    config: &RunConfig,
    games: Games<'_, G>,
    weights: &Inference,
    iteration: u64,
    network: &str,
    stop: &AtomicBool,
) -> Result<Option<(SelfPlayStats, Vec<String>)>> {
    let Games { dir, settings, buffer, curriculum } = games;
    let net = NetEvaluator::<G>::from_inference(weights)?;
    let evaluator = CachedEvaluator::new(net, config.selfplay.cache);
    let bar = progress(u64::from(config.selfplay.games), &format!("iteration {iteration} self-play"));
    let (started, mut plies) = (Instant::now(), 0usize);
    let mut pgn = String::new();
    let mut written = Vec::new();
    let stats = play::<G, _>(
        &evaluator,
        settings,
        config.selfplay.games,
        mix(config.run.seed, iteration),
        network,
        stop,
        curriculum,
        |index, record| {
            let key = keys::selfplay_game(iteration, index);
            dir.write(&key, &record.to_bytes())?;
            written.push(key);
            plies += record.plies.len();
            bar.set_message(format!("{:.1} plies/s", plies as f64 / started.elapsed().as_secs_f64()));
            pgn.push_str(&to_pgn(&record, "capa self-play", &format!("{iteration}.{}", index + 1)));
            buffer.push(record);
            bar.inc(1);
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    dir.write(&keys::iteration_pgn(iteration), pgn.as_bytes())?;
    Ok((!stop.load(Ordering::Relaxed)).then_some((stats, written)))
}

/// The newest games the committed iterations trained on, enough to fill
/// the window, into a buffer (their ledgers say which), and the intake of
/// workers' games where the commit left it. The trainer's own games of an
/// iteration that never completed are removed: it is played again. A run
/// of the layout before (games filed by network) is listed whole, once.
fn rebuild_buffer<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    first_iteration: u64,
    carried: &Carried,
) -> Result<(ReplayBuffer<G>, Intake)> {
    let committed = first_iteration - 1;
    let own_folder = keys::game_folder(keys::TRAINER_GAMES);
    for file in dir.list_after(&own_folder, Some(&keys::selfplay_games_from(first_iteration)))? {
        dir.remove(&file.key)?;
    }
    let legacy =
        if carried.games_layout == GamesLayout::ByNetwork { legacy_intake(dir, committed)? } else { Vec::new() };
    let value = config.train.value_target();
    // The window's largest size while filling: the first iteration sets its size.
    let mut buffer = ReplayBuffer::new(config.buffer.window, config.buffer.sampling, value);
    let own = trained_games::<G>(dir, committed, config.buffer.window, value)?;
    let own_positions: usize = own.iter().map(|r| r.plies.iter().filter(|p| value.trains_on(p)).count()).sum();
    // Only while the run's own games leave room in the window: oldest
    // first, so that they push the teacher's out. They keep the value
    // target they were distilled with.
    // A run that distils has checked that `distill.data` is a folder.
    let teacher = !config.distill.data.as_os_str().is_empty();
    if teacher && config.distill.seed_buffer && own_positions < config.buffer.window {
        let distill = &config.distill;
        read_teacher::<G>(&distill.data, distill.policy_target(), distill.holdout, |record, held| {
            if !held {
                buffer.push_teacher(record, distill.value_q_weight);
            }
        })?;
        // Those that left in the self-play iterations already committed.
        let played = committed.saturating_sub(distill.epochs) as usize;
        buffer.drop_teacher(distill.seed_leave.saturating_mul(played));
        tracing::info!(
            "replay buffer: {} positions of the teacher's games from {}",
            buffer.positions(),
            distill.data.display()
        );
    }
    let own_games = own.len();
    for record in own {
        buffer.push(record);
    }
    if own_games > 0 {
        tracing::info!("replay buffer: {} positions, {own_games} of its games the run's own", buffer.positions());
    }
    Ok((buffer, Intake::new(carried.workers_taken.clone(), legacy)))
}

/// Without local self-play: waits until workers have written
/// `selfplay.games` games the run has not taken, and adds every new one to
/// the buffer; returns their keys too. `None` when stopped while waiting.
fn collect_worker_games<G: NetGame>(
    config: &RunConfig,
    dir: &RunDir,
    buffer: &mut ReplayBuffer<G>,
    intake: &mut Intake,
    stop: &AtomicBool,
) -> Result<Option<(SelfPlayStats, Vec<String>)>> {
    let started = Instant::now();
    let mut announced = false;
    loop {
        let polled = Instant::now();
        let waiting = intake.poll(dir)?;
        if waiting >= config.selfplay.games as usize {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if !announced {
            tracing::info!(
                "waiting for self-play workers: {waiting} of {} new games in {}",
                config.selfplay.games,
                dir.location()
            );
            announced = true;
        }
        // At least as long as the listing took: a store is listed at most
        // half the time, however many workers it holds.
        std::thread::sleep(POLL_EVERY.max(polled.elapsed()));
    }
    let mut stats = SelfPlayStats::default();
    let mut keys = Vec::new();
    let taken: Vec<String> = intake.take().into_iter().map(|file| file.key).collect();
    for chunk in taken.chunks(READ_CHUNK) {
        for (key, record) in chunk.iter().zip(read_games::<G>(dir, chunk)?) {
            if let Some(record) = record {
                stats.count(&record);
                buffer.push(record);
                keys.push(key.clone());
            }
        }
    }
    stats.seconds = started.elapsed().as_secs_f64();
    Ok(Some((stats, keys)))
}

/// How often the trainer looks for workers' new games, at most.
const POLL_EVERY: std::time::Duration = std::time::Duration::from_millis(500);
