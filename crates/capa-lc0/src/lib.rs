//! Lc0's V6 training data from PGN games: the record, the 112-plane input,
//! the eval-to-WDL model, and the conversion of whole PGN files into
//! `<name>-N/game_NNNNNN.gz` folders, one game per file, as Lc0's
//! trainer and trainingdata-tool lay them out; finishing unfinished games
//! with an engine, rescoring against Syzygy tables, deduplication and
//! packing into the tar chunks Lc0's training runs ship as (`capa lc0`);
//! and the reading side for training: V6 files and archives streamed
//! through reader threads and a shuffle buffer as samples. [`weights`]:
//! Lc0's network weights file (`.pb.gz`).

#![deny(missing_docs)]

mod convert;
mod dedup;
mod engine;
mod files;
mod finish;
mod fit;
mod pack;
mod pgn;
mod planes;
mod record;
mod rescore;
mod sample;
mod stream;
mod wdl;
pub mod weights;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use capa_data::InputError;
use capa_rules::chess::Chess;
use rayon::prelude::*;

pub use convert::{ConvertSettings, ConvertedGame, EvalSource, SkipReason, convert_game};
pub use dedup::{DedupError, DedupEvent, DedupJob, DedupSummary, dedup_files};
use engine::EnginePool;
pub use engine::{EngineEvaluator, EngineSpec, EngineVerdict};
use files::numbered_path;
pub use files::{compress, open_pgn, partial_path, read_game_file, v6_files};
pub use finish::{
    FinishError, FinishEvent, FinishOutcome, FinishSettings, FinishSummary, cutechess_comment, finish_files,
};
pub use fit::{
    BAND_WIDTH, Band, EvalBands, LabelledEval, MIN_BAND_POSITIONS, implied_spread, labelled_evals, lc0_display_q,
};
pub use pack::{ArchiveCompression, PackError, PackEvent, PackJob, PackSummary, pack_chunks};
pub use pgn::{CommentEval, PgnReader, SourceGame, SourceMove, comment_eval};
pub use planes::{Lc0Input, decode_position, encode, reverse_bits_in_bytes};
pub use record::{
    ADJUDICATED, CLASSICAL_INPUT, PLANE_COUNT, POLICY_SIZE, RecordProblem, RecordReadError, V6_SIZE, V6_VERSION,
    V6Record,
};
pub use rescore::{
    RescoreEvent, RescoreOptions, RescoreSummary, TablebaseVerdict, Tables, is_rescored, prefer_rescored,
    rescore_files, rescore_game, rescored_path,
};
pub use sample::{INPUT_FLOATS, QSource, SampleError, SampleSettings, V6Sample};
pub use stream::{Chunk, DataWarning, StreamCounts, StreamSettings, V6Stream, read_chunk, read_samples, v6_chunks};
pub use wdl::{MATE_PAWNS, WdlModel, r50_damp, static_eval, wdl_rescale};

/// Games converted together: enough to keep every thread busy, few enough
/// that memory stays small.
const BATCH: usize = 256;

/// Where and how `convert_files` writes.
#[derive(Clone, Debug)]
pub struct ConvertJob {
    /// The folder the `<name>-N` folders go in.
    pub output_dir: PathBuf,
    /// The folders' prefix.
    pub name: String,
    /// Game files per folder.
    pub files_per_dir: u64,
    /// Stop after this many games are written.
    pub max_games: Option<u64>,
    /// How games become records.
    pub settings: ConvertSettings,
    /// The engine that scores positions when `settings.eval` is
    /// [`EvalSource::Engine`]: one per thread.
    pub engine: Option<EngineSpec>,
}

impl ConvertJob {
    /// The path of the `number`-th game file (from 0).
    pub fn game_path(&self, number: u64) -> PathBuf {
        numbered_path(&self.output_dir, &self.name, self.files_per_dir, "game", number)
    }
}

/// What a conversion did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConvertSummary {
    /// Games read from the PGNs.
    pub games_read: u64,
    /// Games written.
    pub games_written: u64,
    /// Records written.
    pub positions: u64,
    /// Skipped games by reason.
    pub skipped: BTreeMap<&'static str, u64>,
    /// Positions whose eval came from a neighbouring move (comment-eval mode).
    pub neighbour_evals: u64,
    /// Positions that fell back to the static eval (comment-eval mode).
    pub static_fallbacks: u64,
    /// Positions the engine scored without a WDL (engine mode).
    pub model_evals: u64,
    /// Compressed bytes written.
    pub bytes_written: u64,
    /// Wall seconds.
    pub seconds: f64,
}

/// What `convert_files` reports as it goes.
pub enum ConvertEvent<'a> {
    /// A game was skipped: the file, the game, why.
    Skipped(&'a Path, &'a SourceGame, &'a SkipReason),
    /// A batch was written; the totals so far.
    Progress(&'a ConvertSummary),
}

/// A conversion that stopped.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// An input could not be read (a truncated `.gz` among others).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The input.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The engine that scores positions cannot be started or set up.
    #[error("{0}")]
    Engine(#[from] capa_uci::UciError),
    /// Engine mode without an engine to run.
    #[error("engine evaluation needs an engine: none was given")]
    NoEngine,
    /// The output already holds game files of this name.
    #[error(
        "{} already exists: capa does not mix two conversions in one folder; choose another --name or --output-dir, or remove it",
        path.display()
    )]
    OutputExists {
        /// The first existing game file or folder.
        path: PathBuf,
    },
}

/// Converts every game of `inputs` (in order) into V6 game files numbered
/// in PGN order, whatever the number of threads (`pool`'s). Skipped games
/// are reported and counted, never fatal; unreadable inputs and failed
/// writes stop the conversion. Every file is written atomically.
///
/// # Errors
/// See [`ConvertError`].
pub fn convert_files(
    inputs: &[PathBuf],
    job: &ConvertJob,
    pool: &rayon::ThreadPool,
    mut report: impl FnMut(ConvertEvent<'_>),
) -> Result<ConvertSummary, ConvertError> {
    let first = job.output_dir.join(format!("{}-0", job.name));
    if first.exists() {
        return Err(ConvertError::OutputExists { path: first });
    }
    // A game the engine fails on is skipped, the engine replaced.
    let engines = match job.settings.eval {
        EvalSource::Engine => Some(EnginePool::start(job.engine.as_ref().ok_or(ConvertError::NoEngine)?)?),
        _ => None,
    };
    let convert_one = |game: &SourceGame| match &engines {
        None => convert_game(game, &job.settings, None),
        Some(engines) => engines.run(
            |engine| convert_game(game, &job.settings, Some(engine)),
            |skip| matches!(skip, SkipReason::Engine(_)),
            |e| SkipReason::Engine(e.to_string()),
        ),
    };
    let started = Instant::now();
    let mut summary = ConvertSummary::default();
    for path in inputs {
        let read_error = |source| ConvertError::Read { path: path.clone(), source };
        let mut reader = PgnReader::new(open_pgn(path).map_err(read_error)?);
        loop {
            let wanted = job.max_games.map_or(BATCH as u64, |max| (max - summary.games_written).min(BATCH as u64));
            let batch = reader.next_games(wanted).map_err(read_error)?;
            if batch.is_empty() {
                break;
            }
            summary.games_read += batch.len() as u64;
            let converted: Vec<Result<(ConvertedGame, Vec<u8>), SkipReason>> = pool.install(|| {
                batch
                    .par_iter()
                    .map(|game| {
                        let converted = convert_one(game)?;
                        let bytes = compress(&converted.records);
                        Ok((converted, bytes))
                    })
                    .collect()
            });
            let mut files = Vec::new();
            for (game, result) in batch.iter().zip(converted) {
                match result {
                    Ok((converted, bytes)) => {
                        summary.positions += converted.records.len() as u64;
                        summary.neighbour_evals += converted.neighbour_evals as u64;
                        summary.static_fallbacks += converted.static_fallbacks as u64;
                        summary.model_evals += converted.model_evals as u64;
                        summary.bytes_written += bytes.len() as u64;
                        files.push((job.game_path(summary.games_written), bytes));
                        summary.games_written += 1;
                    }
                    Err(reason) => {
                        *summary.skipped.entry(reason.kind()).or_default() += 1;
                        report(ConvertEvent::Skipped(path, game, &reason));
                    }
                }
            }
            write_files(&files, pool)?;
            summary.seconds = started.elapsed().as_secs_f64();
            report(ConvertEvent::Progress(&summary));
            if job.max_games.is_some_and(|max| summary.games_written >= max) {
                return Ok(summary);
            }
        }
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

fn write_files(files: &[(PathBuf, Vec<u8>)], pool: &rayon::ThreadPool) -> Result<(), ConvertError> {
    let mut folders: Vec<&Path> = files.iter().filter_map(|(path, _)| path.parent()).collect();
    folders.dedup();
    for folder in folders {
        std::fs::create_dir_all(folder).map_err(|source| ConvertError::Write { path: folder.to_path_buf(), source })?;
    }
    pool.install(|| {
        files.par_iter().try_for_each(|(path, bytes)| {
            capa_data::write_atomically(path, bytes)
                .map_err(|source| ConvertError::Write { path: path.clone(), source })
        })
    })
}

/// A policy index as the move it stands for, for the side to move
/// (`black`: ranks mirrored back), in Lc0's notation (castling as
/// king-takes-rook, `e1h1`).
pub fn policy_move(index: u16, black: bool) -> String {
    let Some(uci) = Chess::policy_map().uci(usize::from(index)) else { return format!("#{index}") };
    if !black {
        return uci;
    }
    uci.chars()
        .map(|c| match c.to_digit(10) {
            Some(rank @ 1..=8) => char::from_digit(9 - rank, 10).expect("a digit"),
            _ => c,
        })
        .collect()
}

/// What is wrong with one game's records (record index, problem): each
/// record's own invariants ([`V6Record::problems`]), plies left that do
/// not count down by one, and results that do not alternate in sign
/// between the sides (or stay 0 for a draw).
pub fn game_problems(records: &[V6Record]) -> Vec<(usize, String)> {
    let mut problems: Vec<(usize, String)> = Vec::new();
    for (i, record) in records.iter().enumerate() {
        problems.extend(record.problems().into_iter().map(|p| (i, p.to_string())));
        if let Some(next) = records.get(i + 1) {
            if record.plies_left - next.plies_left != 1.0 {
                problems.push((
                    i + 1,
                    format!("plies_left {} follows {}: they must count down by 1", next.plies_left, record.plies_left),
                ));
            }
            let alternates = record.result_q == -next.result_q && record.result_d == next.result_d;
            if !alternates {
                problems.push((
                    i + 1,
                    format!(
                        "result_q {} after {}: a game's result alternates in sign (or stays 0)",
                        next.result_q, record.result_q
                    ),
                ));
            }
        }
    }
    problems
}

/// Buckets by eval the commented positions of `inputs` (at most `limit`).
///
/// # Errors
/// An input that cannot be read.
pub fn eval_bands(inputs: &[PathBuf], limit: Option<u64>) -> Result<EvalBands, ConvertError> {
    let mut bands = EvalBands::default();
    let mut counted = 0;
    for path in inputs {
        let read_error = |source| ConvertError::Read { path: path.clone(), source };
        let mut reader = PgnReader::new(open_pgn(path).map_err(read_error)?);
        while let Some(game) = reader.next_game().map_err(read_error)? {
            for labelled in labelled_evals(&game) {
                if limit.is_some_and(|limit| counted >= limit) {
                    return Ok(bands);
                }
                bands.add(labelled);
                counted += 1;
            }
        }
    }
    Ok(bands)
}
