//! Game results and moves left from Syzygy tablebases (`capa lc0
//! rescore`): a position in the tables has a known result under the
//! 50-move rule, and so has every position of the game before it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use shakmaty::Position;
use shakmaty_syzygy::{AmbiguousWdl, Tablebase};

use super::planes::decode_position;
use super::record::V6Record;
use super::{compress, read_game_file};

/// The most plies a tablebase line is followed to find a game's end.
const MAX_LINE: usize = 1024;

/// What one position of a game is worth by the tables, for its side to move.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TablebaseVerdict {
    /// 1 won, 0 drawn (the 50-move rule counted), -1 lost.
    pub result: i8,
    /// Plies to checkmate along the tables' line (DTZ-optimal moves), for
    /// a decisive result.
    pub plies_to_end: Option<u32>,
}

/// Syzygy tables and the probes `rescore` makes.
pub struct Tables {
    tablebase: Tablebase<shakmaty::Chess>,
    files: usize,
}

impl Tables {
    /// Opens the tables (`.rtbw` with their `.rtbz`) of each folder.
    ///
    /// # Errors
    /// A folder cannot be read, or holds no table.
    pub fn open(folders: &[PathBuf]) -> Result<Tables, String> {
        let mut tablebase = Tablebase::new();
        let mut files = 0;
        for folder in folders {
            files += tablebase
                .add_directory(folder)
                .map_err(|e| format!("cannot read the tablebase folder {}: {e}", folder.display()))?;
        }
        if files == 0 {
            let names: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
            return Err(format!("no Syzygy table (.rtbw/.rtbz) in {}", names.join(", ")));
        }
        Ok(Tables { tablebase, files })
    }

    /// Table files opened.
    pub fn files(&self) -> usize {
        self.files
    }

    /// The most pieces a table covers.
    pub fn max_pieces(&self) -> usize {
        self.tablebase.max_pieces()
    }

    /// The position's verdict, or `None` when the tables cannot say: too
    /// many pieces, castling rights, a table missing, or a result that
    /// DTZ rounding leaves in doubt.
    pub fn probe(&self, position: &shakmaty::Chess) -> Option<TablebaseVerdict> {
        if position.board().occupied().count() > self.max_pieces() || position.castles().any() {
            return None;
        }
        let result = match self.tablebase.probe_wdl(position).ok()? {
            AmbiguousWdl::Win => 1,
            AmbiguousWdl::Loss => -1,
            AmbiguousWdl::Draw | AmbiguousWdl::CursedWin | AmbiguousWdl::BlessedLoss => 0,
            AmbiguousWdl::MaybeWin | AmbiguousWdl::MaybeLoss => return None,
        };
        let plies_to_end = if result == 0 { None } else { Some(self.line_length(position)?) };
        Some(TablebaseVerdict { result, plies_to_end })
    }

    /// Plies to mate along the tables' best moves.
    fn line_length(&self, position: &shakmaty::Chess) -> Option<u32> {
        let mut position = position.clone();
        for plies in 0..MAX_LINE {
            if position.is_checkmate() {
                return Some(plies as u32);
            }
            let (m, _) = self.tablebase.best_move(&position).ok()??;
            position = position.play(m).ok()?;
        }
        None
    }
}

/// One game's records rescored. Returns how many records changed their
/// result and their plies left.
///
/// Every position before the first one in the tables takes that one's
/// result (alternating by side), and its plies left grow by one per ply
/// from that position's; positions in the tables take their own; a
/// position after the first that the tables cannot judge follows the one
/// before it. Drawn positions keep their plies left.
pub fn rescore_game(records: &mut [V6Record], tables: &Tables) -> (usize, usize) {
    let verdicts: Vec<Option<TablebaseVerdict>> =
        records.iter().map(|record| decode_position(record).and_then(|p| tables.probe(&p))).collect();
    let Some(first) = verdicts.iter().position(Option::is_some) else { return (0, 0) };
    let mut settled: Vec<(i8, Option<u32>)> = vec![(0, None); records.len()];
    let anchor = verdicts[first].expect("found above");
    for (i, slot) in settled.iter_mut().enumerate().take(first + 1) {
        let distance = (first - i) as u32;
        let sign = if distance.is_multiple_of(2) { 1 } else { -1 };
        *slot = (anchor.result * sign, anchor.plies_to_end.map(|p| p + distance));
    }
    for i in first + 1..records.len() {
        settled[i] = match verdicts[i] {
            Some(verdict) => (verdict.result, verdict.plies_to_end),
            None => {
                let (result, plies) = settled[i - 1];
                (-result, plies.map(|p| p.saturating_sub(1)))
            }
        };
    }
    let (mut results_changed, mut plies_changed) = (0, 0);
    for (record, (result, plies)) in records.iter_mut().zip(settled) {
        let result_q = f32::from(result);
        let result_d = if result == 0 { 1.0 } else { 0.0 };
        if (record.result_q, record.result_d) != (result_q, result_d) {
            results_changed += 1;
            record.result_q = result_q;
            record.result_d = result_d;
        }
        if let Some(plies) = plies.map(|p| p as f32).filter(|&p| p != record.plies_left) {
            plies_changed += 1;
            record.plies_left = plies;
        }
    }
    (results_changed, plies_changed)
}

/// Where a game file's rescored twin goes: `game_000001.gz` ->
/// `game_000001_rescored.gz`, beside it.
pub fn rescored_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    path.with_file_name(format!("{stem}_rescored.gz"))
}

/// Whether `path` is a rescored twin (never an input).
pub fn is_rescored(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().ends_with("_rescored.gz"))
}

/// How `rescore_files` treats its inputs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RescoreOptions {
    /// Move each rescored file over its original once it is written and
    /// read back identical.
    pub replace: bool,
    /// Skip files that already have a rescored twin.
    pub resume: bool,
}

/// What rescoring did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RescoreSummary {
    /// Files rescored.
    pub files: u64,
    /// Files skipped for an existing twin (`resume`).
    pub skipped: u64,
    /// Records read.
    pub records: u64,
    /// Records whose result changed.
    pub results_changed: u64,
    /// Records whose plies left changed.
    pub plies_changed: u64,
    /// Wall seconds.
    pub seconds: f64,
}

/// What [`rescore_files`] reports as it goes.
pub enum RescoreEvent<'a> {
    /// A file is done (or skipped).
    File(&'a Path),
    /// A file could not be rescored: why. Its original is untouched.
    Failed(&'a Path, &'a str),
}

/// Rescores each game file of `files` on `pool`: the twin
/// `<stem>_rescored.gz` is written atomically beside it and read back;
/// with `replace` it then takes the original's name. An original is never
/// removed otherwise, nor when anything fails.
pub fn rescore_files(
    files: &[PathBuf],
    tables: &Tables,
    options: RescoreOptions,
    pool: &rayon::ThreadPool,
    mut report: impl FnMut(RescoreEvent<'_>),
) -> RescoreSummary {
    let started = Instant::now();
    let mut summary = RescoreSummary::default();
    for batch in files.chunks(pool.current_num_threads().max(1) * 16) {
        let done: Vec<_> = pool.install(|| batch.par_iter().map(|path| rescore_file(path, tables, options)).collect());
        for (path, result) in batch.iter().zip(done) {
            match result {
                Ok(Some(file)) => {
                    summary.files += 1;
                    summary.records += file.records;
                    summary.results_changed += file.results_changed as u64;
                    summary.plies_changed += file.plies_changed as u64;
                    report(RescoreEvent::File(path));
                }
                Ok(None) => {
                    summary.skipped += 1;
                    report(RescoreEvent::File(path));
                }
                Err(reason) => report(RescoreEvent::Failed(path, &reason)),
            }
        }
    }
    summary.seconds = started.elapsed().as_secs_f64();
    summary
}

/// What rescoring one file changed.
struct FileRescored {
    records: u64,
    results_changed: usize,
    plies_changed: usize,
}

/// One file: `None` when skipped for its twin.
fn rescore_file(path: &Path, tables: &Tables, options: RescoreOptions) -> Result<Option<FileRescored>, String> {
    let twin = rescored_path(path);
    if options.resume && twin.exists() {
        return Ok(None);
    }
    let mut records = read_game_file(path)?;
    let (results_changed, plies_changed) = rescore_game(&mut records, tables);
    let bytes = compress(&records);
    crate::write_atomically(&twin, &bytes).map_err(|e| format!("cannot write {}: {e}", twin.display()))?;
    // Compared as bytes: the records hold NaNs, which never equal themselves.
    let raw = |records: &[V6Record]| {
        let mut raw = Vec::new();
        records.iter().for_each(|r| r.write_to(&mut raw));
        raw
    };
    if raw(&read_game_file(&twin)?) != raw(&records) {
        return Err(format!("{} does not read back as written; the original is kept", twin.display()));
    }
    if options.replace {
        std::fs::rename(&twin, path).map_err(|e| format!("cannot move {} over its original: {e}", twin.display()))?;
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::File::open(folder)
            .and_then(|f| f.sync_all())
            .map_err(|e| format!("cannot sync {}: {e}", folder.display()))?;
    }
    Ok(Some(FileRescored { records: records.len() as u64, results_changed, plies_changed }))
}
