//! `capa sgf`: Go game records (SGF) to training examples, and a look at
//! the examples.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use capa_data::{ConvertOptions, RECORD_EXTENSION, SpotExample, convert_sgf, input_files, spot_check};
use capa_gui::{BoardPicture, contact_sheet};
use capa_rules::go::{Cell, KoRule};
use capa_rules::{Color, Game};

/// Go game records (SGF): convert them to training examples, look at them.
#[derive(clap::Subcommand, Debug)]
pub enum SgfCommand {
    /// Convert SGF games (`.sgf`, `.sgf.gz`, or folders of them) to capa's
    /// game records, one example per move: the board before the move, the
    /// side to move, the move as the policy target, the game's result and
    /// the move number. A game that cannot be used (another board size,
    /// broken syntax, an illegal move, no or an unknown result, moves out of
    /// turn) is skipped with a warning naming file, game, line and move.
    /// Positions (stones, side to move, ko) already an example are dropped.
    /// A game whose final position, counted by area, shows its recorded
    /// margin ends scored, and trains Go's ownership and score heads. The
    /// last line on stdout sums up: files, games read, converted (how many
    /// scored), skipped by reason, examples written, tactical, duplicates,
    /// speed.
    Convert(ConvertArgs),
    /// Draw training examples picked at random from `capa sgf convert`'s
    /// records as a contact sheet (PNG): each board before the move, the
    /// move to learn ringed in red (a pass written on the board), and under
    /// it the file and move number, the side to move and its move, the
    /// game's result and the move's tags (recomputed from the position).
    SpotCheck(SpotCheckArgs),
}

/// `capa sgf spot-check`'s arguments.
#[derive(clap::Args, Debug)]
pub struct SpotCheckArgs {
    /// Record files (`.capa`) or folders searched for them.
    #[arg(required = true)]
    pub records: Vec<PathBuf>,
    /// How many examples to draw (up to 100).
    #[arg(long, default_value_t = 20)]
    pub count: usize,
    /// The PNG file written.
    #[arg(long)]
    pub out: PathBuf,
    /// The records' board size: 9, 13 or 19.
    #[arg(long, default_value_t = 19)]
    pub size: usize,
    /// Seeds the draw.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `capa sgf convert`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// SGF files (`.sgf`, `.sgf.gz`) or folders searched for them.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The folder the records go to (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// The board size of the games kept: 9, 13 or 19.
    #[arg(long, default_value_t = 19)]
    pub size: usize,
    /// Only the winner's moves are examples.
    #[arg(long)]
    pub winner_only: bool,
    /// Only tactical moves (captures, ataris, escapes from atari) are examples.
    #[arg(long)]
    pub tactics_only: bool,
    /// With --max-per-game: up to half of a game's examples are its tactical moves.
    #[arg(long)]
    pub tactical_bias: bool,
    /// At most this many examples a game, spread over it; 0: every move.
    #[arg(long, default_value_t = 0)]
    pub max_per_game: usize,
    /// The ko rule the games are replayed under: `simple` or `superko`.
    #[arg(long, default_value = "simple", value_parser = parse_ko_rule)]
    pub ko_rule: KoRule,
    /// Seeds the choice of tactical examples.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn parse_ko_rule(text: &str) -> Result<KoRule, String> {
    KoRule::parse(text).ok_or_else(|| format!("'{text}' is not a ko rule: simple or superko"))
}

impl SgfCommand {
    /// Runs the command.
    ///
    /// # Errors
    /// Bad arguments, a missing input, an output folder that cannot be written.
    pub fn run(self) -> Result<()> {
        match self {
            SgfCommand::Convert(args) => convert(args),
            SgfCommand::SpotCheck(args) => match args.size {
                9 => spot::<9>(&args),
                13 => spot::<13>(&args),
                19 => spot::<19>(&args),
                other => bail!("--size {other}: capa plays Go on 9x9, 13x13 and 19x19"),
            },
        }
    }
}

fn convert(args: ConvertArgs) -> Result<()> {
    let files = input_files(&args.files, |name| {
        let name = name.to_lowercase();
        name.ends_with(".sgf") || name.ends_with(".sgf.gz")
    })?;
    let options = ConvertOptions {
        winner_only: args.winner_only,
        tactics_only: args.tactics_only,
        tactical_bias: args.tactical_bias,
        max_per_game: args.max_per_game,
        ko_rule: args.ko_rule,
        seed: args.seed,
    };
    let started = Instant::now();
    let mut warn = |message: String| tracing::warn!("{message}");
    let summary = match args.size {
        9 => convert_sgf::<9>(&files, &args.out, &options, &mut warn)?,
        13 => convert_sgf::<13>(&files, &args.out, &options, &mut warn)?,
        19 => convert_sgf::<19>(&files, &args.out, &options, &mut warn)?,
        other => bail!("--size {other}: capa plays Go on 9x9, 13x13 and 19x19"),
    };
    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    let skipped: Vec<String> = summary.skipped.iter().map(|(reason, n)| format!("{reason} {n}")).collect();
    println!(
        "{} files, {} games read, {} converted ({} scored on the board, with ownership and score targets; {} not: \
         resigned, on time, or counted with dead stones left), skipped {} ({}); {} examples written ({} tactical), \
         {} duplicates dropped; {:.0} examples/s",
        summary.files,
        summary.games,
        summary.converted,
        summary.scored,
        summary.converted - summary.scored,
        summary.skipped.values().sum::<usize>(),
        if skipped.is_empty() { "none".to_string() } else { skipped.join(", ") },
        summary.examples,
        summary.tactical,
        summary.duplicates,
        summary.examples as f64 / seconds
    );
    Ok(())
}

fn spot<const N: usize>(args: &SpotCheckArgs) -> Result<()> {
    if !(1..=100).contains(&args.count) {
        bail!("--count {}: draw 1 to 100 examples", args.count);
    }
    let files =
        input_files(&args.records, |name| name.strip_suffix(RECORD_EXTENSION).is_some_and(|stem| stem.ends_with('.')))?;
    let mut warn = |message: String| tracing::warn!("{message}");
    let (examples, summary) = spot_check::<N>(&files, args.count, args.seed, &mut warn);
    if examples.is_empty() {
        bail!(
            "no example to draw: {} records read, {} skipped, in {}",
            summary.records,
            summary.skipped,
            args.records.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        );
    }
    let boards: Vec<BoardPicture> = examples.iter().map(picture).collect();
    let png = contact_sheet(&boards)?;
    capa_data::write_atomically(&args.out, &png).with_context(|| format!("cannot write {}", args.out.display()))?;
    println!(
        "{} examples drawn of {} in {} records ({} skipped): {}",
        examples.len(),
        summary.examples,
        summary.records,
        summary.skipped,
        args.out.display()
    );
    Ok(())
}

/// An example as the sheet draws it.
fn picture<const N: usize>(example: &SpotExample<N>) -> BoardPicture {
    let position = &example.position;
    let stones = (0..N * N)
        .map(|point| match position.cell(point) {
            Cell::Empty => None,
            Cell::Black => Some(Color::Black),
            Cell::White => Some(Color::White),
        })
        .collect();
    let name = |color: Color| if color == Color::Black { "Black" } else { "White" };
    let file = example.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tags = example.tactics.names();
    BoardPicture {
        size: N,
        stones,
        mark: example.target.point(),
        to_move: position.turn(),
        caption: vec![
            format!("{} move {}", shorten(&file, 34), example.ply + 1),
            format!(
                "{} plays {}; {}",
                name(position.turn()),
                example.target,
                example.winner.map_or_else(|| "a draw".to_string(), |w| format!("{} won", name(w)))
            ),
            if tags.is_empty() { "no tag".to_string() } else { format!("tags: {}", tags.join(", ")) },
        ],
    }
}

/// `text` cut to `max` characters, its start kept.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max - 1).collect();
    format!("{kept}…")
}
