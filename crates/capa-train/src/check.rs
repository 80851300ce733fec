//! `capa-train check`: what a run directory must be after any crash, kill
//! or storage fault, checked: the commit point and its checkpoint, every
//! network file against the hash it is named by, a metrics line for each
//! committed iteration and no other, every game file whole, each game
//! trained on by one iteration at most (the ledgers), no gap in a worker's
//! game numbers and none used twice. Temporary files are reported, not
//! counted as problems: each is a write in progress or one whose writer
//! died, never a damaged file (every write lands whole, by a rename), and
//! the trainer's next start removes the dead writers' ones.
//!
//! With a state file (`--state`), a check after the first checks only what
//! is new since the one that wrote it: the games each writer wrote since
//! (its folder listed past the last name checked), the ledgers of the
//! iterations since (a worker's game taken again is one below the count
//! the run had taken then), the networks the new metrics lines name. Its
//! cost is what is new, not the run's history.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use anyhow::{Context, Result, bail};
use capa_data::{GameRecord, write_atomically, writer_gone};
use capa_net::{NetGame, read_net_config};
use capa_rules::for_game;
use serde::{Deserialize, Serialize};

use capa_rundir::keys::{self, LATEST, METRICS};
use capa_rundir::{CommitPoint, Entry, RunDir, Traffic, Work, read_lines};

use crate::commit::network_hash;
use crate::config::RunConfig;
use crate::games::{READ_CHUNK, list_games, read_ledgers};

/// What [`check`] found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// The last committed iteration (0: none yet).
    pub committed: u64,
    /// Game files in the run.
    pub games: usize,
    /// Of those, the ones a committed iteration trained on.
    pub trained_on: usize,
    /// Network files checked against their names.
    pub networks: usize,
    /// What is wrong, one line each.
    pub problems: Vec<String>,
    /// What is worth knowing and not wrong (temporary files), one line each.
    pub notes: Vec<String>,
    /// The iteration the check started after (0: the whole run was checked).
    pub since: u64,
    /// What the check read.
    pub traffic: Traffic,
}

impl CheckReport {
    /// The summary line.
    pub fn summary(&self) -> String {
        let since = if self.since > 0 {
            format!(" (what is new since iteration {} checked)", self.since)
        } else {
            String::new()
        };
        format!(
            "committed iterations: {}; game files: {} ({} trained on, {} not yet); networks: {} checked; notes: {}; \
             problems: {}{since}",
            self.committed,
            self.games,
            self.trained_on,
            self.games - self.trained_on.min(self.games),
            self.networks,
            self.notes.len(),
            self.problems.len()
        )
    }
}

/// Where a check stood, for the next to check only what is new
/// (`capa-train check --state FILE`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct CheckState {
    /// The run checked: a state is one run's.
    run: String,
    /// The iteration committed then.
    iteration: u64,
    /// Its metrics lines.
    metrics_lines: usize,
    /// Per writer's game folder (`local`, each worker), the last file name
    /// checked, and one past the highest number of a worker's checked.
    folders: BTreeMap<String, (String, u64)>,
    /// Per worker, the games the committed iterations had taken then.
    taken: BTreeMap<String, u64>,
    /// The run's game files, those trained on, and its networks, then.
    games: usize,
    trained_on: usize,
    networks: usize,
}

/// Checks the run of `config`: all of it, or with a state file `state`,
/// what is new since the check that wrote it (all of it when the file is
/// missing). The state is written back when nothing is wrong.
///
/// # Errors
/// A run directory that cannot be opened or listed, a state file of
/// another run or unreadable (what is wrong inside the run is a problem in
/// the report).
pub fn check(config: &RunConfig, state: Option<&Path>) -> Result<CheckReport> {
    let dir = RunDir::open(&config.run.dir)?;
    let before = match state {
        Some(path) => match std::fs::read(path) {
            Ok(bytes) => {
                let before: CheckState = serde_json::from_slice(&bytes)
                    .with_context(|| format!("--state {}: not a check's state file", path.display()))?;
                if before.run != dir.location() {
                    bail!("--state {}: the state of {}, not of {}", path.display(), before.run, dir.location());
                }
                Some(before)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("cannot read --state {}", path.display())),
        },
        None => None,
    };
    let (report, after) = for_game!(config.game.name, G => check_run::<G>(&dir, before.as_ref()))?;
    if let Some(path) = state.filter(|_| report.problems.is_empty()) {
        write_atomically(path, &serde_json::to_vec_pretty(&after)?)
            .with_context(|| format!("cannot write --state {}", path.display()))?;
    }
    Ok(report)
}

fn check_run<G: NetGame>(dir: &RunDir, before: Option<&CheckState>) -> Result<(CheckReport, CheckState)> {
    let mut report = CheckReport { since: before.map_or(0, |state| state.iteration), ..CheckReport::default() };
    let mut after = CheckState { run: dir.location().to_string(), ..CheckState::default() };
    let problems = &mut report.problems;
    // The commit point and its checkpoint.
    let latest = match CommitPoint::read(dir) {
        Ok(latest) => latest,
        Err(e) => {
            problems.push(format!("{e:#}"));
            None
        }
    };
    if let Some(latest) = &latest {
        report.committed = latest.iteration;
        after.taken.clone_from(&latest.carried.workers_taken);
        let key = keys::checkpoint(&latest.checkpoint);
        match dir.local_copy(&key) {
            Ok(Some(path)) => {
                if let Err(e) = read_net_config(&path) {
                    problems.push(format!("{key}: {e}"));
                }
            }
            Ok(None) => problems.push(format!("latest.json names {key}, which is missing")),
            Err(e) => problems.push(format!("{e:#}")),
        }
    }
    after.iteration = report.committed;
    if let Some(state) = before
        && report.committed < state.iteration
    {
        problems.push(format!(
            "the commit point went back: iteration {}, {} at the check before",
            report.committed, state.iteration
        ));
    }
    // A metrics line for each committed iteration, in order.
    let mut games_of = HashMap::new();
    let mut named = Vec::new();
    let mut expected = 1;
    let lines = read_lines(dir)?;
    after.metrics_lines = lines.len();
    for (number, (_, line)) in lines.into_iter().enumerate() {
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                problems.push(format!("{METRICS} line {}: not a whole metrics line ({e})", number + 1));
                continue;
            }
        };
        if line.iteration != expected {
            problems.push(format!("{METRICS} line {}: iteration {}, expected {expected}", number + 1, line.iteration));
        }
        expected = line.iteration + 1;
        if let Work::SelfPlay(work) = &line.work {
            games_of.insert(line.iteration, work.games as usize);
        }
        if before.is_none_or(|state| number >= state.metrics_lines) {
            named.push((number, line.network));
        }
    }
    // An uncommitted iteration's line is dropped by the resume; a missing one is lost.
    if expected <= report.committed {
        problems.push(format!("{METRICS} ends at iteration {}, committed {}", expected - 1, report.committed));
    }
    // The networks: every one, or those the new lines name.
    let networks: Vec<String> = match before {
        None => {
            let listed: Vec<String> = dir
                .list(keys::NETS)?
                .into_iter()
                .filter_map(|e| keys::network_key_hash(&e.key).map(str::to_string))
                .collect();
            let there: HashSet<&str> = listed.iter().map(String::as_str).collect();
            for (number, hash) in named.iter().filter(|(_, hash)| !there.contains(hash.as_str())) {
                problems.push(format!("{METRICS} line {}: network {hash} is missing", number + 1));
            }
            listed
        }
        Some(_) => {
            let mut seen = HashSet::new();
            named.iter().filter(|(_, hash)| seen.insert(hash.clone())).map(|(_, hash)| hash.clone()).collect()
        }
    };
    for hash in &networks {
        let key = keys::network(hash);
        let path = match dir.local_copy(&key) {
            Ok(Some(path)) => path,
            Ok(None) => {
                let number = named.iter().find(|(_, h)| h == hash).map_or(0, |(n, _)| n + 1);
                problems.push(format!("{METRICS} line {number}: network {hash} is missing"));
                continue;
            }
            Err(e) => {
                problems.push(format!("{e:#}"));
                continue;
            }
        };
        let verified = read_net_config(&path)
            .map_err(anyhow::Error::from)
            .and_then(|config| Ok(network_hash(&config, &std::fs::read(&path)?)));
        match verified {
            Ok(actual) if actual == *hash => {}
            Ok(actual) => problems.push(format!("{key}: its content hashes to {actual}")),
            Err(e) => problems.push(format!("{key}: {e:#}")),
        }
    }
    report.networks = before.map_or(0, |state| state.networks) + networks.len();
    if let Some(bytes) = dir.read(LATEST)? {
        let hash = String::from_utf8_lossy(&bytes).trim().to_string();
        if !dir.read(&keys::network(&hash)).is_ok_and(|bytes| bytes.is_some()) {
            problems.push(format!("LATEST names network {hash}, which is missing"));
        }
    }
    // The games: all of them, or each writer's folder past what was checked.
    let games = match before {
        None => list_games(dir)?,
        Some(state) => new_games(dir, state)?,
    };
    let listed: HashSet<&str> = games.iter().map(|g| g.key.as_str()).collect();
    // The ledgers: all, or those of the iterations since.
    let ledgers = match before {
        None => read_ledgers(dir, report.committed)?,
        Some(state) => {
            let mut since = Vec::new();
            for iteration in state.iteration + 1..=report.committed {
                let key = keys::ledger(iteration);
                if let Some(bytes) = dir.read(&key)? {
                    let games = String::from_utf8_lossy(&bytes).lines().map(str::to_string).collect();
                    since.push((key, games));
                }
            }
            since
        }
    };
    let mut trained: HashMap<String, String> = HashMap::new();
    for (ledger, trained_games) in ledgers {
        let iteration = keys::iteration_ledger_iteration(&ledger);
        if let Some(counted) = iteration.and_then(|i| games_of.get(&i))
            && *counted != trained_games.len()
        {
            problems.push(format!("{ledger}: {} games, its metrics line says {counted}", trained_games.len()));
        }
        for key in trained_games {
            if let Some(state) = before {
                let taken_before = keys::worker_game(&key)
                    .filter(|_| !keys::is_legacy_game(&key))
                    .is_some_and(|(worker, number)| number < state.taken.get(worker).copied().unwrap_or(0));
                let played_before = keys::selfplay_game_iteration(&key).is_some_and(|i| i <= state.iteration);
                if taken_before || played_before {
                    problems.push(format!(
                        "{key} trained on twice: in {ledger} and by iteration {} or before",
                        state.iteration
                    ));
                }
                // Checked before, or listed now: else it is gone.
                let checked = keys::file_name(&key);
                let folder = key.split('/').nth(1).unwrap_or_default();
                let known = state.folders.get(folder).is_some_and(|(last, _)| checked <= last.as_str());
                if !known && !listed.contains(key.as_str()) && !keys::is_legacy_game(&key) {
                    problems.push(format!("{key} was trained on and is missing"));
                }
            }
            if let Some(first) = trained.insert(key.clone(), ledger.clone()) {
                problems.push(format!("{key} trained on twice: in {first} and {ledger}"));
            }
        }
    }
    if before.is_none() {
        for key in trained.keys().filter(|key| !listed.contains(key.as_str())) {
            problems.push(format!("{key} was trained on and is missing"));
        }
    }
    report.games = before.map_or(0, |state| state.games) + games.len();
    report.trained_on = before.map_or(0, |state| state.trained_on) + trained.len();
    // Every game whole, no gap or repeat in a worker's numbers.
    let mut numbers: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for chunk in games.chunks(READ_CHUNK) {
        let names: Vec<String> = chunk.iter().map(|game| game.key.clone()).collect();
        match dir.read_many(&names) {
            Ok(files) => {
                for (name, bytes) in names.iter().zip(files) {
                    match bytes.map(|bytes| GameRecord::<G>::from_bytes(&bytes)) {
                        Some(Ok(_)) => {}
                        Some(Err(e)) => problems.push(format!("{name}: {e}")),
                        None => problems.push(format!("{name}: gone while checking")),
                    }
                }
            }
            Err(e) => problems.push(format!("{e:#}")),
        }
    }
    for game in &games {
        if let Some((worker, number)) = keys::worker_game(&game.key) {
            // A run of the layout before filed a worker's games by network: another sequence.
            let sequence = if keys::is_legacy_game(&game.key) {
                format!("{worker} (filed by network)")
            } else {
                worker.to_string()
            };
            numbers.entry(sequence).or_default().push(number);
        }
    }
    after.folders = before.map(|state| state.folders.clone()).unwrap_or_default();
    for (worker, mut numbers) in numbers {
        numbers.sort_unstable();
        // A worker's new games go on from the last it had.
        let from = before.and_then(|state| state.folders.get(&worker)).map_or(0, |(_, next)| *next);
        let missing: Vec<u64> =
            (from..=*numbers.last().unwrap_or(&0)).filter(|n| numbers.binary_search(n).is_err()).collect();
        if !missing.is_empty() {
            problems.push(format!("worker {worker}: games {missing:?} are missing"));
        }
        let twice: Vec<u64> = numbers.windows(2).filter(|pair| pair[0] == pair[1]).map(|pair| pair[0]).collect();
        if !twice.is_empty() {
            problems.push(format!("worker {worker}: games {twice:?} written twice (two workers of one name?)"));
        }
    }
    // Where each writer's folder was checked to.
    for game in games.iter().filter(|game| !keys::is_legacy_game(&game.key)) {
        let folder = game.key.split('/').nth(1).unwrap_or_default().to_string();
        let name = keys::file_name(&game.key);
        let (last, next) = after.folders.entry(folder.clone()).or_default();
        if name > last.as_str() {
            *last = name.to_string();
        }
        if let Some((_, number)) = keys::worker_game(&game.key).filter(|(worker, _)| *worker == folder) {
            *next = (*next).max(number + 1);
        }
    }
    after.games = report.games;
    after.trained_on = report.trained_on;
    after.networks = report.networks;
    for entry in dir.temporaries()? {
        report.notes.push(if writer_gone(keys::file_name(&entry.key), Some(entry.modified)) {
            format!("{}: a temporary file its writer left when it died; the trainer's next start removes it", entry.key)
        } else {
            format!("{}: a temporary file being written", entry.key)
        });
    }
    report.traffic = dir.traffic();
    Ok((report, after))
}

/// The game files each writer wrote since the check of `state`: its
/// folder listed past the last name that check saw.
fn new_games(dir: &RunDir, state: &CheckState) -> Result<Vec<Entry>> {
    let mut games = Vec::new();
    for folder in dir.folders(keys::GAMES)? {
        if keys::is_network_hash(&folder) {
            continue;
        }
        let after = state.folders.get(&folder).map(|(last, _)| last.as_str());
        games.extend(dir.list_after(&keys::game_folder(&folder), after)?.into_iter().filter(|e| keys::is_game(&e.key)));
    }
    Ok(games)
}
