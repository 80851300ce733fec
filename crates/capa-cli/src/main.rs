//! `capa`: the command line around capa's crates.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, MoveList, divide, perft};
use clap::{Parser, Subcommand, ValueEnum};

/// capa: an AlphaZero-style training framework for Capablanca chess and chess.
#[derive(Parser, Debug)]
#[command(name = "capa", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Count the leaves of the legal-move tree (last ply counted in bulk, as engines do).
    ///
    /// Prints `move: count` per root move with --divide, then always a last line
    /// `nodes N`; time and nodes/s go to stderr.
    Perft {
        #[command(flatten)]
        position: PositionArgs,
        /// Plies to search (1 or more).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
        depth: u32,
        /// One `move: count` line per root move, sorted by move.
        #[arg(long)]
        divide: bool,
    },
    /// List the legal moves in UCI notation, sorted, one per line.
    ///
    /// When the position ends the game (mate, stalemate, 50 moves, insufficient
    /// material), stderr says so.
    Legal {
        #[command(flatten)]
        position: PositionArgs,
    },
}

#[derive(clap::Args, Debug)]
struct PositionArgs {
    /// The game: `capablanca` (10x8) or `chess`.
    #[arg(long, value_enum)]
    variant: Variant,
    /// The position as FEN; the variant's start position when absent.
    #[arg(long)]
    fen: Option<String>,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
enum Variant {
    Capablanca,
    Chess,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`capa legal ... | head`) is not a failure.
        Err(err)
            if err
                .chain()
                .any(|e| e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)) =>
        {
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Perft { position, depth, divide } => match position.variant {
            Variant::Capablanca => run_perft(load::<Capablanca>(&position)?, depth, divide),
            Variant::Chess => run_perft(load::<Chess>(&position)?, depth, divide),
        },
        Command::Legal { position } => match position.variant {
            Variant::Capablanca => run_legal(&load::<Capablanca>(&position)?),
            Variant::Chess => run_legal(&load::<Chess>(&position)?),
        },
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
