//! `capa-train --config run.toml`: self-play, replay buffer and training in
//! one loop, resumable; `capa-train arena`: two networks head to head.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use capa_mcts::SearchParams;
use capa_net::{BackendKind, DeviceSpec, GameKind, NetEvaluator, NetGame};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_train::{ArenaSettings, Finish, RunConfig, arena, run, work};
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
    /// Plays two network files against each other at an equal search
    /// budget (pairs of games from the same random opening, colours
    /// swapped) and prints the score and the Elo difference.
    Arena(ArenaArgs),
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

#[derive(Args, Debug)]
struct ArenaArgs {
    /// The first network file (the score is its).
    first: PathBuf,
    /// The second network file.
    second: PathBuf,
    /// `capablanca` or `chess` (the networks must play it).
    #[arg(long, default_value = "capablanca")]
    game: String,
    /// Games (rounded up to an even number).
    #[arg(long, default_value_t = 100)]
    games: u32,
    /// Playouts per move for both.
    #[arg(long, default_value_t = 64)]
    simulations: u32,
    /// Leaves a game gathers per round of its search.
    #[arg(long, default_value_t = 8)]
    parallel_sims: u16,
    /// Random plies that open each pair of games.
    #[arg(long, default_value_t = 6)]
    random_plies: u32,
    /// Plies after which a game is a draw.
    #[arg(long, default_value_t = 300)]
    ply_cap: u32,
    /// Seeds the openings.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// `cpu`, `wgpu` or `cuda`.
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// The device's index.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Arena(args)) => run_arena(args).map(|()| Finish::Completed),
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

fn run_arena(args: &ArenaArgs) -> Result<()> {
    let game: GameKind = match args.game.as_str() {
        "capablanca" => GameKind::Capablanca,
        "chess" => GameKind::Chess,
        other => bail!("--game {other}: use capablanca or chess"),
    };
    let backend: BackendKind = args.backend.parse().map_err(|e| anyhow::anyhow!("--backend: {e}"))?;
    if args.simulations == 0 || args.games == 0 {
        bail!("--games and --simulations must be at least 1");
    }
    let settings = ArenaSettings {
        games: args.games,
        simulations: args.simulations,
        random_plies: args.random_plies,
        ply_cap: args.ply_cap.max(1),
        seed: args.seed,
        params: SearchParams { parallel_sims: args.parallel_sims.clamp(1, 8192), ..SearchParams::default() },
    };
    let spec = DeviceSpec { backend, index: args.device };
    match game {
        GameKind::Capablanca => play_arena::<Capablanca>(args, spec, &settings),
        GameKind::Chess => play_arena::<Chess>(args, spec, &settings),
    }
}

fn play_arena<G: NetGame>(args: &ArenaArgs, spec: DeviceSpec, settings: &ArenaSettings) -> Result<()> {
    let load = |path: &PathBuf| {
        NetEvaluator::<G>::from_file(path, spec).with_context(|| format!("cannot load {}", path.display()))
    };
    let (first, second) = (load(&args.first)?, load(&args.second)?);
    let score = arena::<G, _, _>(&first, &second, settings, |score| {
        eprint!("\r{} games: +{} ={} -{}   ", score.games(), score.wins, score.draws, score.losses);
    })?;
    eprintln!();
    let (elo, low, high) = score.elo();
    println!(
        "{} vs {}: +{} ={} -{} of {} games, score {:.1}%, Elo {elo:+.0} (95%: {low:+.0} to {high:+.0}) at {} playouts per move",
        args.first.display(),
        args.second.display(),
        score.wins,
        score.draws,
        score.losses,
        score.games(),
        100.0 * score.fraction(),
        settings.simulations
    );
    Ok(())
}
