//! `capa-train`'s arguments, and what both binaries, `capa` and
//! `capa-train`, do the same way around their work: logging, and the exit
//! code an error becomes.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

/// Trains a network by self-play: plays games with the newest network,
/// keeps their positions in a replay buffer, trains on them, saves a
/// checkpoint, and again. Stopped (Ctrl-C, SIGTERM, even kill -9) and
/// started again with the same config, it continues where it was.
#[derive(Parser, Debug)]
#[command(name = "capa-train", version, args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Cli {
    /// A worker instead of the trainer.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The trainer's config.
    #[command(flatten)]
    pub run: RunArgs,
}

/// The run: its config file and overrides.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The run's TOML file (every key: configs/README.md).
    #[arg(long, value_name = "FILE", required = true)]
    pub config: Option<PathBuf>,
    /// Overrides one key of the file, e.g. `--set selfplay.games=32`; repeatable.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub sets: Vec<String>,
}

/// What `capa-train` runs besides the trainer.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// A self-play worker: plays with the newest network in the run
    /// directory and writes its games there, reloading when the trainer
    /// publishes a new network, until Ctrl-C. The trainer, started with
    /// `selfplay.local = false`, trains on what workers write.
    Selfplay(WorkerArgs),
    /// Check the run: the commit point and its checkpoint, every network
    /// file against the hash it is named by, a metrics line for each
    /// committed iteration, every game file whole, no game trained on
    /// twice, no gap or repeat in a worker's game numbers.
    /// Prints each problem, a note for each temporary file (a write in
    /// progress, or a dead writer's, which the trainer's next start
    /// removes), and a summary; exits 1 when there is a problem. With
    /// `--state FILE`, checks only what is new since the check that wrote
    /// the file.
    Check(CheckArgs),
    /// Break the run lock of a trainer that is gone. On an object store,
    /// removes the trainer's lease (`LOCK`), unless its holder is a
    /// process still running on this machine; a trainer that still runs
    /// elsewhere stops at its next renewal. Needed only when a trainer's
    /// machine died: a lease goes stale by itself 90 s after its last
    /// renewal, and a local run's lock ends with its process.
    Unlock(RunArgs),
}

/// `capa-train check`'s arguments.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The run's config.
    #[command(flatten)]
    pub run: RunArgs,
    /// Where this check stood, kept for the next: a check given a file that
    /// a clean check wrote checks only what is new since (each writer's
    /// games past the last checked, the iterations since, the networks
    /// their lines name), so that its cost follows the run's news, not its
    /// size; a missing file means the whole run. Written back only when
    /// nothing is wrong. One file per run.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
}

/// A self-play worker's arguments.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The run's config.
    #[command(flatten)]
    pub run: RunArgs,
    /// This worker's name in its game files' names (letters, digits, - and _); a run refuses a
    /// second worker of a name in use.
    #[arg(long, default_value = "worker")]
    pub worker: String,
    /// Stop after this many games (default: until Ctrl-C).
    #[arg(long)]
    pub games: Option<u64>,
}

/// `capa-train`'s command line, for the generated reference.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Sends diagnostics (`tracing`'s events) to stderr, filtered by
/// `RUST_LOG` (`info` when unset: warnings and progress notes, no debug
/// detail), without timestamps: a person reads them, and the per-iteration
/// summary lines carry their own figures.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .without_time()
        .with_target(false)
        .try_init();
}

/// The exit code of a command that failed with `error`: success when the
/// reader of its output went away (`capa legal ... | head`), otherwise 2
/// after printing the error with its causes.
pub fn exit_code(error: &anyhow::Error) -> ExitCode {
    let closed_pipe =
        error.chain().any(|e| e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe));
    if closed_pipe {
        return ExitCode::SUCCESS;
    }
    eprintln!("error: {error:#}");
    let disk_full =
        error.chain().any(|e| e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::StorageFull));
    if disk_full {
        eprintln!(
            "the disk is full: free some space and run the same command again (files are written whole or not at \
             all, so nothing was left half-written)"
        );
    }
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(line.split_whitespace())
    }

    #[test]
    fn the_trainer_and_the_worker_take_their_flags() {
        let cli = parse("capa-train --config run.toml --set selfplay.games=8 --set run.seed=3").unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.config, Some(PathBuf::from("run.toml")));
        assert_eq!(cli.run.sets, ["selfplay.games=8", "run.seed=3"]);
        let cli = parse("capa-train selfplay --config run.toml --worker w1 --games 5").unwrap();
        let Some(Command::Selfplay(worker)) = cli.command else { panic!("not a worker") };
        assert_eq!((worker.worker.as_str(), worker.games), ("w1", Some(5)));
        for refused in [
            "capa-train",
            "capa-train --set a.b=1",
            "capa-train selfplay",
            "capa-train selfplay --config r.toml --games x",
            "capa-train --config r.toml selfplay --config r.toml",
            "capa-train --config r.toml --bogus",
        ] {
            assert!(parse(refused).is_err(), "{refused} was accepted");
        }
    }
}
