//! `capa match`: the arguments, and the lines it prints; the match itself
//! is capa-play's.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use capa_play::matches::{self, MatchArgs, MatchEvent};
use capa_play::{Sprt, SprtVerdict};

use crate::args::{DeviceArgs, LimitArgs, Variant, parse_option, parse_sprt, seconds};

/// Play games between two players and measure the Elo difference.
///
/// A player is a network file (`.safetensors`, played through `capa uci`)
/// or a UCI engine command (`fairy-stockfish`, `stockfish`, `sjaakii`...).
/// Games come in pairs from one opening with the colours swapped. Each
/// game's line goes to stderr; the last line on stdout is
/// `A vs B: +W =D -L of N games, score S%, Elo E (95%: LOW to HIGH), T s`
/// (from A's side), followed by the SPRT's line with --sprt.
#[derive(clap::Args, Debug)]
pub struct MatchCommand {
    /// Player A: a network file or a UCI engine command.
    pub a: String,
    /// Player B: a network file or a UCI engine command.
    pub b: String,
    /// Games to play (rounded up to an even number).
    #[arg(long, default_value_t = 100)]
    pub games: u32,
    #[command(flatten)]
    pub limit: LimitArgs,
    /// The game, needed when neither player is a network.
    #[arg(long, value_enum)]
    pub variant: Option<Variant>,
    /// Openings, one per line: UCI moves from the start position, or a
    /// FEN optionally followed by `moves ...`; `#` starts a comment. They
    /// are used in turn, each for a pair of games.
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Without --openings: plies of uniformly random moves that start each pair.
    #[arg(long, default_value_t = 6)]
    pub random_plies: u32,
    /// Seeds the random openings.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Games played at once, each with its own two engine processes.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Write the games here as PGN (rewritten after each game).
    #[arg(long)]
    pub pgn: Option<PathBuf>,
    /// Stop once a sequential probability ratio test decides:
    /// `ELO0,ELO1` or `ELO0,ELO1,ALPHA,BETA` (alpha and beta default to 0.05).
    #[arg(long, value_parser = parse_sprt, allow_hyphen_values = true)]
    pub sprt: Option<Sprt>,
    /// Plies after which a game is a draw; 0 leaves it to the rules.
    #[arg(long, default_value_t = 0)]
    pub ply_cap: u32,
    /// A UCI option for player A, `NAME=VALUE` (repeatable), e.g. `UCI_Elo=1500`.
    #[arg(long = "option-a", value_parser = parse_option)]
    pub option_a: Vec<(String, String)>,
    /// A UCI option for player B, `NAME=VALUE` (repeatable).
    #[arg(long = "option-b", value_parser = parse_option)]
    pub option_b: Vec<(String, String)>,
    /// Seconds an engine may take to answer, beyond a move's own time;
    /// one that takes longer loses the game.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

impl MatchCommand {
    /// Plays the match and prints its result.
    ///
    /// # Errors
    /// As [`matches::play`].
    pub fn run(self) -> Result<()> {
        let args = MatchArgs {
            limit: self.limit.limit()?,
            timeout: seconds(self.timeout)?,
            device: self.device.spec(),
            capa: std::env::current_exe().context("cannot find the capa executable to run networks with")?,
            players: [self.a, self.b],
            options: [self.option_a, self.option_b],
            variant: self.variant.map(Variant::kind),
            games: self.games,
            openings: self.openings,
            random_plies: self.random_plies,
            seed: self.seed,
            concurrency: self.concurrency,
            pgn: self.pgn,
            sprt: self.sprt,
            ply_cap: self.ply_cap,
        };
        let started = Instant::now();
        let (score, labels) = matches::play(&args, &|event| print_event(&args, &event))?;
        let (elo, low, high) = score.elo();
        println!(
            "{} vs {}: +{} ={} -{} of {} games, score {:.1}%, Elo {elo:+.0} (95%: {low:+.0} to {high:+.0}), {:.0} s",
            labels[0],
            labels[1],
            score.wins,
            score.draws,
            score.losses,
            score.games(),
            100.0 * score.fraction(),
            started.elapsed().as_secs_f64()
        );
        if let Some(sprt) = &args.sprt {
            let (lower, upper) = sprt.bounds();
            let verdict = match sprt.verdict(&score) {
                Some(SprtVerdict::AcceptH1) => "H1 accepted",
                Some(SprtVerdict::AcceptH0) => "H0 accepted",
                None => "no decision",
            };
            println!(
                "SPRT elo0 {} elo1 {} alpha {} beta {}: LLR {:.2} ({lower:.2}, {upper:.2}), {verdict}",
                sprt.elo0,
                sprt.elo1,
                sprt.alpha,
                sprt.beta,
                sprt.llr(&score)
            );
        }
        Ok(())
    }
}

/// A match's progress on stderr: its set-up, then a line per game.
fn print_event(args: &MatchArgs, event: &MatchEvent) {
    match event {
        MatchEvent::Started { labels, games, variant } => eprintln!(
            "{} vs {}: {games} games of {variant}, {} at a time, {:?} per move",
            labels[0], labels[1], args.concurrency, args.limit
        ),
        MatchEvent::Game { number, white, result, termination, plies, score } => {
            let (elo, low, high) = score.elo();
            eprintln!(
                "game {number} ({white} white): {result} by {termination} in {plies} plies | +{} ={} -{} {:.1}% \
                 Elo {elo:+.0} ({low:+.0} to {high:+.0})",
                score.wins,
                score.draws,
                score.losses,
                100.0 * score.fraction()
            );
        }
    }
}
