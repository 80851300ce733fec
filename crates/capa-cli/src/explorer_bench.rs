//! `capa bench explorer`: the opening explorer's index on generated games.
//!
//! The games are played by random moves skewed towards the first legal
//! moves generated, so that, as in a real archive, some lines are popular
//! and most positions after the opening are unique. The start position is
//! the worst lookup: every game passes through it.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use capa_gui::{Explorer, GameMeta, IndexBuilder, LISTED_GAMES};
use capa_rules::GameKind;
use capa_rules::Rng;
use capa_rules::{Color, Game, MoveList};

/// What to generate and measure.
pub struct ExplorerBench<'a> {
    /// Games to index.
    pub games: u64,
    /// Plies per game at most (each game's length is drawn from half of it to all).
    pub max_plies: u32,
    /// Positions looked up.
    pub queries: usize,
    /// Where the index is written.
    pub dir: &'a Path,
    /// The memory the build holds at most, in bytes.
    pub memory: u64,
    /// The seed of the games and the queries.
    pub seed: u64,
    /// Look up in the index an earlier run with the same settings wrote,
    /// without writing it again (after dropping the page cache, the
    /// lookups read from the disk).
    pub reuse: bool,
}

/// Generates, indexes and looks up; prints the figures.
///
/// # Errors
/// The failure to write or read the index.
pub fn run<G: Game>(bench: &ExplorerBench, kind: GameKind) -> Result<()> {
    std::fs::create_dir_all(bench.dir).with_context(|| format!("cannot create {}", bench.dir.display()))?;
    let path = bench.dir.join(format!("bench-{}-{}-{}.explorer", bench.games, bench.max_plies, bench.seed));
    let reuse = bench.reuse && path.exists();
    let mut rng = Rng::new(bench.seed);
    let mut builder = IndexBuilder::<G>::new(bench.dir, bench.memory);
    let mut samples: Vec<G> = Vec::new();
    let mut legal = MoveList::new();
    let started = Instant::now();
    let mut plies = 0u64;
    for number in 0..bench.games {
        let length = bench.max_plies / 2 + (rng.next_u64() % u64::from(bench.max_plies / 2 + 1)) as u32;
        let start = G::startpos();
        let mut position = start.clone();
        let mut moves = Vec::with_capacity(length as usize);
        for ply in 0..length {
            position.legal_moves(&mut legal);
            if legal.is_empty() {
                break;
            }
            // Skewed: a cube of a uniform number favours the first moves.
            let pick = ((rng.uniform().powi(3)) * legal.len() as f64) as usize;
            // A few queries from each depth of the opening, fewer deeper.
            if (number as usize) < bench.queries && ply == (rng.next_u64() % 40) as u32 {
                samples.push(position.clone());
            }
            let m = legal[pick.min(legal.len() - 1)];
            position.play(m);
            moves.push(m);
        }
        plies += moves.len() as u64;
        let result = match rng.next_u64() % 3 {
            0 => Some(Some(Color::White)),
            1 => Some(None),
            _ => Some(Some(Color::Black)),
        };
        let meta = GameMeta {
            white: format!("white {number}"),
            black: format!("black {number}"),
            result,
            source: "generated".into(),
        };
        if !reuse {
            builder.add(&start, &moves, &meta);
        }
        if (number + 1) % 100_000 == 0 {
            eprintln!("generated {} games, {} plies, {:.0} s", number + 1, plies, started.elapsed().as_secs_f64());
        }
    }
    let generated = started.elapsed().as_secs_f64();
    let started = Instant::now();
    if !reuse {
        builder.write(&path, kind, bench.seed)?;
    }
    let written = started.elapsed().as_secs_f64();
    let explorer = Explorer::open(&path, bench.seed)?;
    let size = std::fs::metadata(&path)?.len();
    println!(
        "{} games, {} positions, generated in {generated:.1} s, {} in {written:.1} s, {:.0} MB on disk",
        explorer.games(),
        explorer.positions(),
        if reuse { "index reused" } else { "indexed" },
        size as f64 / 1e6
    );
    // The start position first (every game), then the samples.
    samples.insert(0, G::startpos());
    samples.truncate(bench.queries.max(1));
    let mut times = Vec::with_capacity(samples.len());
    let mut largest = 0;
    for position in &samples {
        let started = Instant::now();
        let lookup = explorer.lookup(position.hash())?;
        for &id in lookup.games.iter().take(LISTED_GAMES) {
            explorer.game(id)?;
        }
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        largest = largest.max(lookup.total);
    }
    let start_ms = times[0];
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "lookups {} (with their first {LISTED_GAMES} games): median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms; the start position ({largest} occurrences) {start_ms:.3} ms",
        times.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    Ok(())
}
