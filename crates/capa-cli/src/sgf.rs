//! `capa sgf`: Go game records (SGF) to training examples.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Result, bail};
use capa_data::{ConvertOptions, convert_sgf};
use capa_rules::go::KoRule;

/// Go game records (SGF): convert them to training examples.
#[derive(clap::Subcommand, Debug)]
pub enum SgfCommand {
    /// Convert SGF games (`.sgf`, `.sgf.gz`, or folders of them) to capa's
    /// game records, one example per move: the board before the move, the
    /// side to move, the move as the policy target, the game's result and
    /// the move number. A game that cannot be used (another board size,
    /// broken syntax, an illegal move, no or an unknown result, moves out of
    /// turn) is skipped with a warning naming file, game, line and move.
    /// Positions (stones, side to move, ko) already an example are dropped.
    /// The last line on stdout sums up: files, games read, converted,
    /// skipped by reason, examples written, tactical, duplicates, speed.
    Convert(ConvertArgs),
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
        let SgfCommand::Convert(args) = self;
        let files = sgf_files(&args.files)?;
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
            "{} files, {} games read, {} converted, skipped {} ({}); {} examples written ({} tactical), {} duplicates \
             dropped; {:.0} examples/s",
            summary.files,
            summary.games,
            summary.converted,
            summary.skipped.values().sum::<usize>(),
            if skipped.is_empty() { "none".to_string() } else { skipped.join(", ") },
            summary.examples,
            summary.tactical,
            summary.duplicates,
            summary.examples as f64 / seconds
        );
        Ok(())
    }
}

/// The SGF files named, folders searched (sorted, so the order is stable).
fn sgf_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut found = Vec::new();
            walk(input, &mut found)?;
            found.sort();
            files.extend(found);
        } else if input.is_file() {
            files.push(input.clone());
        } else {
            bail!("{}: no such file or folder", input.display());
        }
    }
    Ok(files)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| anyhow::anyhow!("cannot list {}: {e}", dir.display()))?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        if path.is_dir() {
            walk(&path, found)?;
        } else if name.ends_with(".sgf") || name.ends_with(".sgf.gz") {
            found.push(path);
        }
    }
    Ok(())
}
