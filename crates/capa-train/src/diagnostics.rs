//! What a run's data says about its health, read from the run directory
//! alone: `capa buffer-stats` (results, endings, lengths, value targets of
//! the replay window) and `capa overfit-check` (the newest network's losses
//! on the window's oldest positions against its newest, and the network
//! that played the newest games on them, which it never trained on,
//! against the games before, which it did).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result};
use capa_data::GameRecord;
use capa_net::{DeviceSpec, Inference, NetGame};
use capa_rules::Color;
use capa_rules::for_game;
use capa_rundir::keys::{self, CONFIG, LATEST};
use capa_rundir::{CommitPoint, RunDir};

use crate::buffer::ReplayBuffer;
use crate::config::RunConfig;
use crate::games::{list_games, trained_games};
use crate::steps::mean_losses;

/// The replay window of a run, summarised.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BufferStats {
    /// Game files in the run.
    pub run_games: usize,
    /// Games in the window (the newest that fill `buffer.window`).
    pub games: usize,
    /// Training positions (fully searched plies) in the window.
    pub positions: usize,
    /// Games won by white, drawn, won by black.
    pub white_draw_black: [u64; 3],
    /// Games by how they ended.
    pub endings: BTreeMap<String, u64>,
    /// Game lengths in plies: mean, median, shortest, longest.
    pub lengths: [f64; 4],
    /// Training positions whose side to move went on to win, draw, lose:
    /// the value targets (before any mixing with the search's Q).
    pub targets: [u64; 3],
}

impl fmt::Display for BufferStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [w, d, b] = self.white_draw_black;
        writeln!(
            f,
            "window: {} games of the run's {}, {} training positions",
            self.games, self.run_games, self.positions
        )?;
        writeln!(f, "results: white {w}, draw {d}, black {b}")?;
        let endings: Vec<String> = self.endings.iter().map(|(why, n)| format!("{why} {n}")).collect();
        writeln!(f, "endings: {}", endings.join(", "))?;
        let [mean, median, shortest, longest] = self.lengths;
        writeln!(
            f,
            "length in plies: mean {mean:.1}, median {median:.0}, shortest {shortest:.0}, longest {longest:.0}"
        )?;
        let total = self.targets.iter().sum::<u64>().max(1) as f64;
        let share = |n: u64| 100.0 * n as f64 / total;
        write!(
            f,
            "value targets (side to move): win {:.1}%, draw {:.1}%, loss {:.1}%",
            share(self.targets[0]),
            share(self.targets[1]),
            share(self.targets[2])
        )
    }
}

/// Summarises the replay window of the run at `location`.
///
/// # Errors
/// An unreadable run directory or config.
pub fn buffer_stats(location: &Path) -> Result<BufferStats> {
    let (config, dir) = open_run(location)?;
    for_game!(config.game.name, G => summarise::<G>(&config, &dir))
}

fn summarise<G: NetGame>(config: &RunConfig, dir: &RunDir) -> Result<BufferStats> {
    let files = list_games(dir)?;
    let games = window::<G>(config, dir)?;
    let mut stats = BufferStats { run_games: files.len(), games: games.len(), ..BufferStats::default() };
    let mut lengths: Vec<usize> = Vec::with_capacity(games.len());
    for record in &games {
        stats.white_draw_black[match record.winner {
            Some(Color::White) => 0,
            None => 1,
            Some(Color::Black) => 2,
        }] += 1;
        let ending = record.ending.to_string();
        *stats.endings.entry(ending).or_default() += 1;
        lengths.push(record.moves.len());
        let mut turn = record.start.turn();
        for ply in &record.plies {
            if ply.full_search && !ply.visits.is_empty() {
                stats.positions += 1;
                stats.targets[match record.winner {
                    Some(winner) if winner == turn => 0,
                    None => 1,
                    Some(_) => 2,
                }] += 1;
            }
            turn = !turn;
        }
    }
    lengths.sort_unstable();
    if let (Some(&shortest), Some(&longest)) = (lengths.first(), lengths.last()) {
        let mean = lengths.iter().sum::<usize>() as f64 / lengths.len() as f64;
        stats.lengths = [mean, lengths[lengths.len() / 2] as f64, shortest as f64, longest as f64];
    }
    Ok(stats)
}

/// The newest network's losses on the oldest and the newest positions of
/// the replay window.
#[derive(Clone, Debug, PartialEq)]
pub struct OverfitReport {
    /// The network measured (`LATEST`).
    pub network: String,
    /// Positions in each end.
    pub positions: usize,
    /// Policy, WDL and total losses on the oldest positions.
    pub oldest: [f64; 3],
    /// The same on the newest positions.
    pub newest: [f64; 3],
    /// The network that played the newest games, on them and on the games
    /// before; `None` while the run has games of one network only.
    pub held_out: Option<HeldOutReport>,
}

/// The network that played the newest games, which it never trained on,
/// measured on them and on as many positions of the games before, which it
/// trained on. A value head that learned what wins (rather than which game
/// a position came from) loses about as little on the first as on the
/// second; one that memorised outcomes does no better than a uniform
/// guess (WDL loss ln 3 = 1.099) on games it never saw.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldOutReport {
    /// The network.
    pub network: String,
    /// Positions on each side.
    pub positions: usize,
    /// Policy, WDL and total losses on its own games (never trained on).
    pub unseen: [f64; 3],
    /// The same on the games before (trained on).
    pub seen: [f64; 3],
}

impl HeldOutReport {
    /// Unseen over seen WDL loss: 1.5 or more means the value head
    /// memorises game outcomes.
    pub fn wdl_ratio(&self) -> f64 {
        self.unseen[1] / self.seen[1].max(1e-9)
    }
}

impl OverfitReport {
    /// Newest over oldest total loss. The network trained on both ends, but
    /// on the oldest far longer: a ratio of 2 or more says it memorised them.
    pub fn ratio(&self) -> f64 {
        self.newest[2] / self.oldest[2].max(1e-9)
    }
}

impl fmt::Display for OverfitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = |[policy, wdl, total]: [f64; 3]| format!("policy {policy:.3}, wdl {wdl:.3}, total {total:.3}");
        writeln!(f, "network {}, {} positions at each end of the window", self.network, self.positions)?;
        writeln!(f, "oldest: {}", line(self.oldest))?;
        writeln!(f, "newest: {}", line(self.newest))?;
        let verdict = if self.ratio() >= 2.0 { "memorising the buffer" } else { "below 2: no sign of memorising" };
        write!(f, "ratio newest/oldest {:.2}: {verdict}", self.ratio())?;
        let Some(held) = &self.held_out else {
            return write!(f, "\nno held-out check: every game so far was played by one network");
        };
        writeln!(f, "\nnetwork {}, which played the newest games, {} positions each:", held.network, held.positions)?;
        writeln!(f, "its own games (never trained on): {}", line(held.unseen))?;
        writeln!(f, "the games before (trained on): {}", line(held.seen))?;
        let verdict = if held.wdl_ratio() >= 1.5 {
            "the value head memorises game outcomes (a uniform guess scores 1.099)"
        } else {
            "below 1.5: the value head carries over to new games"
        };
        write!(f, "wdl ratio unseen/seen {:.2}: {verdict}", held.wdl_ratio())
    }
}

/// Measures memorisation in the run at `location` with `positions`
/// positions from each end of its replay window, and as many (at most)
/// on each side of the held-out check, on `device`.
///
/// # Errors
/// An unreadable run, no network yet, a window too small, a backend error.
pub fn overfit_check(location: &Path, positions: usize, device: DeviceSpec) -> Result<OverfitReport> {
    let (config, dir) = open_run(location)?;
    let network = dir
        .read(LATEST)?
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .context("the run has no network yet (no LATEST)")?;
    let net_path = |name: &str| -> Result<std::path::PathBuf> {
        let key = keys::network(name);
        dir.local_copy(&key)?.with_context(|| format!("{key} is missing"))
    };
    let latest = net_path(&network).context("LATEST names a network that is missing")?;
    let check = Check { config: &config, latest: &latest, positions, device };
    let (oldest, newest, held) = for_game!(config.game.name, G => {
        let window = window::<G>(&config, &dir)?;
        // The network that played the newest games, if the window holds others' too.
        let player = window.last().map(|record| record.network.clone());
        let player = match player {
            Some(name) if window.iter().any(|record| record.network != name) => {
                let path = net_path(&name).context("the network that played the newest games")?;
                Some((name, path))
            }
            _ => None,
        };
        let held_out = player.as_ref().map(|(name, path)| (path.as_path(), name.as_str()));
        check.run::<G>(&window, held_out).map(|(oldest, newest, measured)| (oldest, newest, player.zip(measured)))
    })?;
    let held_out =
        held.map(|((network, _), (positions, unseen, seen))| HeldOutReport { network, positions, unseen, seen });
    Ok(OverfitReport { network, positions, oldest, newest, held_out })
}

/// The games of the run's replay window, oldest first: the newest its
/// committed iterations trained on.
fn window<G: NetGame>(config: &RunConfig, dir: &RunDir) -> Result<Vec<GameRecord<G>>> {
    let committed = CommitPoint::read(dir)?.map_or(0, |point| point.iteration);
    trained_games::<G>(dir, committed, config.buffer.window, config.train.value_target())
}

/// What the overfit check measures.
struct Check<'a> {
    config: &'a RunConfig,
    latest: &'a Path,
    positions: usize,
    device: DeviceSpec,
}

/// Losses on the window's oldest and newest positions; then, for the
/// held-out check, the positions measured and the losses on unseen and seen games.
type CheckOutput = Result<([f64; 3], [f64; 3], Option<(usize, [f64; 3], [f64; 3])>)>;

impl Check<'_> {
    /// The check on the window's games `window` (oldest first), and the
    /// held-out check with the network (its file and hash) that played the
    /// newest games.
    fn run<G: NetGame>(self, window: &[GameRecord<G>], player: Option<(&Path, &str)>) -> CheckOutput {
        let config = self.config;
        // The newest of `games` that hold `positions`, in a buffer.
        let buffer_of = |games: &[&GameRecord<G>], positions: usize| -> ReplayBuffer<G> {
            let value = config.train.value_target();
            let mut buffer = ReplayBuffer::<G>::new(positions, config.buffer.sampling, value);
            let (mut held, mut first) = (0, games.len());
            while first > 0 && held < positions {
                first -= 1;
                held += games[first].plies.iter().filter(|p| value.trains_on(p)).count();
            }
            for record in &games[first..] {
                buffer.push((*record).clone());
            }
            buffer
        };
        let weights = &config.optimizer.loss_weights;
        let net = Inference::load(self.latest, self.device)?;
        let all: Vec<&GameRecord<G>> = window.iter().collect();
        let window = buffer_of(&all, config.buffer.window);
        anyhow::ensure!(
            window.positions() / 2 >= self.positions.max(1),
            "the window holds {} positions: too few for {} at each end",
            window.positions(),
            self.positions
        );
        let mean = |net: &Inference, buffer: &ReplayBuffer<G>, range| -> Result<[f64; 3]> {
            let m = mean_losses(net, buffer, range, weights)?;
            Ok([m.policy, m.wdl, m.total])
        };
        let end = window.positions();
        let oldest = mean(&net, &window, 0..self.positions)?;
        let newest = mean(&net, &window, end - self.positions..end)?;
        let Some((player_path, player)) = player else {
            return Ok((oldest, newest, None));
        };
        let (own, before): (Vec<&GameRecord<G>>, Vec<&GameRecord<G>>) =
            all.iter().partition(|record| record.network == player);
        let (unseen, seen) = (buffer_of(&own, self.positions), buffer_of(&before, self.positions));
        let n = self.positions.min(unseen.positions()).min(seen.positions());
        if n == 0 {
            return Ok((oldest, newest, None));
        }
        let player = Inference::load(player_path, self.device)?;
        let last = |buffer: &ReplayBuffer<G>| buffer.positions() - n..buffer.positions();
        let unseen_losses = mean(&player, &unseen, last(&unseen))?;
        let seen_losses = mean(&player, &seen, last(&seen))?;
        Ok((oldest, newest, Some((n, unseen_losses, seen_losses))))
    }
}

/// A run directory and its saved config.
fn open_run(location: &Path) -> Result<(RunConfig, RunDir)> {
    let dir = RunDir::open(location)?;
    let text =
        dir.read(CONFIG)?.with_context(|| format!("{} holds no {CONFIG}: not a capa-train run", dir.location()))?;
    let text = String::from_utf8(text).with_context(|| format!("{CONFIG} is not text"))?;
    let config = RunConfig::parse(&text, &[]).with_context(|| format!("the {CONFIG} of {}", dir.location()))?;
    Ok((config, dir))
}
