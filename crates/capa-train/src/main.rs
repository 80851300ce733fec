//! `capa-train --config run.toml`: self-play, replay buffer and training in
//! one loop, resumable.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use capa_train::{Finish, RunConfig, run};
use clap::Parser;

/// Trains a network by self-play: plays games with the newest network,
/// keeps their positions in a replay buffer, trains on them, saves a
/// checkpoint, and again. Stopped (Ctrl-C, SIGTERM, even kill -9) and
/// started again with the same config, it continues where it was.
#[derive(Parser, Debug)]
#[command(name = "capa-train", version)]
struct Cli {
    /// The run's TOML file (every key: configs/README.md).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Overrides one key of the file, e.g. `--set selfplay.games=32`; repeatable.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    sets: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match main_inner(&cli) {
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

fn main_inner(cli: &Cli) -> Result<Finish> {
    let config = RunConfig::load(&cli.config, &cli.sets)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).context("cannot install the signal handlers")?;
    }
    run(&config, &stop)
}
