//! The run's game files: their names, listing them oldest first, reading
//! them (a damaged one is skipped with a warning), and the newest that fill
//! the replay window.

use anyhow::Result;
use capa_data::{GameRecord, RECORD_EXTENSION};
use capa_net::NetGame;

use crate::buffer::ValueTarget;
use crate::config::RunConfig;
use crate::rundir::{Entry, RunDir};

/// A game file's name: the iteration, then the game, so names sort in play order.
pub(crate) fn game_file_name(iteration: u64, index: u32) -> String {
    format!("local-i{iteration:06}-g{index:06}.{RECORD_EXTENSION}")
}

/// The iteration a game file belongs to.
pub(crate) fn game_file_iteration(name: &str) -> Option<u64> {
    name.strip_prefix("local-i")?.split('-').next()?.parse().ok()
}

/// Every game file of the run, oldest first (by modification time, then key).
pub(crate) fn list_games(dir: &RunDir) -> Result<Vec<Entry>> {
    let mut files = dir.list("games")?;
    files.retain(|file| file.key.strip_suffix(RECORD_EXTENSION).is_some_and(|stem| stem.ends_with('.')));
    files.sort_by(|a, b| (a.modified, &a.key).cmp(&(b.modified, &b.key)));
    Ok(files)
}

/// The ledger of iteration `iteration`: the game files it trained on,
/// written with its metrics line, before its commit.
pub(crate) fn ledger_key(iteration: u64) -> String {
    format!("ledger/iter-{iteration:06}.txt")
}

/// The game files a run had seen by iteration `iteration` when it began
/// keeping ledgers (every file there was then).
pub(crate) fn ledger_baseline_key(iteration: u64) -> String {
    format!("ledger/before-{iteration:06}.txt")
}

/// The ledgers of the iterations up to `committed`, by key: what the
/// committed iterations trained on. A ledger of a later iteration is one a
/// killed iteration left; its redo replaces it.
///
/// # Errors
/// The failure to list or read them.
pub(crate) fn read_ledgers(dir: &RunDir, committed: u64) -> Result<Vec<(String, Vec<String>)>> {
    let mut ledgers = Vec::new();
    let mut keys: Vec<String> = dir.list("ledger")?.into_iter().map(|entry| entry.key).collect();
    keys.sort();
    for key in keys {
        let iteration = file_name(&key)
            .strip_suffix(".txt")
            .and_then(|stem| stem.strip_prefix("iter-").or_else(|| stem.strip_prefix("before-")))
            .and_then(|number| number.parse::<u64>().ok());
        if iteration.is_some_and(|i| i <= committed) {
            let bytes = dir.read(&key)?.unwrap_or_default();
            let games = String::from_utf8_lossy(&bytes).lines().map(str::to_string).collect();
            ledgers.push((key, games));
        }
    }
    Ok(ledgers)
}

/// The file name part of a key.
pub(crate) fn file_name(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// Reads a game file; a damaged one is reported and skipped.
pub(crate) fn read_game<G: NetGame>(dir: &RunDir, key: &str) -> Result<Option<GameRecord<G>>> {
    let Some(bytes) = dir.read(key)? else { return Ok(None) };
    match GameRecord::<G>::from_bytes(&bytes) {
        Ok(record) => Ok(Some(record)),
        Err(e) => {
            tracing::warn!("skipping {key} in {}: {e}", dir.location());
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
