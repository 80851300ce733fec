//! What a run's data says about its health, read from the run directory
//! alone: `capa buffer-stats` (results, endings, lengths, value targets of
//! the replay window) and `capa overfit-check` (the newest network's losses
//! on the window's oldest positions against its newest).

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

use anyhow::{Context, Result};
use burn::prelude::*;
use capa_data::Ending;
use capa_net::{BackendTask, CapaAutodiffBackend, DeviceSpec, GameKind, NetGame, burn, load_net, losses, with_backend};
use capa_rules::Color;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;

use crate::buffer::ReplayBuffer;
use crate::config::RunConfig;
use crate::run::{list_games, to_tensors, window_games};
use crate::rundir::RunDir;

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
    match config.game.name {
        GameKind::Capablanca => summarise::<Capablanca>(&config, &dir),
        GameKind::Chess => summarise::<Chess>(&config, &dir),
    }
}

fn summarise<G: NetGame>(config: &RunConfig, dir: &RunDir) -> Result<BufferStats> {
    let files = list_games(dir)?;
    let games = window_games::<G>(config, dir, &files)?;
    let mut stats = BufferStats { run_games: files.len(), games: games.len(), ..BufferStats::default() };
    let mut lengths: Vec<usize> = Vec::with_capacity(games.len());
    for record in &games {
        stats.white_draw_black[match record.winner {
            Some(Color::White) => 0,
            None => 1,
            Some(Color::Black) => 2,
        }] += 1;
        let ending = match record.ending {
            Ending::Resignation => "resignation".to_string(),
            Ending::Rules(termination) => termination.to_string(),
        };
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
        write!(f, "ratio newest/oldest {:.2}: {verdict}", self.ratio())
    }
}

/// Measures memorisation in the run at `location` with `positions`
/// positions from each end of its replay window, on `device`.
///
/// # Errors
/// An unreadable run, no network yet, a window too small, a backend error.
pub fn overfit_check(location: &Path, positions: usize, device: DeviceSpec) -> Result<OverfitReport> {
    let (config, dir) = open_run(location)?;
    let network = dir
        .read("LATEST")?
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .context("the run has no network yet (no LATEST)")?;
    let key = format!("nets/{network}.safetensors");
    let path = dir.local_copy(&key)?.with_context(|| format!("LATEST names {key}, which is missing"))?;
    struct Check<'a, G> {
        config: &'a RunConfig,
        dir: &'a RunDir,
        path: &'a Path,
        positions: usize,
        _game: PhantomData<G>,
    }
    impl<G: NetGame> BackendTask for Check<'_, G> {
        type Output = Result<([f64; 3], [f64; 3])>;
        fn run<B: CapaAutodiffBackend>(self, device: B::Device) -> Self::Output {
            let net = load_net::<B::InnerBackend>(self.path, &device)?;
            let mut buffer = ReplayBuffer::<G>::new(
                self.config.buffer.window,
                self.config.buffer.sampling,
                self.config.train.value_q_weight,
            );
            for record in window_games::<G>(self.config, self.dir, &list_games(self.dir)?)? {
                buffer.push(record);
            }
            let available = buffer.positions() / 2;
            anyhow::ensure!(
                available >= self.positions.max(1),
                "the window holds {} positions: too few for {} at each end",
                buffer.positions(),
                self.positions
            );
            let weights = &self.config.optimizer.loss_weights;
            let end = buffer.positions();
            let measure = |range: std::ops::Range<usize>| -> [f64; 3] {
                let mut sums = [0.0; 3];
                for start in range.clone().step_by(BATCH) {
                    let chunk = start..(start + BATCH).min(range.end);
                    let size = chunk.len() as f64;
                    let (planes, targets) = to_tensors::<B::InnerBackend, G>(buffer.encode_range(chunk), &device);
                    let output = net.forward(planes, true);
                    let l = losses(output, targets, weights);
                    let scalar = |t: Tensor<B::InnerBackend, 1>| f64::from(t.into_scalar().elem::<f32>());
                    sums[0] += size * scalar(l.policy);
                    sums[1] += size * scalar(l.wdl);
                    sums[2] += size * scalar(l.total);
                }
                sums.map(|s| s / range.len() as f64)
            };
            Ok((measure(0..self.positions), measure(end - self.positions..end)))
        }
    }
    let check = |positions| -> Result<([f64; 3], [f64; 3])> {
        match config.game.name {
            GameKind::Capablanca => with_backend(
                device,
                Check::<Capablanca> { config: &config, dir: &dir, path: &path, positions, _game: PhantomData },
            )?,
            GameKind::Chess => with_backend(
                device,
                Check::<Chess> { config: &config, dir: &dir, path: &path, positions, _game: PhantomData },
            )?,
        }
    };
    let (oldest, newest) = check(positions)?;
    Ok(OverfitReport { network, positions, oldest, newest })
}

/// Positions per forward pass of the overfit check.
const BATCH: usize = 256;

/// A run directory and its saved config.
fn open_run(location: &Path) -> Result<(RunConfig, RunDir)> {
    let dir = RunDir::open(location)?;
    let text = dir
        .read("config.toml")?
        .with_context(|| format!("{} holds no config.toml: not a capa-train run", dir.location()))?;
    let text = String::from_utf8(text).context("config.toml is not text")?;
    let config = RunConfig::parse(&text, &[]).with_context(|| format!("the config.toml of {}", dir.location()))?;
    Ok((config, dir))
}
