//! `capa`: the command line around capa's crates.

mod bench;
mod diagnostics;
mod distill;
mod elo;
mod lc0;
mod lc0_archive;
mod matches;
mod play;
mod uci;

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

// Parsed once per run: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
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
    /// Run as a UCI engine on stdin and stdout: a network and the search.
    ///
    /// The network decides the game (announced as `UCI_Variant`). Options:
    /// Threads (sizes the thread pool when the network first loads), MultiPV,
    /// UCI_ShowWDL, VerboseMoveStats (an `info string` per root move: prior,
    /// visits, Q, D, M), CPuct, Contempt (draw aversion, -1 to 1),
    /// ProveMateInOne (a position where the side to move mates at once is
    /// proven lost for the side that moved into it; on by default),
    /// Temperature (0 plays the most visited move), MinibatchSize (leaves
    /// per network batch, 32), MoveOverhead (ms kept back from each move's
    /// time), Backend and Device (the network reloads on the next `isready`
    /// or `go`). Limits: `go nodes`, `movetime`, `wtime/btime/winc/binc
    /// [movestogo]`, `infinite`; `depth` and `mate` search 800 playouts.
    /// Lines the engine cannot use are answered with `info string`.
    Uci {
        /// The network file: a run's `nets/<hash>.safetensors`, or any
        /// network or checkpoint capa wrote.
        #[arg(long)]
        net: std::path::PathBuf,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// Play games between two players and measure the Elo difference.
    ///
    /// A player is a network file (`.safetensors`, played through `capa uci`)
    /// or a UCI engine command (`fairy-stockfish`, `stockfish`, `sjaakii`...).
    /// Games come in pairs from one opening with the colours swapped. Each
    /// game's line goes to stderr; the last line on stdout is
    /// `A vs B: +W =D -L of N games, score S%, Elo E (95%: LOW to HIGH), T s`
    /// (from A's side), followed by the SPRT's line with --sprt.
    Match {
        /// Player A: a network file or a UCI engine command.
        a: String,
        /// Player B: a network file or a UCI engine command.
        b: String,
        /// Games to play (rounded up to an even number).
        #[arg(long, default_value_t = 100)]
        games: u32,
        #[command(flatten)]
        limit: LimitArgs,
        /// The game, needed when neither player is a network.
        #[arg(long, value_enum)]
        variant: Option<Variant>,
        /// Openings, one per line: UCI moves from the start position, or a
        /// FEN optionally followed by `moves ...`; `#` starts a comment. They
        /// are used in turn, each for a pair of games.
        #[arg(long)]
        openings: Option<std::path::PathBuf>,
        /// Without --openings: plies of uniformly random moves that start each pair.
        #[arg(long, default_value_t = 6)]
        random_plies: u32,
        /// Seeds the random openings.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Games played at once, each with its own two engine processes.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Write the games here as PGN (rewritten after each game).
        #[arg(long)]
        pgn: Option<std::path::PathBuf>,
        /// Stop once a sequential probability ratio test decides:
        /// `ELO0,ELO1` or `ELO0,ELO1,ALPHA,BETA` (alpha and beta default to 0.05).
        #[arg(long, value_parser = matches::parse_sprt, allow_hyphen_values = true)]
        sprt: Option<capa_data::Sprt>,
        /// Plies after which a game is a draw; 0 leaves it to the rules.
        #[arg(long, default_value_t = 0)]
        ply_cap: u32,
        /// A UCI option for player A, `NAME=VALUE` (repeatable), e.g. `UCI_Elo=1500`.
        #[arg(long = "option-a", value_parser = matches::parse_option)]
        option_a: Vec<(String, String)>,
        /// A UCI option for player B, `NAME=VALUE` (repeatable).
        #[arg(long = "option-b", value_parser = matches::parse_option)]
        option_b: Vec<(String, String)>,
        /// Seconds an engine may take to answer, beyond a move's own time;
        /// one that takes longer loses the game.
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// A network's Elo on a UCI engine's `UCI_Elo` scale, by bisection.
    ///
    /// Sets the engine (with UCI_LimitStrength) to the middle of a bracket,
    /// its advertised UCI_Elo range by default, plays --games games, keeps
    /// the half the score points to, and stops once the bracket is narrower
    /// than --tolerance, a probe scores 45% to 55%, or after --max-probes.
    /// Prints `probe N: UCI_Elo E: +W =D -L, score S%, estimate X` per probe
    /// (X = E - 400 log10(1/S - 1)), then `Elo X (95%: LOW to HIGH) ...`: the
    /// strength that makes all probes' results most likely; `Elo at most
    /// HIGH (95%)` when every game was lost (`at least LOW` when every game
    /// was won). The network decides the game.
    Elo {
        /// The network file.
        #[arg(long)]
        net: std::path::PathBuf,
        /// The engine command; it needs UCI_LimitStrength and UCI_Elo.
        #[arg(long, default_value = "fairy-stockfish")]
        engine: String,
        /// Games per probe (rounded up to an even number).
        #[arg(long, default_value_t = 20)]
        games: u32,
        #[command(flatten)]
        limit: LimitArgs,
        /// The bracket's lower end (default: the engine's UCI_Elo minimum).
        #[arg(long)]
        low: Option<f64>,
        /// The bracket's upper end (default: the engine's UCI_Elo maximum).
        #[arg(long)]
        high: Option<f64>,
        /// Stop once the bracket is at most this many Elo wide.
        #[arg(long, default_value_t = 50.0)]
        tolerance: f64,
        /// Probes at most.
        #[arg(long, default_value_t = 8)]
        max_probes: u32,
        /// A further UCI option for the engine, `NAME=VALUE` (repeatable).
        #[arg(long = "option", value_parser = matches::parse_option)]
        options: Vec<(String, String)>,
        /// Plies of uniformly random moves that start each pair of games.
        #[arg(long, default_value_t = 6)]
        random_plies: u32,
        /// Seeds the openings (probe i uses SEED + i).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Games played at once.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Seconds an engine may take to answer beyond the move's own time.
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// Play a network in the terminal, or one move per call with --state.
    ///
    /// In the terminal: the board is drawn after every move; type a move in
    /// UCI (`e2e4`) or SAN (`Nf3`), `moves` for the legal moves, `undo` to
    /// take back your last move and the reply, `quit` to stop. With
    /// --state FILE: each call plays --move (if given), then the network's
    /// reply, saves the game to FILE and prints the board, then
    /// `bestmove M`, and `result R (how)` once the game is over; a missing
    /// FILE starts a new game (from --fen if given).
    Play {
        /// The network file; its game is the game played.
        #[arg(long)]
        net: std::path::PathBuf,
        /// Playouts per move of the network.
        #[arg(long, default_value_t = 800)]
        nodes: u32,
        /// Your colour in the terminal: `white` or `black`.
        #[arg(long, default_value = "white", value_parser = parse_color)]
        color: capa_rules::Color,
        /// The start position (FEN); the game's own when absent.
        #[arg(long)]
        fen: Option<String>,
        /// Keep the game in this file and play one move per call.
        #[arg(long)]
        state: Option<std::path::PathBuf>,
        /// With --state: your move (UCI or SAN), played before the network's.
        #[arg(long = "move")]
        mv: Option<String>,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// How peaked each network's policy is: the mean, over positions of
    /// seeded random games (up to 60 plies), of the largest prior times the
    /// number of legal moves. 1.0 means uniform; a trained network scores
    /// well above. One line per network.
    PolicyHealth {
        /// Network files.
        #[arg(required = true)]
        nets: Vec<std::path::PathBuf>,
        /// Positions to measure on.
        #[arg(long, default_value_t = 512)]
        positions: usize,
        /// Seeds the random games (the same positions for every network).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// The replay window of a run (the newest games that fill
    /// `buffer.window`): results, endings, game lengths, and the value
    /// targets' win/draw/loss shares for the side to move.
    BufferStats {
        /// The run directory (a path, or an s3://, gs://, az:// URL).
        run: std::path::PathBuf,
    },
    /// Whether training memorises the buffer: the newest network's losses
    /// on the oldest and on the newest positions of the replay window. A
    /// newest/oldest ratio of 2 or more means memorising.
    OverfitCheck {
        /// The run directory (a path, or an s3://, gs://, az:// URL).
        run: std::path::PathBuf,
        /// Positions at each end of the window.
        #[arg(long, default_value_t = 2048)]
        positions: usize,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// Lc0 V6 training data: convert PGN games (static, comment or engine
    /// evals), finish adjudicated games, rescore with tablebases, dedup,
    /// pack, verify, and fit the WDL model.
    Lc0 {
        #[command(subcommand)]
        what: lc0::Lc0Command,
    },
    /// Distillation from a UCI engine (Stockfish, Fairy-Stockfish).
    Distill {
        #[command(subcommand)]
        what: DistillCommand,
    },
    /// Measure a component; benches/ compares the figures with real peers.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Subcommand, Debug)]
enum DistillCommand {
    /// Generate teacher data: the engine plays itself at a fixed depth and,
    /// before every move, reports its --multipv best moves with their
    /// scores. One file per game in --out (`000000.teacher`, ...), written
    /// atomically, with the settings in `generation.txt`.
    ///
    /// Every position is analysed, the opening's too; the opening's moves
    /// are played as given, then the engine's best move. Prints a last line
    /// `G games, P positions in T s: R positions/s, R/W per worker; ...`.
    Gen {
        /// The engine command, e.g. `stockfish` (chess) or `fairy-stockfish`.
        #[arg(long)]
        engine: String,
        /// The game.
        #[arg(long, value_enum)]
        variant: Variant,
        /// Games the output holds when done (with --resume: the total, old ones included).
        #[arg(long)]
        games: usize,
        /// Search depth per position (`go depth`).
        #[arg(long, default_value_t = 10)]
        depth: u32,
        /// Candidates per position (the engine's `MultiPV`).
        #[arg(long, default_value_t = 8)]
        multipv: u32,
        /// Engine processes at once, one thread each.
        #[arg(long, default_value_t = 1)]
        workers: usize,
        /// The output folder: new or empty, or an earlier generation with --resume.
        #[arg(long)]
        out: std::path::PathBuf,
        /// Without --openings: uniformly random plies that start each game (game i's
        /// are drawn from --seed and i, so a resume replays the same openings).
        #[arg(long, default_value_t = 8)]
        random_plies: u32,
        /// Openings, one per line: UCI moves from the start position, or a FEN
        /// optionally followed by `moves ...`; `#` starts a comment. Game i uses line i,
        /// round robin.
        #[arg(long)]
        openings: Option<std::path::PathBuf>,
        /// Seeds the random openings.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Plies after which a game is a draw; 0 leaves it to the rules.
        #[arg(long, default_value_t = 400)]
        ply_cap: u32,
        /// The engine's hash table in MiB (when it has a `Hash` option).
        #[arg(long, default_value_t = 16)]
        hash: u32,
        /// Another UCI option for the engine, `NAME=VALUE` (repeatable).
        #[arg(long = "option", value_parser = matches::parse_option)]
        options: Vec<(String, String)>,
        /// Continue the generation in --out: play the games whose files are missing,
        /// after checking that the settings are the same.
        #[arg(long)]
        resume: bool,
        /// Seconds the engine may take to answer before it counts as hung.
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
    },
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Search from the start position with a free evaluator (pseudo-random
    /// priors and values from the position's hash, as Lc0's `random` backend).
    ///
    /// Prints a summary line, then a last line
    /// `nodes N cpu_s S nodes_per_cpu_s R bytes_per_node B`
    /// (CPU time of all threads, the evaluator's included; bytes of the
    /// trees' nodes, edges and child slots per node).
    Search {
        /// The game: `capablanca` (10x8) or `chess`.
        #[arg(long, value_enum)]
        variant: Variant,
        /// Playouts in all, split evenly over the games.
        #[arg(long, default_value_t = 200_000)]
        nodes: u32,
        /// Leaves each game gathers per round (its share of the network batch).
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..=i64::from(capa_mcts::MAX_PER_ROUND)))]
        batch: u16,
        /// Threads selecting and backing up (the evaluator has its own).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: u16,
        /// Games searched together; by default one per thread.
        #[arg(long)]
        games: Option<usize>,
        /// Pipelined groups: while the evaluator works on one group's batch
        /// the threads select and back up the others.
        #[arg(long, default_value_t = 1)]
        groups: usize,
        /// Nanoseconds the fake evaluator sleeps per leaf of each batch, to
        /// stand in for a network on a device (it uses no CPU meanwhile).
        #[arg(long, default_value_t = 0)]
        eval_ns_per_leaf: u64,
    },
    /// Time `capa lc0 convert` on PGN files: each stage on one thread
    /// (parsing, SAN to moves, conversion, gzip), then the whole
    /// conversion to files with 1 and 2 threads.
    ///
    /// Prints a line per stage, then a last line
    /// `parse P replay R convert C gzip G files_t1 F1 files_t2 F2` (positions per second).
    Lc0 {
        /// PGN files (plain, .gz, .zst), read into memory first.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Times the files are repeated, for a longer measurement.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
    },
    /// Time the network: inference at batch 1, 32 and --batch, and training
    /// steps (forward, losses, backward, AdamW) at --batch, on fresh weights.
    ///
    /// Prints a line per case, then a last line
    /// `infer_b1 X infer_b32 Y infer_bN Z train_bN W` (positions per second, wall clock; median call).
    Net {
        /// The architecture: `small` (64 channels, 4 blocks, 1 transformer
        /// block) or `typical` (256 channels, 15 blocks, 4 transformer blocks, 8 heads).
        #[arg(long, default_value = "small")]
        size: String,
        /// The game, which sets the input planes, board and policy width.
        #[arg(long, value_enum, default_value = "capablanca")]
        variant: Variant,
        #[command(flatten)]
        device: DeviceArgs,
        /// The large batch, for inference and training.
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
        batch: u32,
        /// Minimum seconds per measurement; each takes at least three calls after a warm-up call.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
}

/// Where a network runs.
#[derive(clap::Args, Debug)]
struct DeviceArgs {
    /// The backend: `cpu`, `wgpu` or `cuda` (the last two need the cargo features of the same name).
    #[arg(long, default_value = "cpu")]
    backend: capa_net::BackendKind,
    /// The device's index on the backend.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

impl DeviceArgs {
    fn spec(&self) -> capa_net::DeviceSpec {
        capa_net::DeviceSpec { backend: self.backend, index: self.device }
    }
}

/// How long each move of a match may take; one of the three.
#[derive(clap::Args, Debug)]
#[group(multiple = false)]
struct LimitArgs {
    /// Nodes per move (`go nodes`; playouts for a network). The default
    /// limit when none is given: 800.
    #[arg(long)]
    nodes: Option<u64>,
    /// Milliseconds per move (`go movetime`).
    #[arg(long)]
    movetime: Option<u64>,
    /// A clock per game and player: `BASE+INC` in seconds, such as `10+0.1`.
    /// Running out of time loses.
    #[arg(long, value_parser = matches::parse_clock)]
    tc: Option<matches::MoveLimit>,
}

impl LimitArgs {
    fn limit(&self) -> Result<matches::MoveLimit> {
        Ok(match (self.nodes, self.movetime, self.tc) {
            (Some(0), ..) | (_, Some(0), _) => anyhow::bail!("--nodes and --movetime must be at least 1"),
            (Some(n), ..) => matches::MoveLimit::Nodes(n),
            (_, Some(ms), _) => matches::MoveLimit::MoveTime(ms),
            (_, _, Some(clock)) => clock,
            _ => matches::MoveLimit::Nodes(800),
        })
    }
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

impl Variant {
    fn kind(self) -> capa_net::GameKind {
        match self {
            Variant::Capablanca => capa_net::GameKind::Capablanca,
            Variant::Chess => capa_net::GameKind::Chess,
        }
    }
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
        Command::Bench {
            what: BenchCommand::Search { variant, nodes, batch, threads, games, groups, eval_ns_per_leaf },
        } => {
            let threads = usize::from(threads);
            let args = bench::SearchBench {
                nodes,
                batch,
                threads,
                games: games.unwrap_or(threads),
                groups,
                eval_per_leaf: std::time::Duration::from_nanos(eval_ns_per_leaf),
            };
            match variant {
                Variant::Capablanca => bench::search::<Capablanca>(&args),
                Variant::Chess => bench::search::<Chess>(&args),
            }
        }
        Command::Match {
            a,
            b,
            games,
            limit,
            variant,
            openings,
            random_plies,
            seed,
            concurrency,
            pgn,
            sprt,
            ply_cap,
            option_a,
            option_b,
            timeout,
            device,
        } => matches::run(&matches::MatchArgs {
            players: [a, b],
            options: [option_a, option_b],
            variant: variant.map(Variant::kind),
            games,
            openings,
            random_plies,
            seed,
            concurrency,
            pgn,
            sprt,
            ply_cap,
            timeout: seconds(timeout)?,
            device: device.spec(),
            limit: limit.limit()?,
        }),
        Command::Lc0 { what } => lc0::run(&what),
        Command::Distill {
            what:
                DistillCommand::Gen {
                    engine,
                    variant,
                    games,
                    depth,
                    multipv,
                    workers,
                    out,
                    random_plies,
                    openings,
                    seed,
                    ply_cap,
                    hash,
                    options,
                    resume,
                    timeout,
                },
        } => distill::run(&distill::GenArgs {
            engine,
            game: variant.kind(),
            games,
            depth,
            multipv,
            workers,
            out,
            random_plies,
            openings,
            seed,
            ply_cap,
            hash,
            options,
            resume,
            timeout: seconds(timeout)?,
        }),
        Command::Elo {
            net,
            engine,
            games,
            limit,
            low,
            high,
            tolerance,
            max_probes,
            options,
            random_plies,
            seed,
            concurrency,
            timeout,
            device,
        } => elo::run(&elo::EloArgs {
            net,
            engine,
            games,
            limit: limit.limit()?,
            bracket: (low, high),
            tolerance,
            max_probes,
            engine_options: options,
            random_plies,
            seed,
            concurrency,
            timeout: seconds(timeout)?,
            device: device.spec(),
        }),
        Command::Play { net, nodes, color, fen, state, mv, device } => {
            play::run(&play::PlayArgs { net, nodes, color, fen, state, mv, device: device.spec() })
        }
        Command::PolicyHealth { nets, positions, seed, device } => {
            diagnostics::policy_health(&nets, positions, seed, device.spec())
        }
        Command::BufferStats { run } => {
            println!("{}", capa_train::buffer_stats(&run)?);
            Ok(())
        }
        Command::OverfitCheck { run, positions, device } => {
            if positions == 0 {
                anyhow::bail!("--positions must be at least 1");
            }
            let report = capa_train::overfit_check(&run, positions, device.spec())?;
            println!("{report}");
            Ok(())
        }
        Command::Uci { net, device } => uci::run(&uci::EngineArgs { net, device: device.spec() }),
        Command::Bench { what: BenchCommand::Lc0 { files, repeat } } => bench::lc0(&files, repeat),
        Command::Bench { what: BenchCommand::Net { size, variant, device, batch, seconds } } => {
            let game = variant.kind();
            if !(seconds.is_finite() && seconds >= 0.0) {
                anyhow::bail!("--seconds must be a non-negative number, not {seconds}");
            }
            let config = capa_net::NetConfig::preset(&size, game).context("--size")?;
            let args = bench::NetBench { config, batch: batch as usize, seconds };
            capa_net::with_backend(device.spec(), &args)??;
            Ok(())
        }
    }
}

/// `white` or `black`.
fn parse_color(text: &str) -> Result<capa_rules::Color, String> {
    match text {
        "white" => Ok(capa_rules::Color::White),
        "black" => Ok(capa_rules::Color::Black),
        other => Err(format!("`{other}`: white or black")),
    }
}

/// `--timeout` as a duration.
fn seconds(timeout: f64) -> Result<std::time::Duration> {
    if !(timeout.is_finite() && timeout > 0.0 && timeout < 1e9) {
        anyhow::bail!("--timeout must be a positive number of seconds, not {timeout}");
    }
    Ok(std::time::Duration::from_secs_f64(timeout))
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
