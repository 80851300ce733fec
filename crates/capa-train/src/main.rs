//! `capa-train --config run.toml`: self-play, replay buffer and training in
//! one loop, resumable; `capa-train selfplay`: a self-play worker.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use capa_train::{Finish, RunConfig, run, work};
use clap::{Args, Parser, Subcommand};

/// Trains a network by self-play: plays games with the newest network,
/// keeps their positions in a replay buffer, trains on them, saves a
/// checkpoint, and again. Stopped (Ctrl-C, SIGTERM, even kill -9) and
/// started again with the same config, it continues where it was.
#[derive(Parser, Debug)]
#[command(name = "capa-train", version, args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The run's TOML file (every key: configs/README.md).
    #[arg(long, value_name = "FILE", required = true)]
    config: Option<PathBuf>,
    /// Overrides one key of the file, e.g. `--set selfplay.games=32`; repeatable.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// A self-play worker: plays with the newest network in the run
    /// directory and writes its games there, reloading when the trainer
    /// publishes a new network, until Ctrl-C. The trainer, started with
    /// `selfplay.local = false`, trains on what workers write.
    Selfplay(WorkerArgs),
}

#[derive(Args, Debug)]
struct WorkerArgs {
    #[command(flatten)]
    run: RunArgs,
    /// This worker's name in its game files' names (letters, digits, - and _).
    #[arg(long, default_value = "worker")]
    worker: String,
    /// Stop after this many games (default: until Ctrl-C).
    #[arg(long)]
    games: Option<u64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Selfplay(args)) => {
            load(&args.run).and_then(|(config, stop)| work(&config, &args.worker, args.games, &stop))
        }
        None => load(&cli.run).and_then(|(config, stop)| run(&config, &stop)),
    };
    match result {
        Ok(Finish::Completed) => ExitCode::SUCCESS,
        Ok(Finish::Interrupted) => {
            eprintln!("stopped; run the same command again to continue");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The config, and a flag that Ctrl-C and SIGTERM raise.
fn load(args: &RunArgs) -> Result<(RunConfig, Arc<AtomicBool>)> {
    let path = args.config.as_ref().context("--config FILE is required")?;
    let config = RunConfig::load(path, &args.sets)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).context("cannot install the signal handlers")?;
    }
    Ok((config, stop))
}
