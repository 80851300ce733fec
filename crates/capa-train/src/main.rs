//! `capa-train --config run.toml`: self-play, replay buffer and training in
//! one loop, resumable; `capa-train selfplay`: a self-play worker;
//! `capa-train check`: the run checked; `capa-train unlock`: a gone
//! trainer's lock broken.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use capa_train::cli::{Cli, Command, RunArgs};
use capa_train::{Finish, RunConfig, run, work};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    capa_train::cli::init_logging();
    let result = match &cli.command {
        Some(Command::Selfplay(args)) => {
            load(&args.run).and_then(|(config, stop)| work(&config, &args.worker, args.games, &stop))
        }
        Some(Command::Check(args)) => {
            let started = std::time::Instant::now();
            return match load(&args.run).and_then(|(config, _)| capa_train::check(&config, args.state.as_deref())) {
                Ok(report) => {
                    eprintln!("checked in {:.2} s: {}", started.elapsed().as_secs_f64(), report.traffic);
                    for note in &report.notes {
                        println!("note: {note}");
                    }
                    for problem in &report.problems {
                        println!("problem: {problem}");
                    }
                    println!("{}", report.summary());
                    if report.problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) }
                }
                Err(e) => capa_train::cli::exit_code(&e),
            };
        }
        Some(Command::Unlock(args)) => {
            return match load(args).and_then(|(config, _)| capa_rundir::RunDir::open(&config.run.dir)?.break_lock()) {
                Ok(done) => {
                    println!("{done}");
                    ExitCode::SUCCESS
                }
                Err(e) => capa_train::cli::exit_code(&e),
            };
        }
        None => load(&cli.run).and_then(|(config, stop)| run(&config, &stop)),
    };
    match result {
        Ok(Finish::Completed) => ExitCode::SUCCESS,
        Ok(Finish::Interrupted) => {
            eprintln!("stopped; run the same command again to continue");
            ExitCode::from(130)
        }
        Err(e) => capa_train::cli::exit_code(&e),
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
