//! Game results and moves left from Syzygy tablebases (`capa lc0
//! rescore`): a position in the tables has a known result under the
//! 50-move rule, and so has every position of the game before it.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{EnPassantMode, Position};
use shakmaty_syzygy::{AmbiguousWdl, Tablebase};

use crate::files::{compress, read_game_file};
use crate::planes::decode_position;
use crate::record::V6Record;

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
    /// A folder cannot be read, holds no table, or holds WDL tables
    /// without their DTZ tables (a probe needs both).
    pub fn open(folders: &[PathBuf]) -> Result<Tables, String> {
        let mut tablebase = Tablebase::new();
        let mut files = 0;
        let (mut wdl, mut dtz) = (BTreeSet::new(), BTreeSet::new());
        for folder in folders {
            let unreadable = |e: std::io::Error| format!("cannot read the tablebase folder {}: {e}", folder.display());
            files += tablebase.add_directory(folder).map_err(unreadable)?;
            for entry in std::fs::read_dir(folder).map_err(unreadable)? {
                let name = entry.map_err(unreadable)?.file_name().to_string_lossy().into_owned();
                if let Some(table) = name.strip_suffix(".rtbw") {
                    wdl.insert(table.to_string());
                } else if let Some(table) = name.strip_suffix(".rtbz") {
                    dtz.insert(table.to_string());
                }
            }
        }
        let names = || folders.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ");
        if files == 0 {
            return Err(format!("no Syzygy table (.rtbw/.rtbz) in {}", names()));
        }
        let without_dtz: Vec<&String> = wdl.difference(&dtz).collect();
        if !without_dtz.is_empty() {
            let listed: Vec<&str> = without_dtz.iter().take(8).map(|t| t.as_str()).collect();
            return Err(format!(
                "{} WDL tables in {} have no DTZ table (.rtbz) beside them ({}{}): rescoring needs both",
                without_dtz.len(),
                names(),
                listed.join(", "),
                if without_dtz.len() > listed.len() { ", ..." } else { "" }
            ));
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
        self.probe_with(position, &mut HashMap::new())
    }

    /// [`Tables::probe`], with the lengths of the lines already followed
    /// (by position) to reuse: a game's later positions usually lie on an
    /// earlier one's line.
    fn probe_with(&self, position: &shakmaty::Chess, lines: &mut HashMap<Zobrist64, u32>) -> Option<TablebaseVerdict> {
        if position.board().occupied().count() > self.max_pieces() || position.castles().any() {
            return None;
        }
        let result = match self.tablebase.probe_wdl(position).ok()? {
            AmbiguousWdl::Win => 1,
            AmbiguousWdl::Loss => -1,
            AmbiguousWdl::Draw | AmbiguousWdl::CursedWin | AmbiguousWdl::BlessedLoss => 0,
            AmbiguousWdl::MaybeWin | AmbiguousWdl::MaybeLoss => return None,
        };
        let plies_to_end = if result == 0 { None } else { Some(self.line_length(position, lines)?) };
        Some(TablebaseVerdict { result, plies_to_end })
    }

    /// Plies to mate along the tables' best moves; every position met is
    /// remembered in `lines` with its own distance.
    fn line_length(&self, position: &shakmaty::Chess, lines: &mut HashMap<Zobrist64, u32>) -> Option<u32> {
        let mut position = position.clone();
        let mut met = Vec::new();
        let mut length = None;
        for plies in 0..MAX_LINE as u32 {
            let key = position.zobrist_hash::<Zobrist64>(EnPassantMode::Legal);
            if let Some(&known) = lines.get(&key) {
                length = Some(plies + known);
                break;
            }
            if position.is_checkmate() {
                length = Some(plies);
                break;
            }
            met.push(key);
            let (m, _) = self.tablebase.best_move(&position).ok()??;
            position = position.play(m).ok()?;
        }
        let length = length?;
        for (plies, key) in met.into_iter().enumerate() {
            lines.insert(key, length - plies as u32);
        }
        Some(length)
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
    let mut lines = HashMap::new();
    let verdicts: Vec<Option<TablebaseVerdict>> =
        records.iter().map(|record| decode_position(record).and_then(|p| tables.probe_with(&p, &mut lines))).collect();
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
    let last = records.len() - 1;
    for (i, (record, (result, plies))) in records.iter_mut().zip(settled).enumerate() {
        let result_q = f32::from(result);
        let result_d = if result == 0 { 1.0 } else { 0.0 };
        if (record.result_q, record.result_d) != (result_q, result_d) {
            results_changed += 1;
            // The last move's value is the game's result, as conversion writes it.
            if i == last && record.played_q == record.result_q {
                record.played_q = result_q;
            }
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

/// `files` without the originals whose rescored twin is among them: what
/// `dedup` and `pack` read after a `rescore` without `--replace`.
pub fn prefer_rescored(files: Vec<PathBuf>) -> Vec<PathBuf> {
    let twins: BTreeSet<PathBuf> = files.iter().filter(|f| is_rescored(f)).cloned().collect();
    files.into_iter().filter(|f| is_rescored(f) || !twins.contains(&rescored_path(f))).collect()
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
    capa_data::write_atomically(&twin, &bytes).map_err(|e| format!("cannot write {}: {e}", twin.display()))?;
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
        capa_data::rename_durably(&twin, path)
            .map_err(|e| format!("cannot move {} over its original: {e}", twin.display()))?;
    }
    Ok(Some(FileRescored { records: records.len() as u64, results_changed, plies_changed }))
}
