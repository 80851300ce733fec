//! Self-play workers: `capa-train selfplay` plays with the newest network of
//! a run directory and writes its games there, for a trainer started with
//! `selfplay.local = false` (on this machine or one sharing the directory).
//!
//! A worker's game files are `games/<worker>/<worker>-<n>.capa`, `n`
//! counting on from the worker's highest file in the order the games end,
//! so a restarted worker never overwrites its own games, the numbers have
//! no gap (`capa-train check`), and the trainer finds what is new by
//! listing the folder past what it took. A game file is written only where
//! there is none, and a worker holds its name (`workers/<name>.lock`, a
//! lock like the trainer's): a second worker started with a name in use is
//! refused, naming the holder, and no written game is ever overwritten.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use capa_data::to_pgn;
use capa_mcts::CachedEvaluator;
use capa_net::{NetEvaluator, NetGame};
use capa_rules::for_game;
use capa_rules::mix;
use capa_rundir::RunDir;
use capa_rundir::keys::{self, LATEST};

use crate::commit::load_net;
use crate::config::RunConfig;
use crate::finish::Finish;
use crate::selfplay::{SelfPlaySettings, play};

/// Plays until `stop` is raised (or `max_games` games are written).
///
/// # Errors
/// A bad worker name, an unreadable network, a failing disk.
pub fn work(config: &RunConfig, worker: &str, max_games: Option<u64>, stop: &AtomicBool) -> Result<Finish> {
    if worker.is_empty()
        || worker.starts_with(keys::TRAINER_GAMES)
        || keys::is_network_hash(worker)
        || !worker.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        bail!(
            "worker name {worker:?}: use letters, digits, - and _ (not `local`, the trainer's own, nor 16 hex \
             digits, a network's)"
        );
    }
    if config.run.mode == crate::config::RunMode::Distill {
        bail!("run.mode = \"distill\" learns from teacher data: a self-play worker has nothing to play for it");
    }
    for_game!(config.game.name, G => work_on::<G>(config, worker, max_games, stop))
}

fn work_on<G: NetGame>(config: &RunConfig, worker: &str, max_games: Option<u64>, stop: &AtomicBool) -> Result<Finish> {
    let dir = &RunDir::open(&config.run.dir)?;
    // Before the numbering: a second worker of this name would count from the same files.
    let _only_worker_of_this_name = dir.lock_worker_name(worker)?;
    let settings = SelfPlaySettings::new(&config.selfplay, &config.game)?;
    let mut next = next_number(dir, worker)?;
    let mut written = 0u64;
    let worker_seed = config.run.seed ^ worker.bytes().fold(0u64, |h, b| h.rotate_left(8) ^ u64::from(b));
    let mut loaded: Option<(String, CachedEvaluator<NetEvaluator<G>>)> = None;
    let mut refused: Option<(String, Instant)> = None;
    let mut waiting = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(Finish::Interrupted);
        }
        if max_games.is_some_and(|max| written >= max) {
            return Ok(Finish::Completed);
        }
        let Some(latest) = dir.read(LATEST)? else {
            if !waiting {
                tracing::info!("waiting for a network in {} (start the trainer)", dir.location());
                waiting = true;
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
            continue;
        };
        let latest = String::from_utf8_lossy(&latest).trim().to_string();
        let retry_due = refused
            .as_ref()
            .is_none_or(|(hash, at): &(String, Instant)| *hash != latest || at.elapsed() >= RELOAD_AFTER_REFUSAL);
        if loaded.as_ref().is_none_or(|(hash, _)| *hash != latest) && retry_due {
            match load_net(config, dir, &latest).and_then(|net| Ok(NetEvaluator::<G>::from_inference(&net)?)) {
                Ok(network) => {
                    tracing::info!("{worker}: playing with network {latest}");
                    loaded = Some((latest, CachedEvaluator::new(network, config.selfplay.cache)));
                    refused = None;
                }
                Err(e) => {
                    // A network file half there or damaged: never played with.
                    tracing::warn!(
                        "{worker}: {e:#}; {} and trying again in {} s",
                        if loaded.is_some() { "playing on with the previous network" } else { "waiting" },
                        RELOAD_AFTER_REFUSAL.as_secs()
                    );
                    refused = Some((latest, Instant::now()));
                }
            }
        }
        let Some((network, evaluator)) = loaded.as_ref() else {
            std::thread::sleep(std::time::Duration::from_millis(500));
            continue;
        };
        let games = match max_games {
            Some(max) => u32::try_from(max - written).unwrap_or(u32::MAX).min(config.selfplay.games),
            None => config.selfplay.games,
        };
        let first = next;
        let mut pgn = String::new();
        let seed = mix(worker_seed, first);
        let stats = play::<G, _>(evaluator, &settings, games, seed, network, stop, None, |_, record| {
            // Numbered as they end (games played at once end out of order),
            // so that a gap in a worker's numbers is a game lost in writing.
            let number = next;
            if number > LAST_NUMBER {
                bail!(
                    "worker {worker} has used the last game number a name holds ({LAST_NUMBER}): go on under \
                     another --worker name"
                );
            }
            let key = keys::worker_game_file(worker, number);
            if !dir.create_new(&key, &record.to_bytes())? {
                bail!(
                    "{key} in {} was written by another process: is a second worker named {worker} running \
                     on this run? Give each worker its own --worker name (this one stops; its game is not written)",
                    dir.location()
                );
            }
            pgn.push_str(&to_pgn(&record, "capa self-play", &format!("{worker}.{number}")));
            next += 1;
            written += 1;
            Ok(())
        })?;
        if !pgn.is_empty() {
            dir.write(&keys::worker_pgn(worker, first), pgn.as_bytes())?;
        }
        if stats.games > 0 {
            eprintln!(
                "{worker}: {} games, {:.1} plies/s, network {network}",
                stats.games,
                stats.plies as f64 / stats.seconds.max(1e-9)
            );
        }
    }
}

/// How long a worker waits before loading a refused network file again.
const RELOAD_AFTER_REFUSAL: Duration = Duration::from_secs(10);

/// The highest game number a worker name holds: its files' names have
/// eight digits, so that they sort in number order.
const LAST_NUMBER: u64 = 99_999_999;

/// One past the highest game number `worker` has written in `dir` (in its
/// folder: a run of the layout before filed its games elsewhere, and
/// those are another sequence).
fn next_number(dir: &RunDir, worker: &str) -> Result<u64> {
    let files = dir.list_after(&keys::game_folder(worker), None)?;
    let numbers = files
        .iter()
        .filter_map(|file| keys::worker_game(&file.key).filter(|(name, _)| *name == worker).map(|(_, n)| n));
    Ok(numbers.max().map_or(0, |n| n + 1))
}
