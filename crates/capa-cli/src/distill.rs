//! `capa distill gen`: the arguments, a progress bar and the summary; the
//! generation is capa-data's, next to the teacher-game format.

use std::path::PathBuf;

use anyhow::Result;
use capa_data::{Generation, GenerationEvent, generate};
use capa_rules::GameKind;
use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};

use crate::args::{parse_option, seconds};

/// Distillation from a UCI engine (Stockfish, Fairy-Stockfish).
#[derive(Subcommand, Debug)]
pub enum DistillCommand {
    /// Generate teacher data: the engine plays itself at a fixed depth and,
    /// before every move, reports its --multipv best moves with their
    /// scores. One file per game in --out (`000000.teacher`, ...), written
    /// atomically, with the settings in `generation.txt`.
    ///
    /// Every position is analysed, the opening's too; the opening's moves
    /// are played as given, then the engine's best move (or, with
    /// --explore, sometimes a random one). Prints a last line
    /// `G games, P positions in T s: R positions/s, R/W per worker; ...`.
    Gen(GenCommand),
}

/// Generate teacher data: the engine plays itself at a fixed depth and,
/// before every move, reports its --multipv best moves with their
/// scores. One file per game in --out (`000000.teacher`, ...), written
/// atomically, with the settings in `generation.txt`.
///
/// Every position is analysed, the opening's too; the opening's moves
/// are played as given, then the engine's best move (or, with
/// --explore, sometimes a random one). Prints a last line
/// `G games, P positions in T s: R positions/s, R/W per worker; ...`.
#[derive(clap::Args, Debug)]
pub struct GenCommand {
    /// The engine command, e.g. `stockfish` (chess) or `fairy-stockfish`.
    #[arg(long)]
    pub engine: String,
    /// The game.
    #[arg(long, value_enum)]
    pub variant: GameKind,
    /// Games the output holds when done (with --resume: the total, old ones included).
    #[arg(long)]
    pub games: usize,
    /// Search depth per position (`go depth`).
    #[arg(long, default_value_t = 10)]
    pub depth: u32,
    /// Candidates per position (the engine's `MultiPV`).
    #[arg(long, default_value_t = 8)]
    pub multipv: u32,
    /// Engine processes at once, one thread each.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// The output folder: new or empty, or an earlier generation with --resume.
    #[arg(long)]
    pub out: PathBuf,
    /// Without --openings: uniformly random plies that start each game (game i's
    /// are drawn from --seed and i, so a resume replays the same openings).
    #[arg(long, default_value_t = 8)]
    pub random_plies: u32,
    /// Openings, one per line: UCI moves from the start position, or a FEN
    /// optionally followed by `moves ...`; `#` starts a comment. Game i uses line i,
    /// round robin.
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Seeds the random openings.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Plies after which a game is a draw; 0 leaves it to the rules.
    #[arg(long, default_value_t = 400)]
    pub ply_cap: u32,
    /// The chance that a move after the opening is a uniformly random legal
    /// move instead of the engine's best (0 to 1). The positions a mistake
    /// leads to are analysed like every other, so the student also learns
    /// what a blunder costs and how to punish one, which the engine's own
    /// games never show it. Drawn from --seed and the game's index.
    #[arg(long, default_value_t = 0.0)]
    pub explore: f64,
    /// The engine's hash table in MiB (when it has a `Hash` option).
    #[arg(long, default_value_t = 16)]
    pub hash: u32,
    /// Another UCI option for the engine, `NAME=VALUE` (repeatable).
    #[arg(long = "option", value_parser = parse_option)]
    pub options: Vec<(String, String)>,
    /// Continue the generation in --out: play the games whose files are missing,
    /// after checking that the settings are the same.
    #[arg(long)]
    pub resume: bool,
    /// Seconds the engine may take to answer before it counts as hung.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
}

impl DistillCommand {
    /// Runs the subcommand.
    ///
    /// # Errors
    /// As [`generate`].
    pub fn run(self) -> Result<()> {
        match self {
            DistillCommand::Gen(command) => command.run(),
        }
    }
}

impl GenCommand {
    fn run(self) -> Result<()> {
        let variant = self.variant;
        let args = Generation {
            timeout: seconds(self.timeout)?,
            engine: self.engine,
            games: self.games,
            depth: self.depth,
            multipv: self.multipv,
            workers: self.workers,
            out: self.out,
            random_plies: self.random_plies,
            openings: self.openings,
            seed: self.seed,
            ply_cap: self.ply_cap,
            explore: self.explore,
            hash: self.hash,
            options: self.options,
            resume: self.resume,
        };
        let bar = ProgressBar::new(args.games as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} games, {msg}, eta {eta}").expect("a valid template"),
        );
        let on_event = |event: GenerationEvent| match event {
            GenerationEvent::Started { done, to_play, workers } => {
                bar.suspend(|| {
                    eprintln!(
                        "{}: {to_play} of {} games to play, {workers} workers, depth {} multipv {}",
                        args.out.display(),
                        args.games,
                        args.depth,
                        args.multipv
                    )
                });
                bar.set_position(done as u64);
            }
            GenerationEvent::Game { positions, rate, .. } => {
                bar.inc(1);
                bar.set_message(format!("{positions} positions, {rate:.1} positions/s"));
            }
            GenerationEvent::Retry { index, error } => {
                bar.suspend(|| tracing::warn!("game {index}: {error}; restarting the engine"));
            }
            GenerationEvent::RemovedTemporaries(removed) => {
                tracing::info!("removed {removed} temporary files an interrupted generation left");
            }
        };
        if !variant.is_chess() {
            anyhow::bail!("distillation asks a UCI engine, which plays chess games, not {variant}");
        }
        let summary = capa_rules::for_game!(variant, G => generate::<G>(&args, &on_event));
        bar.finish_and_clear();
        let summary = summary?;
        let seconds = summary.seconds.max(1e-9);
        println!(
            "{} games, {} positions in {:.0} s: {:.1} positions/s, {:.1} per worker; {} games in {}",
            summary.games,
            summary.positions,
            summary.seconds,
            summary.positions as f64 / seconds,
            summary.positions as f64 / seconds / summary.workers as f64,
            args.games,
            args.out.display()
        );
        Ok(())
    }
}
