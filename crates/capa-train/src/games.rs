//! The run's game files: reading them (a damaged one is skipped with a
//! warning), the newest the committed iterations trained on (the replay
//! window, found from the ledgers), and the intake of workers' games (each
//! worker's folder listed past what the run took of it). Their cost follows
//! what is new or asked for, not the run's history; only [`list_games`],
//! for the tools that want every game, lists the run whole.

use std::collections::{BTreeMap, HashSet};

use anyhow::Result;
use capa_data::GameRecord;
use capa_net::NetGame;
use capa_rundir::{Entry, RunDir, keys, ledgers_back};

use crate::buffer::ValueTarget;

/// Every game file of the run, oldest first (by modification time, then
/// key): a listing of the whole run, for `check`, distillation from a run
/// and the diagnostics.
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

/// Reads the game files `keys`, in their order (many at once from a
/// store); a missing one is `None`, and so is a damaged one, reported.
pub(crate) fn read_games<G: NetGame>(dir: &RunDir, keys: &[String]) -> Result<Vec<Option<GameRecord<G>>>> {
    let files = dir.read_many(keys)?;
    Ok(keys
        .iter()
        .zip(files)
        .map(|(key, bytes)| match GameRecord::<G>::from_bytes(&bytes?) {
            Ok(record) => Some(record),
            Err(e) => {
                tracing::warn!("skipping {key} in {}: {e}", dir.location());
                None
            }
        })
        .collect())
}

/// How many game files a reader asks for at once: enough for a store's
/// reads in flight, few enough to hold in memory.
pub(crate) const READ_CHUNK: usize = 256;

/// How many records a window's reading starts with, before their mean size is known.
const FIRST_READ: usize = 32;

/// The newest games the iterations up to `committed` trained on, with
/// `positions` training positions or just more, read and returned oldest
/// first. The ledgers are read back from the newest, so the cost is the
/// window's, not the run's.
pub(crate) fn trained_games<G: NetGame>(
    dir: &RunDir,
    committed: u64,
    positions: usize,
    value: ValueTarget,
) -> Result<Vec<GameRecord<G>>> {
    let mut newest = Vec::new();
    if positions == 0 {
        return Ok(newest);
    }
    let mut held: usize = 0;
    'ledgers: for ledger in ledgers_back(dir, committed) {
        let (_, games) = ledger?;
        let games: Vec<String> = games.into_iter().rev().collect();
        let mut next = 0;
        while next < games.len() {
            // As many as the window still wants at the positions a record held so far on average.
            let want = match held.checked_div(newest.len()) {
                Some(mean) if mean > 0 => (positions - held).div_ceil(mean),
                _ => FIRST_READ,
            };
            let chunk = &games[next..games.len().min(next + want.clamp(1, READ_CHUNK))];
            next += chunk.len();
            for record in read_games::<G>(dir, chunk)?.into_iter().flatten() {
                held += record.plies.iter().filter(|p| value.trains_on(p)).count();
                newest.push(record);
                if held >= positions {
                    break 'ledgers;
                }
            }
        }
    }
    newest.reverse();
    Ok(newest)
}

/// The trainer's intake of workers' games. A worker writes its games in
/// number order into its own folder, so the run keeps only how many it
/// took of each worker's ([`capa_rundir::Carried::workers_taken`]), and
/// what is new is each folder's listing past that: one request a worker.
pub(crate) struct Intake {
    /// Per worker, the games taken (numbers below this).
    taken: BTreeMap<String, u64>,
    /// Per worker, one past the highest number listed and not yet taken.
    listed: BTreeMap<String, u64>,
    /// The games listed and not yet taken, in the order listed.
    waiting: Vec<Entry>,
}

impl Intake {
    /// The intake of a run whose committed iterations took `taken`, and
    /// `legacy`, games of the layout before that none took (the next
    /// iteration takes them first).
    pub(crate) fn new(taken: BTreeMap<String, u64>, legacy: Vec<Entry>) -> Intake {
        Intake { listed: taken.clone(), taken, waiting: legacy }
    }

    /// What the committed iterations took, to be committed with the next.
    pub(crate) fn taken(&self) -> &BTreeMap<String, u64> {
        &self.taken
    }

    /// Lists what the workers wrote since the last call; returns how many
    /// games wait to be taken.
    ///
    /// # Errors
    /// The failure to list.
    pub(crate) fn poll(&mut self, dir: &RunDir) -> Result<usize> {
        let workers: Vec<String> = dir
            .folders(keys::GAMES)?
            .into_iter()
            .filter(|worker| worker != keys::TRAINER_GAMES && !keys::is_network_hash(worker))
            .collect();
        let queries: Vec<(String, Option<String>)> = workers
            .iter()
            .map(|worker| {
                let next = self.listed.get(worker).copied().unwrap_or(0);
                let after = next.checked_sub(1).map(|last| keys::worker_game_name(worker, last));
                (keys::game_folder(worker), after)
            })
            .collect();
        for (worker, listed) in workers.iter().zip(dir.list_after_many(&queries)?) {
            for entry in listed {
                // Another worker's name in this folder is no game of its: `check` reports it.
                if let Some((_, number)) = keys::worker_game(&entry.key).filter(|(name, _)| name == worker) {
                    let listed = self.listed.entry(worker.clone()).or_default();
                    *listed = (*listed).max(number + 1);
                    self.waiting.push(entry);
                }
            }
        }
        Ok(self.waiting.len())
    }

    /// Takes every game waiting; the worker's counts move past them.
    pub(crate) fn take(&mut self) -> Vec<Entry> {
        self.taken.clone_from(&self.listed);
        std::mem::take(&mut self.waiting)
    }
}

/// A run of the layout before (games filed by network) at its first start
/// since: one listing of the whole run, once. The trainer's games of an
/// iteration after `committed` are removed (it is played again), a run from
/// before ledgers gets its baseline (the games its last commit had seen),
/// and the workers' games no committed iteration took are returned, oldest
/// first, for the next iteration to take.
///
/// # Errors
/// The failure to list, read, write or remove.
pub(crate) fn legacy_intake(dir: &RunDir, committed: u64) -> Result<Vec<Entry>> {
    let mut files = Vec::new();
    for file in list_games(dir)?.into_iter().filter(|file| keys::is_legacy_game(&file.key)) {
        match keys::selfplay_game_iteration(&file.key) {
            Some(iteration) if iteration > committed => dir.remove(&file.key)?,
            _ => files.push(file),
        }
    }
    let ledgers = read_ledgers(dir, committed)?;
    let seen: HashSet<String> = if ledgers.is_empty() && committed > 0 {
        let committed_at = dir.list(keys::CHECKPOINTS)?.into_iter().find(|e| e.key == keys::COMMIT);
        let before: Vec<&str> = files
            .iter()
            .filter(|file| committed_at.as_ref().is_none_or(|at| file.modified <= at.modified))
            .map(|file| file.key.as_str())
            .collect();
        dir.write(&keys::ledger_baseline(committed), before.join("\n").as_bytes())?;
        before.into_iter().map(str::to_string).collect()
    } else {
        ledgers.into_iter().flat_map(|(_, games)| games).collect()
    };
    files.retain(|file| !seen.contains(&file.key) && keys::worker_game(&file.key).is_some());
    if !files.is_empty() {
        tracing::info!("{} games of workers filed by network wait to be taken", files.len());
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> (std::path::PathBuf, RunDir) {
        let root = std::env::temp_dir().join(format!("capa-games-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = RunDir::open(&root).unwrap();
        (root, dir)
    }

    fn keys_of(entries: &[Entry]) -> Vec<&str> {
        entries.iter().map(|entry| entry.key.as_str()).collect()
    }

    #[test]
    fn the_intake_lists_each_worker_past_what_it_took() {
        let (root, dir) = scratch("intake");
        for (worker, number) in [("alpha", 0), ("alpha", 1), ("beta", 0)] {
            dir.write(&keys::worker_game_file(worker, number), b"game").unwrap();
        }
        // Neither a worker's folder nor its game: the trainer's, the layout before, a stray name.
        dir.write(&keys::selfplay_game(1, 0), b"own").unwrap();
        dir.write("games/0123456789abcdef/alpha-00000007.capa", b"old").unwrap();
        dir.write("games/beta/alpha-00000005.capa", b"stray").unwrap();
        let taken = BTreeMap::from([("alpha".to_string(), 1)]);
        let mut intake = Intake::new(taken, Vec::new());
        assert_eq!(intake.poll(&dir).unwrap(), 2);
        assert_eq!(intake.poll(&dir).unwrap(), 2, "what is listed is listed once");
        dir.write(&keys::worker_game_file("beta", 1), b"game").unwrap();
        dir.write(&keys::worker_game_file("gamma", 0), b"game").unwrap();
        assert_eq!(intake.poll(&dir).unwrap(), 4);
        let taken = intake.take();
        assert_eq!(
            keys_of(&taken),
            [
                "games/alpha/alpha-00000001.capa",
                "games/beta/beta-00000000.capa",
                "games/beta/beta-00000001.capa",
                "games/gamma/gamma-00000000.capa"
            ]
        );
        let counts: Vec<(&str, u64)> = intake.taken().iter().map(|(w, n)| (w.as_str(), *n)).collect();
        assert_eq!(counts, [("alpha", 2), ("beta", 2), ("gamma", 1)]);
        assert_eq!(intake.poll(&dir).unwrap(), 0);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_run_filed_by_network_is_taken_over_from_one_listing() {
        let (root, dir) = scratch("legacy");
        let old = |name: &str| format!("games/0123456789abcdef/{name}");
        for name in ["local-i000001-g000000.capa", "w-00000000.capa", "w-00000001.capa", "local-i000003-g000000.capa"] {
            dir.write(&old(name), b"game").unwrap();
        }
        dir.write(&keys::ledger(1), old("local-i000001-g000000.capa").as_bytes()).unwrap();
        dir.write(&keys::ledger(2), old("w-00000000.capa").as_bytes()).unwrap();
        let waiting = legacy_intake(&dir, 2).unwrap();
        assert_eq!(keys_of(&waiting), [old("w-00000001.capa")]);
        assert!(dir.read(&old("local-i000003-g000000.capa")).unwrap().is_none(), "an uncommitted iteration's game");
        assert!(dir.read(&old("local-i000001-g000000.capa")).unwrap().is_some());
        let _ = std::fs::remove_dir_all(&root);
    }
}
