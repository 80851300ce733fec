//! `capa-train check`: what a run directory must be after any crash, kill
//! or storage fault, checked: the commit point and its checkpoint, every
//! network file against the hash it is named by, a metrics line for each
//! committed iteration and no other, every game file whole, each game
//! trained on by one iteration at most (the ledgers), no gap in a worker's
//! game numbers and none used twice. Temporary files are reported, not
//! counted as problems: each is a write in progress or one whose writer
//! died, never a damaged file (every write lands whole, by a rename), and
//! the trainer's next start removes the dead writers' ones.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use capa_data::{GameRecord, writer_gone};
use capa_net::{NetGame, read_net_config};
use capa_rules::for_game;

use capa_rundir::keys::{self, LATEST, METRICS};
use capa_rundir::{CommitPoint, RunDir, Traffic, Work, read_lines};

use crate::commit::network_hash;
use crate::config::RunConfig;
use crate::games::{list_games, read_ledgers};

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
    /// What the check read.
    pub traffic: Traffic,
}

impl CheckReport {
    /// The summary line.
    pub fn summary(&self) -> String {
        format!(
            "committed iterations: {}; game files: {} ({} trained on, {} not yet); networks: {} checked; notes: {}; \
             problems: {}",
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

/// Checks the run of `config`.
///
/// # Errors
/// A run directory that cannot be opened or listed (what is wrong inside
/// it is a problem in the report).
pub fn check(config: &RunConfig) -> Result<CheckReport> {
    let dir = RunDir::open(&config.run.dir)?;
    for_game!(config.game.name, G => check_run::<G>(&dir))
}

fn check_run<G: NetGame>(dir: &RunDir) -> Result<CheckReport> {
    let mut report = CheckReport::default();
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
    // Every network against its name.
    for entry in dir.list(keys::NETS)? {
        let Some(hash) = keys::network_key_hash(&entry.key) else { continue };
        report.networks += 1;
        let verified = dir.local_copy(&entry.key).and_then(|path| {
            let path = path.ok_or_else(|| anyhow::anyhow!("gone while checking"))?;
            let config = read_net_config(&path)?;
            Ok(network_hash(&config, &std::fs::read(&path)?))
        });
        match verified {
            Ok(actual) if actual == hash => {}
            Ok(actual) => problems.push(format!("{}: its content hashes to {actual}", entry.key)),
            Err(e) => problems.push(format!("{}: {e:#}", entry.key)),
        }
    }
    let has_network = |hash: &str| dir.read(&keys::network(hash)).is_ok_and(|bytes| bytes.is_some());
    if let Some(bytes) = dir.read(LATEST)? {
        let hash = String::from_utf8_lossy(&bytes).trim().to_string();
        if !has_network(&hash) {
            problems.push(format!("LATEST names network {hash}, which is missing"));
        }
    }
    // A metrics line for each committed iteration, in order.
    let mut games_of = HashMap::new();
    let mut expected = 1;
    for (number, (_, line)) in read_lines(dir)?.into_iter().enumerate() {
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
        if !has_network(&line.network) {
            problems.push(format!("{METRICS} line {}: network {} is missing", number + 1, line.network));
        }
    }
    // An uncommitted iteration's line is dropped by the resume; a missing one is lost.
    if expected <= report.committed {
        problems.push(format!("{METRICS} ends at iteration {}, committed {}", expected - 1, report.committed));
    }
    // Every game whole, trained on once at most, no gap in a worker's numbers.
    let games = list_games(dir)?;
    report.games = games.len();
    let mut trained: HashMap<String, String> = HashMap::new();
    for (ledger, trained_games) in read_ledgers(dir, report.committed)? {
        if let Some(counted) = keys::iteration_ledger_iteration(&ledger).and_then(|i| games_of.get(&i))
            && *counted != trained_games.len()
        {
            problems.push(format!("{ledger}: {} games, its metrics line says {counted}", trained_games.len()));
        }
        for key in trained_games {
            if let Some(first) = trained.insert(key.clone(), ledger.clone()) {
                problems.push(format!("{key} trained on twice: in {first} and {ledger}"));
            }
        }
    }
    let present: std::collections::HashSet<&str> = games.iter().map(|g| g.key.as_str()).collect();
    for key in trained.keys().filter(|key| !present.contains(key.as_str())) {
        problems.push(format!("{key} was trained on and is missing"));
    }
    report.trained_on = trained.len();
    let mut numbers: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for game in &games {
        match dir.read(&game.key) {
            Ok(Some(bytes)) => {
                if let Err(e) = GameRecord::<G>::from_bytes(&bytes) {
                    problems.push(format!("{}: {e}", game.key));
                }
            }
            Ok(None) => problems.push(format!("{}: gone while checking", game.key)),
            Err(e) => problems.push(format!("{e:#}")),
        }
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
    for (worker, mut numbers) in numbers {
        numbers.sort_unstable();
        let missing: Vec<u64> =
            (0..=*numbers.last().unwrap_or(&0)).filter(|n| numbers.binary_search(n).is_err()).collect();
        if !missing.is_empty() {
            problems.push(format!("worker {worker}: games {missing:?} are missing"));
        }
        let twice: Vec<u64> = numbers.windows(2).filter(|pair| pair[0] == pair[1]).map(|pair| pair[0]).collect();
        if !twice.is_empty() {
            problems.push(format!("worker {worker}: games {twice:?} written twice (two workers of one name?)"));
        }
    }
    for entry in dir.temporaries()? {
        report.notes.push(if writer_gone(keys::file_name(&entry.key), Some(entry.modified)) {
            format!("{}: a temporary file its writer left when it died; the trainer's next start removes it", entry.key)
        } else {
            format!("{}: a temporary file being written", entry.key)
        });
    }
    report.traffic = dir.traffic();
    Ok(report)
}
