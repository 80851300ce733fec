//! `capa perft` and `capa legal`: the rules, checked by hand.

use std::io::{self, Write};
use std::time::Instant;

use anyhow::{Context, Result};
use capa_rules::{Game, MoveList, divide, perft};

use crate::args::PositionArgs;

/// Count the leaves of the legal-move tree (last ply counted in bulk, as engines do).
///
/// Prints `move: count` per root move with --divide, then always a last line
/// `nodes N`; time and nodes/s go to stderr.
#[derive(clap::Args, Debug)]
pub struct PerftCommand {
    #[command(flatten)]
    pub position: PositionArgs,
    /// Plies to search (1 or more).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub depth: u32,
    /// One `move: count` line per root move, sorted by move.
    #[arg(long)]
    pub divide: bool,
}

impl PerftCommand {
    /// Counts and prints.
    ///
    /// # Errors
    /// A bad FEN, a closed stdout.
    pub fn run(self) -> Result<()> {
        capa_rules::for_game!(self.position.variant, G => run_perft(load::<G>(&self.position)?, self.depth, self.divide))
    }
}

/// List the legal moves in UCI notation, sorted, one per line.
///
/// When the position ends the game (mate, stalemate, 50 moves, insufficient
/// material), stderr says so.
#[derive(clap::Args, Debug)]
pub struct LegalCommand {
    #[command(flatten)]
    pub position: PositionArgs,
}

impl LegalCommand {
    /// Lists the moves.
    ///
    /// # Errors
    /// A bad FEN, a closed stdout.
    pub fn run(self) -> Result<()> {
        capa_rules::for_game!(self.position.variant, G => run_legal(&load::<G>(&self.position)?))
    }
}

fn load<G: Game>(args: &PositionArgs) -> Result<G> {
    match &args.fen {
        None => Ok(G::startpos()),
        Some(fen) => G::from_fen(fen).with_context(|| format!("cannot set up the {} position (--fen)", G::NAME)),
    }
}

fn run_perft<G: Game>(pos: G, depth: u32, split: bool) -> Result<()> {
    let start = Instant::now();
    let nodes = if split {
        let mut lines: Vec<(String, u64)> = divide(&pos, depth).into_iter().map(|(m, n)| (m.to_string(), n)).collect();
        lines.sort();
        let mut out = io::stdout().lock();
        for (m, n) in &lines {
            writeln!(out, "{m}: {n}")?;
        }
        lines.iter().map(|(_, n)| n).sum()
    } else {
        perft(&pos, depth)
    };
    let secs = start.elapsed().as_secs_f64();
    eprintln!("time {secs:.3} s, {:.0} nodes/s", nodes as f64 / secs.max(1e-9));
    writeln!(io::stdout(), "nodes {nodes}")?;
    Ok(())
}

fn run_legal<G: Game>(pos: &G) -> Result<()> {
    let mut moves = MoveList::new();
    pos.legal_moves(&mut moves);
    let mut names: Vec<String> = moves.iter().map(ToString::to_string).collect();
    names.sort();
    let mut out = io::stdout().lock();
    for name in names {
        writeln!(out, "{name}")?;
    }
    if let Some(outcome) = pos.outcome() {
        eprintln!("game over: {} ({:?} for the side to move)", outcome.reason, outcome.result);
    }
    Ok(())
}
