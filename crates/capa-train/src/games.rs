//! The run's game files: listing them oldest first, reading them (a
//! damaged one is skipped with a warning), and the newest that fill the
//! replay window.

use anyhow::Result;
use capa_data::GameRecord;
use capa_net::NetGame;
use capa_rundir::{Entry, RunDir, keys};

use crate::buffer::ValueTarget;
use crate::config::RunConfig;

/// Every game file of the run, oldest first (by modification time, then key).
pub(crate) fn list_games(dir: &RunDir) -> Result<Vec<Entry>> {
    let mut files = dir.list(keys::GAMES)?;
    files.retain(|file| keys::is_game(&file.key));
    files.sort_by(|a, b| (a.modified, &a.key).cmp(&(b.modified, &b.key)));
    Ok(files)
}

/// The ledgers of the iterations up to `committed`, by key: what the
/// committed iterations trained on. A ledger of a later iteration is one a
/// killed iteration left; its redo replaces it.
///
/// # Errors
/// The failure to list or read them.
pub(crate) fn read_ledgers(dir: &RunDir, committed: u64) -> Result<Vec<(String, Vec<String>)>> {
    let mut ledgers = Vec::new();
    let mut ledger_keys: Vec<String> = dir.list(keys::LEDGER)?.into_iter().map(|entry| entry.key).collect();
    ledger_keys.sort();
    for key in ledger_keys {
        if keys::ledger_iteration(&key).is_some_and(|i| i <= committed) {
            let bytes = dir.read(&key)?.unwrap_or_default();
            let games = String::from_utf8_lossy(&bytes).lines().map(str::to_string).collect();
            ledgers.push((key, games));
        }
    }
    Ok(ledgers)
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
