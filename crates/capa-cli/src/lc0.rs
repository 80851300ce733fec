//! `capa lc0`: Lc0 V6 training data from PGN games, and checks of V6 files.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use capa_lc0::{self as lc0, ConvertEvent, ConvertJob, ConvertSettings, EvalSource, V6Record, WdlModel};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

/// What `capa lc0` does.
#[derive(Subcommand, Debug)]
pub enum Lc0Command {
    /// Convert PGN games (plain, .gz, .zst) to Lc0 V6 training records.
    ///
    /// One record per move (the position before it): input format 1 (the
    /// classical 112 planes), Lc0's 1858-move policy with castling as
    /// king-takes-rook and black's moves mirrored, the result from the side
    /// to move, plies left counting down to 1 (the plies to the end, the move
    /// to play included, as Lc0 and capa's self-play count; trainingdata-tool
    /// writes one less). Each game is one gzip file
    /// `game_NNNNNN.gz`, numbered in PGN order whatever --threads is, in
    /// `<name>-N/` folders of --files-per-dir files under --output-dir; each
    /// file is written atomically. A game that cannot be converted (bad or
    /// illegal SAN, broken FEN, another variant, no result) is skipped with
    /// a warning naming the file, line and game; the summary counts them.
    /// Q and D come from the static evaluation unless --pgn-eval-mode or
    /// --stockfish.
    /// The last line on stdout is the summary with positions per second.
    Convert(ConvertArgs),
    /// Fit the WDL model to the games' real outcomes.
    ///
    /// Buckets every position with a comment eval (the side to move's, in
    /// bands of 0.25 pawns) by its game's result, prints per band the
    /// measured W/D/L and Q, the Q the default model (scale 1.13, spread
    /// 0.21) and the best fit give, and the Q Lc0's centipawn display
    /// formula (cp = 90 tan(1.5637541897 Q)) would claim, then a grid search
    /// of scale (0.50 to 3.00) and spread (0.05 to 1.00) minimising the RMSE
    /// on (W, L) over bands of at least 20 positions. The last line is
    /// `scale S spread P rmse R (default rmse D, Lc0 display rmse on Q X)`:
    /// S and P go to `convert --wdl-scale/--wdl-spread`.
    FitWdl(EvalSample),
    /// The draw rate per eval band, and the spread it implies at equality.
    ///
    /// The last line is `draw rate R within 0.25 pawns of equality (N
    /// positions): spread 1/ln((1+R)/(1-R)) = S`.
    DrawRate(EvalSample),
    /// Play out adjudicated games with a UCI engine, so that they end in a
    /// real checkmate, stalemate or rule draw.
    ///
    /// Games whose [Termination] is one of --only-termination
    /// (adjudication by default) and whose result is decisive (or any, with
    /// --include-draws) are continued from their last position, the engine
    /// playing both sides at --depth, until the game ends by the rules or
    /// --max-extra-plies are added. Each added move carries a
    /// cutechess-format comment (`{+0.76/10 0.012s}`, `{-M5/10 0.003s}`:
    /// the mover's score), so `convert --pgn-eval-mode` reads the output
    /// as it is. A game played out gets a [FinishedBy] tag and its
    /// [PlyCount] (where it has one) updated; one that ends also its new
    /// [Result] and [Termination "normal"] (where it has those tags); one
    /// that reaches the cap keeps its result. Every other game is copied
    /// unchanged (line endings become `\n`). Output: plain PGN,
    /// `<stem>-finished.pgn` beside each input (or in --output-dir), in
    /// input order, written to `<output>.partial` and renamed only when
    /// complete.
    FinishGames(FinishArgs),
    /// Decode every record of V6 game files and check Lc0's invariants.
    ///
    /// For each file, one line per record: ply, side to move, plies left,
    /// root/best/result Q, the played and the best move (Lc0 notation,
    /// castling as king-takes-rook), visits, rule-50 clock, castling rights
    /// (KQkq from the side to move: ours then theirs). Problems are marked
    /// `!` (legal probabilities that do not sum to 1, an illegal played
    /// move, values out of range, plies left not counting down by 1,
    /// results that do not alternate). The last line on stdout is
    /// `F files, R records, P problems in B files`; any problem is an error
    /// (exit status 2).
    Verify {
        /// V6 files (`.gz`) or folders searched for them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Only the problems and the summary, not every record.
        #[arg(long, short)]
        quiet: bool,
        /// Check each record alone, not that a file's plies left count down
        /// by 1 and its results alternate: for `dedup` output, whose files
        /// are not games, and for games after `rescore`, whose plies left
        /// are distances to the tablebase end.
        #[arg(long)]
        records_only: bool,
    },
    /// Rewrite game results and plies left from Syzygy tablebases.
    ///
    /// Every record whose position (slot 0 of its planes, with the
    /// en-passant square inferred from slot 1) has no castling rights and
    /// few enough pieces is probed: its result becomes the tables' verdict
    /// under the 50-move rule (cursed wins and blessed losses are draws),
    /// and for a decisive one, plies left become the length of the tables'
    /// line to mate. Positions before a game's first probed one take its
    /// result, alternating by side, and count their plies left up from it.
    /// Each file's result goes to `<stem>_rescored.gz` beside it, written
    /// atomically and read back; with --replace it then takes the
    /// original's name. An original is never removed otherwise; `dedup`
    /// and `pack` read a file's twin instead of it. The last line on stdout
    /// counts the records whose result and plies left changed.
    Rescore(RescoreArgs),
    /// Merge repeated positions of V6 files (trainingdata-tool's
    /// -deduplication-mode).
    ///
    /// Records with the same planes, castling, side to move and rule-50
    /// clock are merged within a window of --dedup-uniq-buffersize unique
    /// positions: the mean of their policies, root/best Q and D; every
    /// other field is the first one's (so its played move may disagree
    /// with the merged policy, as in the tool). Before merging, Q becomes
    /// q r + result_q (1 - r) with r = --dedup-q-ratio. Output, in the
    /// order positions were first seen: --chunks-per-file records per
    /// `chunk_NNNNNN.gz` in `<name>-N/` folders, each written atomically.
    /// A truncated input is an error naming it (the tool drops its tail
    /// silently). Memory: about 8.4 KB per unique position of the window.
    Dedup(crate::lc0_archive::DedupArgs),
    /// Pack a converted tree into .tar archives laid out as Lc0 ships its
    /// training runs.
    ///
    /// Members are `<dir>/<file>.gz`, so `tar -xf ARCHIVE -C SRC` recreates
    /// the tree. Folders go in natural order (`supervised-2` before
    /// `supervised-10`), --group per archive, named `<dir>.tar` (one
    /// folder) or `<first>--<last>.tar` (several). Each archive is written
    /// to `<archive>.partial`, read back and its members checked, then
    /// renamed; the sources are never modified.
    Pack(crate::lc0_archive::PackArgs),
}

/// `capa lc0 finish-games`'s options.
#[derive(Args, Debug)]
pub struct FinishArgs {
    /// PGN files: `.pgn`, `.pgn.gz` or `.pgn.zst`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The UCI engine that plays the games out (a path, or a name looked up
    /// on PATH and in /usr/games).
    #[arg(long, value_name = "PATH")]
    pub engine: PathBuf,
    /// Search depth per added move.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub depth: u32,
    /// The most plies added to one game; a game still going then keeps its result.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_extra_plies: u32,
    /// Games played out at once, one engine each (0: one per core but one, at least 1).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// The engine's search threads (`Threads`) per worker.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: u32,
    /// The engine's hash table in MB per worker.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub hash: u32,
    /// Play out games with this [Termination] (any case; repeatable).
    #[arg(long, value_name = "VALUE", default_value = "adjudication")]
    pub only_termination: Vec<String>,
    /// Also play out games adjudicated as draws.
    #[arg(long)]
    pub include_draws: bool,
    /// Read at most this many games of each input.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Skip inputs whose output already exists (without it, an existing
    /// output is an error).
    #[arg(long)]
    pub resume: bool,
    /// The output file (one input only).
    #[arg(long, conflicts_with = "output_dir")]
    pub output: Option<PathBuf>,
    /// The folder outputs go in (default: beside each input).
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Print every game that could not be played out (without it, the first 20).
    #[arg(short, long)]
    pub verbose: bool,
}

/// `capa lc0 rescore`'s options.
#[derive(Args, Debug)]
pub struct RescoreArgs {
    /// V6 game files (`.gz`) or folders searched for them (`_rescored.gz`
    /// twins are not inputs).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// A folder of Syzygy tables (`.rtbw` and `.rtbz`; repeatable).
    #[arg(long, required = true, value_name = "TBDIR")]
    pub syzygy: Vec<PathBuf>,
    /// Move each rescored file over its original once it is written and
    /// read back identical.
    #[arg(long)]
    pub replace: bool,
    /// Skip files that already have a `_rescored.gz` twin (with --replace
    /// there are none: a rescored file is rescored again, to the same
    /// result).
    #[arg(long)]
    pub resume: bool,
    /// Threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// The inputs of `fit-wdl` and `draw-rate`.
#[derive(Args, Debug)]
pub struct EvalSample {
    /// PGN files whose move comments carry evals (cutechess/Fishtest or Lichess form).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Read at most this many commented positions.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
}

/// `capa lc0 convert`'s options.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// PGN files: `.pgn`, `.pgn.gz` or `.pgn.zst`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The folder the `<name>-N/` folders go in.
    #[arg(long, default_value = ".")]
    pub output_dir: PathBuf,
    /// The folders' prefix.
    #[arg(long, default_value = "supervised")]
    pub name: String,
    /// Game files per folder.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub files_per_dir: u64,
    /// Stop after this many games are written.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_games: Option<u64>,
    /// Conversion threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Q and D from the eval in each move's comment: cutechess/Fishtest
    /// `{+0.76/18 1.813s}` or `{-M5/12}` (the mover's eval of the position
    /// before its move), or Lichess `[%eval 0.17]` / `[%eval #-3]`
    /// (White's eval of the position after the move). A move without one
    /// takes a neighbouring move's, or else the static evaluation; the
    /// summary counts both.
    #[arg(long, conflicts_with = "stockfish")]
    pub pgn_eval_mode: bool,
    /// Q and D from a UCI engine (Stockfish or any engine with
    /// `UCI_ShowWDL`) searching every position to --sf-depth: Q = (w -
    /// l)/1000, D = d/1000 from its WDL (from its score through the WDL
    /// model when it reports none), the best move its bestmove, the visits
    /// its node count. One engine per thread, each cleared (`ucinewgame`)
    /// before every game, so the output does not depend on --threads. A
    /// game on which the engine fails, or does not reach the depth within
    /// 30 s on one position, is skipped (the engine restarted).
    /// A name is looked up on PATH and in /usr/games.
    #[arg(long, value_name = "PATH")]
    pub stockfish: Option<PathBuf>,
    /// The engine's search depth per position (with --stockfish).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100), requires = "stockfish")]
    pub sf_depth: u32,
    /// The engine's hash table in MB, per engine (with --stockfish).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..), requires = "stockfish")]
    pub sf_hash: u32,
    /// The WDL model's scale: mu = scale x eval (pawns).
    #[arg(long, default_value_t = 1.13)]
    pub wdl_scale: f32,
    /// The WDL model's spread: W = logistic((mu - 1) / spread), L = logistic((-mu - 1) / spread).
    #[arg(long, default_value_t = 0.21)]
    pub wdl_spread: f32,
    /// Static evaluation only: the halfmove clock (after the move) from
    /// which Q is moved towards a draw, reaching it at 100.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub r50_damp_start: u32,
    /// 0: a one-hot policy on the played move and 1 visit. N: N visits, the
    /// played move gets 0.5 + |Q|/2 and the other legal moves share the rest.
    #[arg(long, default_value_t = 0)]
    pub visit_budget: u32,
    /// Print every skipped game's reason (without it, the first 20 and the count).
    #[arg(short, long)]
    pub verbose: bool,
}

/// Runs `capa lc0 ...`.
pub fn run(command: &Lc0Command) -> Result<()> {
    match command {
        Lc0Command::Convert(args) => convert(args),
        Lc0Command::Verify { paths, quiet, records_only } => verify(paths, *quiet, *records_only),
        Lc0Command::Rescore(args) => rescore(args),
        Lc0Command::Dedup(args) => crate::lc0_archive::dedup(args),
        Lc0Command::Pack(args) => crate::lc0_archive::pack(args),
        Lc0Command::FitWdl(sample) => fit_wdl(sample),
        Lc0Command::DrawRate(sample) => draw_rate(sample),
        Lc0Command::FinishGames(args) => finish_games(args),
    }
}

fn bands(sample: &EvalSample) -> Result<lc0::EvalBands> {
    let bands = lc0::eval_bands(&sample.files, sample.limit)?;
    if bands.populated().next().is_none() {
        bail!(
            "{} positions with a comment eval and a result: no band has {} (the comments need `{{+0.76/18 1.8s}}` or `[%eval 0.17]` evals)",
            bands.positions(),
            lc0::MIN_BAND_POSITIONS
        );
    }
    Ok(bands)
}

fn band_range(band: &lc0::Band) -> String {
    format!("{:+.2}..{:+.2}", band.low, band.low + lc0::BAND_WIDTH)
}

fn fit_wdl(sample: &EvalSample) -> Result<()> {
    let bands = bands(sample)?;
    let (best, rmse) = bands.fit();
    let default = WdlModel::default();
    let q_of = |model: &WdlModel, eval: f32| model.q_d(eval).0;
    println!("{} positions; bands of at least {} positions", bands.positions(), lc0::MIN_BAND_POSITIONS);
    println!(
        "{:>12} {:>7} {:>6} {:>6} {:>6} {:>7} {:>8} {:>8} {:>8}",
        "band", "n", "W", "D", "L", "Q real", "default", "fit", "Lc0 cp"
    );
    let mut display_error = 0.0f32;
    let mut count = 0;
    for band in bands.populated() {
        let [w, d, l] = band.rates();
        let eval = band.mean_eval();
        let display = lc0::lc0_display_q(eval);
        display_error += (display - (w - l)).powi(2);
        count += 1;
        println!(
            "{:>12} {:>7} {w:>6.3} {d:>6.3} {l:>6.3} {:>+7.3} {:>+8.3} {:>+8.3} {:>+8.3}",
            band_range(band),
            band.positions,
            w - l,
            q_of(&default, eval),
            q_of(&best, eval),
            display
        );
    }
    println!(
        "scale {:.2} spread {:.3} rmse {rmse:.4} (default rmse {:.4}, Lc0 display rmse on Q {:.4})",
        best.scale,
        best.spread,
        bands.rmse(&default),
        (display_error / count as f32).sqrt()
    );
    Ok(())
}

fn draw_rate(sample: &EvalSample) -> Result<()> {
    let bands = bands(sample)?;
    println!("{:>12} {:>7} {:>9}", "band", "n", "draw rate");
    for band in bands.populated() {
        println!("{:>12} {:>7} {:>9.3}", band_range(band), band.positions, band.rates()[1]);
    }
    match bands.equal_draw_rate() {
        Some((rate, spread, near)) => {
            println!(
                "draw rate {rate:.3} within {} pawns of equality ({near} positions): spread 1/ln((1+R)/(1-R)) = {spread:.3}",
                lc0::BAND_WIDTH
            );
        }
        None => println!("no position within {} pawns of equality", lc0::BAND_WIDTH),
    }
    Ok(())
}

/// Warnings printed before the rest are only counted.
const SHOWN_SKIPS: u64 = 20;

fn convert(args: &ConvertArgs) -> Result<()> {
    for (name, value) in [("--wdl-scale", args.wdl_scale), ("--wdl-spread", args.wdl_spread)] {
        if !(value.is_finite() && value > 0.0) {
            bail!("{name} must be a positive number, got {value}");
        }
    }
    if args.name.is_empty() || args.name.contains(['/', '\\']) {
        bail!("--name must be a plain folder prefix, got {:?}", args.name);
    }
    for file in &args.files {
        if !file.is_file() {
            bail!("{} is not a file", file.display());
        }
    }
    let eval = if args.stockfish.is_some() {
        EvalSource::Engine
    } else if args.pgn_eval_mode {
        EvalSource::PgnComments
    } else {
        EvalSource::Static { r50_damp_start: args.r50_damp_start }
    };
    let engine = args.stockfish.as_ref().map(|program| lc0::EngineSpec {
        program: program.clone(),
        depth: args.sf_depth,
        hash_mb: args.sf_hash,
        threads: 1,
    });
    let job = ConvertJob {
        output_dir: args.output_dir.clone(),
        name: args.name.clone(),
        files_per_dir: args.files_per_dir,
        max_games: args.max_games,
        settings: ConvertSettings {
            eval,
            wdl: WdlModel { scale: args.wdl_scale, spread: args.wdl_spread },
            visit_budget: args.visit_budget,
        },
        engine,
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(args.threads).build().context("starting the threads")?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("a valid template"));
    let mut shown = 0;
    let summary = lc0::convert_files(&args.files, &job, &pool, |event| match event {
        ConvertEvent::Skipped(path, game, reason) => {
            if args.verbose || shown < SHOWN_SKIPS {
                bar.suspend(|| {
                    tracing::warn!("{}: game {} (line {}): skipped: {reason}", path.display(), game.number, game.line)
                });
                shown += 1;
            }
        }
        ConvertEvent::Progress(summary) => bar.set_message(format!(
            "{} games, {} positions, {:.0} positions/s",
            summary.games_written,
            summary.positions,
            summary.positions as f64 / summary.seconds.max(1e-9)
        )),
    })?;
    bar.finish_and_clear();
    let skipped: u64 = summary.skipped.values().sum();
    if skipped > shown {
        eprintln!("({} more skipped games not shown; -v shows them all)", skipped - shown);
    }
    if args.pgn_eval_mode {
        eprintln!(
            "moves without their own eval: {} took a neighbour's, {} the static evaluation",
            summary.neighbour_evals, summary.static_fallbacks
        );
    }
    if args.stockfish.is_some() && summary.model_evals > 0 {
        eprintln!(
            "{} positions had no WDL from the engine: their Q and D come from its score through the WDL model",
            summary.model_evals
        );
    }
    let reasons: Vec<String> = summary.skipped.iter().map(|(reason, n)| format!("{n} {reason}")).collect();
    let seconds = summary.seconds.max(1e-9);
    println!(
        "{} games read, {} written ({} positions), {} skipped{}; {:.0} positions/s, {:.1} MB/s written ({:.1} MB/s of records) in {:.1} s",
        summary.games_read,
        summary.games_written,
        summary.positions,
        skipped,
        if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) },
        summary.positions as f64 / seconds,
        summary.bytes_written as f64 / seconds / 1e6,
        (summary.positions * lc0::V6_SIZE as u64) as f64 / seconds / 1e6,
        summary.seconds,
    );
    Ok(())
}

fn verify(paths: &[PathBuf], quiet: bool, records_only: bool) -> Result<()> {
    let files = lc0::v6_files(paths)?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    let (mut records_seen, mut problems_seen, mut bad_files) = (0usize, 0usize, 0usize);
    for file in &files {
        let records = match lc0::read_game_file(file) {
            Ok(records) => records,
            Err(e) => {
                writeln!(out, "! {e}")?;
                problems_seen += 1;
                bad_files += 1;
                continue;
            }
        };
        let problems = if records_only {
            records
                .iter()
                .enumerate()
                .flat_map(|(i, r)| r.problems().into_iter().map(move |p| (i, p.to_string())))
                .collect()
        } else {
            lc0::game_problems(&records)
        };
        records_seen += records.len();
        problems_seen += problems.len();
        bad_files += usize::from(!problems.is_empty());
        if !quiet || !problems.is_empty() {
            writeln!(out, "{}: {} records", file.display(), records.len())?;
        }
        for (ply, record) in records.iter().enumerate() {
            let mine: Vec<&String> = problems.iter().filter(|(at, _)| *at == ply).map(|(_, p)| p).collect();
            if !quiet {
                writeln!(out, "  {}", record_line(ply, record))?;
            }
            for problem in mine {
                writeln!(out, "  ! ply {ply}: {problem}")?;
            }
        }
    }
    writeln!(out, "{} files, {records_seen} records, {problems_seen} problems in {bad_files} files", files.len())?;
    out.flush()?;
    if problems_seen > 0 {
        bail!("{problems_seen} problems in {bad_files} of {} files (marked `!` above)", files.len());
    }
    Ok(())
}

fn record_line(ply: usize, r: &V6Record) -> String {
    let black = r.side_to_move_or_enpassant == 1;
    let rights: String = [(r.castling[1], 'K'), (r.castling[0], 'Q'), (r.castling[3], 'k'), (r.castling[2], 'q')]
        .into_iter()
        .filter(|&(on, _)| on != 0)
        .map(|(_, c)| c)
        .collect();
    format!(
        "{ply:>4} {} plies_left {:>3} q root {:+.3} best {:+.3} result {:+.0} played {} best {} visits {} rule50 {} castling {}",
        if black { 'b' } else { 'w' },
        r.plies_left,
        r.root_q,
        r.best_q,
        r.result_q,
        lc0::policy_move(r.played_idx, black),
        lc0::policy_move(r.best_idx, black),
        r.visits,
        r.rule50_count,
        if rights.is_empty() { "-".to_string() } else { rights },
    )
}

/// `games.pgn.gz` -> `games-finished.pgn`, beside it or in `output_dir`.
fn finished_path(input: &Path, output_dir: Option<&Path>) -> PathBuf {
    let name = input.file_name().unwrap_or_default().to_string_lossy();
    let stem = [".gz", ".zst"].iter().fold(name.as_ref(), |n, suffix| n.strip_suffix(suffix).unwrap_or(n));
    let stem = stem.strip_suffix(".pgn").unwrap_or(stem);
    let folder = output_dir.or(input.parent()).unwrap_or(Path::new("."));
    folder.join(format!("{stem}-finished.pgn"))
}

fn finish_games(args: &FinishArgs) -> Result<()> {
    if args.output.is_some() && args.files.len() != 1 {
        bail!("--output names one file, for one input; with {} inputs use --output-dir", args.files.len());
    }
    let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
    for input in &args.files {
        if !input.is_file() {
            bail!("{} is not a file", input.display());
        }
        let output = args.output.clone().unwrap_or_else(|| finished_path(input, args.output_dir.as_deref()));
        if let Some((other, _)) = files.iter().find(|(_, taken)| *taken == output) {
            bail!(
                "{} and {} would both be written to {}: finish them in separate runs or give --output-dir",
                other.display(),
                input.display(),
                output.display()
            );
        }
        if output.exists() {
            if args.resume {
                tracing::info!("skipping {}: {} exists (--resume)", input.display(), output.display());
                continue;
            }
            bail!("{} exists: remove it, or pass --resume to skip the inputs already finished", output.display());
        }
        files.push((input.clone(), output));
    }
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // The bar's length: the games to read, counted first.
    let mut total = 0;
    for (input, _) in &files {
        let mut reader =
            lc0::PgnReader::new(lc0::open_pgn(input).with_context(|| format!("cannot read {}", input.display()))?);
        let mut games = 0;
        while args.limit.is_none_or(|limit| games < limit)
            && reader.next_game().with_context(|| format!("cannot read {}", input.display()))?.is_some()
        {
            games += 1;
        }
        total += games;
    }
    let workers = match args.workers {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1)),
        n => n,
    };
    let settings = lc0::FinishSettings {
        engine: lc0::EngineSpec {
            program: args.engine.clone(),
            depth: args.depth,
            hash_mb: args.hash,
            threads: args.threads,
        },
        max_extra_plies: args.max_extra_plies,
        terminations: args.only_termination.clone(),
        include_draws: args.include_draws,
        limit: args.limit,
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(workers).build().context("starting the workers")?;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} games {msg} [{elapsed} < {eta}]").expect("a valid template"),
    );
    let mut shown = 0;
    let summary = lc0::finish_files(&files, &settings, &pool, |event| match event {
        lc0::FinishEvent::Game(path, game, outcome, tally) => {
            bar.inc(1);
            if let lc0::FinishOutcome::Unplayable(reason) | lc0::FinishOutcome::EngineFailed(reason) = outcome
                && (args.verbose || shown < SHOWN_SKIPS)
            {
                bar.suspend(|| {
                    tracing::warn!(
                        "{}: game {} (line {}): copied unchanged: {reason}",
                        path.display(),
                        game.number,
                        game.line
                    )
                });
                shown += 1;
            }
            bar.set_message(format!("{} concluded, {} capped, {} failed", tally.concluded, tally.capped, tally.failed));
        }
        lc0::FinishEvent::FileDone(output) => bar.suspend(|| eprintln!("done: {}", output.display())),
    })?;
    bar.finish_and_clear();
    if summary.failed > shown {
        eprintln!("({} more games copied unchanged not shown; -v shows them all)", summary.failed - shown);
    }
    println!(
        "{} games in {} files: {} played out to an end, {} reached --max-extra-plies, {} copied unchanged, {} failed; {} plies added in {:.1} s",
        summary.games,
        summary.files,
        summary.concluded,
        summary.capped,
        summary.unchanged,
        summary.failed,
        summary.plies_added,
        summary.seconds
    );
    Ok(())
}

fn rescore(args: &RescoreArgs) -> Result<()> {
    let tables = lc0::Tables::open(&args.syzygy).map_err(anyhow::Error::msg)?;
    let files: Vec<PathBuf> = lc0::v6_files(&args.paths)?.into_iter().filter(|f| !lc0::is_rescored(f)).collect();
    if files.is_empty() {
        bail!("no V6 game file (.gz) in the paths given");
    }
    eprintln!("{} table files, up to {} pieces; {} game files", tables.files(), tables.max_pieces(), files.len());
    let pool = rayon::ThreadPoolBuilder::new().num_threads(args.threads).build().context("starting the threads")?;
    let bar = ProgressBar::new(files.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} files [{elapsed} < {eta}]").expect("a valid template"),
    );
    let mut failed = 0;
    let options = lc0::RescoreOptions { replace: args.replace, resume: args.resume };
    let summary = lc0::rescore_files(&files, &tables, options, &pool, |event| match event {
        lc0::RescoreEvent::File(_) => bar.inc(1),
        lc0::RescoreEvent::Failed(path, reason) => {
            bar.inc(1);
            failed += 1;
            bar.suspend(|| tracing::error!("{}: {reason}", path.display()));
        }
    });
    bar.finish_and_clear();
    let share = |n: u64| 100.0 * n as f64 / summary.records.max(1) as f64;
    println!(
        "{} files rescored, {} skipped (--resume), {failed} failed; {} records: result changed in {} ({:.1}%), plies left in {} ({:.1}%); {:.1} s",
        summary.files,
        summary.skipped,
        summary.records,
        summary.results_changed,
        share(summary.results_changed),
        summary.plies_changed,
        share(summary.plies_changed),
        summary.seconds
    );
    if failed > 0 {
        bail!("{failed} files could not be rescored (their originals are untouched)");
    }
    Ok(())
}
