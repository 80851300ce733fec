//! Merging repeated positions of V6 files, as trainingdata-tool's
//! `-deduplication-mode` does.
//!
//! Records are keyed by what the network sees: the 104 planes, the four
//! castling bytes, the side to move and the rule-50 clock (Q, D, results
//! and plies left are not part of the key). Records with the same key are
//! merged within a window of unique positions by the mean of their policy,
//! best and root Q and D; every other field keeps the first occurrence's
//! value, so `played_idx` (and `best_idx`) may disagree with the merged
//! policy, as in the tool.
//!
//! Where capa differs from the tool: the output is in first-seen order (the
//! tool writes hash-map order), so a run is reproducible; a file that ends
//! inside a record or a gzip stream is an error naming it (the tool drops
//! the tail silently); records of one key whose legal moves differ (their
//! -1 pattern) are kept apart and counted instead of averaged.
//!
//! Memory: a window holds each unique position's record, about 8.4 KB
//! (420 MB for the default window of 50,000), plus the f64 sums of the
//! legal moves' probabilities (a few hundred bytes) of those seen more than
//! once, and up to one output file's records.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::path::PathBuf;
use std::time::Instant;

use crate::files::{compress, numbered_path, read_game_file, v6_files};
use crate::record::V6Record;
use crate::rescore::prefer_rescored;

/// Where and how [`dedup_files`] writes, and its window.
#[derive(Clone, Debug)]
pub struct DedupJob {
    /// The folder the `<name>-N` folders go in.
    pub output_dir: PathBuf,
    /// The folders' prefix.
    pub name: String,
    /// Records per output file (the last file may hold fewer).
    pub chunks_per_file: usize,
    /// Output files per folder.
    pub files_per_dir: u64,
    /// Unique positions held before the window is written out and cleared;
    /// repeats across windows are not merged.
    pub uniq_buffer: usize,
    /// r in [0, 1]: best_q and root_q become q r + result_q (1 - r) before
    /// merging; 1 leaves them unchanged.
    pub q_ratio: f64,
}

impl Default for DedupJob {
    /// trainingdata-tool's defaults, in `./deduped-N/`.
    fn default() -> DedupJob {
        DedupJob {
            output_dir: PathBuf::from("."),
            name: "deduped".into(),
            chunks_per_file: 4096,
            files_per_dir: 10_000,
            uniq_buffer: 50_000,
            q_ratio: 1.0,
        }
    }
}

impl DedupJob {
    /// The path of the `number`-th output file (from 0):
    /// `<output_dir>/<name>-<k>/chunk_NNNNNN.gz`.
    pub fn chunk_path(&self, number: u64) -> PathBuf {
        numbered_path(&self.output_dir, &self.name, self.files_per_dir, "chunk", number)
    }
}

/// What a deduplication did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DedupSummary {
    /// Input files read.
    pub files_read: u64,
    /// Records read.
    pub records_read: u64,
    /// Records written: one per unique position of each window.
    pub records_written: u64,
    /// Records merged into an earlier one of the same window.
    pub merged: u64,
    /// Records whose key was held with other legal moves, kept apart.
    pub mask_mismatches: u64,
    /// Output files written.
    pub files_written: u64,
    /// Windows written out (the last, partial one included).
    pub windows: u64,
    /// Compressed bytes written.
    pub bytes_written: u64,
    /// Wall seconds.
    pub seconds: f64,
}

/// What [`dedup_files`] reports as it goes.
#[derive(Debug)]
pub enum DedupEvent<'a> {
    /// Before reading: the input files found.
    Planned {
        /// Their number.
        files: usize,
    },
    /// An input file was read; the totals so far.
    Progress(&'a DedupSummary),
}

/// A deduplication that stopped.
#[derive(Debug, thiserror::Error)]
pub enum DedupError {
    /// The job's settings are not usable.
    #[error("{0}")]
    Settings(String),
    /// An input does not exist or a folder cannot be listed.
    #[error(transparent)]
    Input(#[from] capa_data::InputError),
    /// The inputs hold no `.gz` file.
    #[error("no .gz file in the inputs")]
    NoInput,
    /// An input file is not whole V6 records in gzip (the message names it).
    #[error("{message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the file's name.
        message: String,
    },
    /// An output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The output already holds files of this name.
    #[error(
        "{} already exists: capa does not mix two outputs in one folder; choose another --name or --output-dir, or remove it",
        path.display()
    )]
    OutputExists {
        /// The existing folder.
        path: PathBuf,
    },
}

/// Merges the repeated positions of `inputs`: V6 `.gz` files, or folders
/// searched recursively for them (hidden files left out), each folder's
/// files in path order, the inputs in the order given. Each file is read
/// whole with [`read_game_file`]. Each best_q and root_q is first blended
/// with the result by `job.q_ratio`. Output files of `job.chunks_per_file`
/// records are written atomically, numbered from 0 across folders of
/// `job.files_per_dir` (see [`DedupJob::chunk_path`]); an existing
/// `<output_dir>/<name>-0` is refused before anything is read.
///
/// # Errors
/// See [`DedupError`].
pub fn dedup_files(
    inputs: &[PathBuf],
    job: &DedupJob,
    mut report: impl FnMut(DedupEvent<'_>),
) -> Result<DedupSummary, DedupError> {
    if !(0.0..=1.0).contains(&job.q_ratio) {
        return Err(DedupError::Settings(format!("the Q ratio must be in [0, 1], got {}", job.q_ratio)));
    }
    for (name, value) in [("records per file", job.chunks_per_file), ("the window", job.uniq_buffer)] {
        if value == 0 {
            return Err(DedupError::Settings(format!("{name} must be at least 1")));
        }
    }
    if job.files_per_dir == 0 {
        return Err(DedupError::Settings("files per folder must be at least 1".into()));
    }
    let first = job.output_dir.join(format!("{}-0", job.name));
    if first.exists() {
        return Err(DedupError::OutputExists { path: first });
    }
    let files = prefer_rescored(v6_files(inputs)?);
    if files.is_empty() {
        return Err(DedupError::NoInput);
    }
    report(DedupEvent::Planned { files: files.len() });
    let started = Instant::now();
    let mut summary = DedupSummary::default();
    let mut window = Window::default();
    let mut output = Output { job, pending: Vec::new() };
    for path in &files {
        let records = read_game_file(path).map_err(|message| DedupError::Read { path: path.clone(), message })?;
        summary.files_read += 1;
        for mut record in records {
            summary.records_read += 1;
            if job.q_ratio != 1.0 {
                let blend =
                    |q: f32| (f64::from(q) * job.q_ratio + f64::from(record.result_q) * (1.0 - job.q_ratio)) as f32;
                record.best_q = blend(record.best_q);
                record.root_q = blend(record.root_q);
            }
            match window.add(record) {
                Added::New => {}
                Added::Merged => summary.merged += 1,
                Added::Apart => summary.mask_mismatches += 1,
            }
            if window.entries.len() >= job.uniq_buffer {
                output.flush(&mut window, false, &mut summary)?;
            }
        }
        summary.seconds = started.elapsed().as_secs_f64();
        report(DedupEvent::Progress(&summary));
    }
    output.flush(&mut window, true, &mut summary)?;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// How a record entered the window.
enum Added {
    /// A new position.
    New,
    /// Merged into a held one.
    Merged,
    /// Its key was held, with other legal moves: a new entry.
    Apart,
}

/// One unique position of a window.
struct Entry {
    /// The first occurrence (its values are replaced by the means when
    /// written).
    record: V6Record,
    /// Sums of the occurrences, from the second one on.
    sums: Option<Box<Sums>>,
    /// Occurrences merged.
    count: u32,
}

/// The sums a mean is taken of, in f64.
struct Sums {
    /// The legal moves' probabilities, in policy order.
    legal: Vec<f64>,
    best_q: f64,
    root_q: f64,
    best_d: f64,
    root_d: f64,
}

impl Sums {
    fn of(record: &V6Record) -> Sums {
        Sums {
            legal: record.probabilities.iter().filter(|&&p| p != -1.0).map(|&p| f64::from(p)).collect(),
            best_q: f64::from(record.best_q),
            root_q: f64::from(record.root_q),
            best_d: f64::from(record.best_d),
            root_d: f64::from(record.root_d),
        }
    }

    fn add(&mut self, record: &V6Record) {
        let legal = record.probabilities.iter().filter(|&&p| p != -1.0);
        for (sum, &p) in self.legal.iter_mut().zip(legal) {
            *sum += f64::from(p);
        }
        self.best_q += f64::from(record.best_q);
        self.root_q += f64::from(record.root_q);
        self.best_d += f64::from(record.best_d);
        self.root_d += f64::from(record.root_d);
    }
}

/// The unique positions seen since the last flush, in first-seen order.
#[derive(Default)]
struct Window {
    entries: Vec<Entry>,
    /// A key's hash to the entries with it.
    by_hash: HashMap<u64, Vec<usize>>,
}

fn key_hash(record: &V6Record) -> u64 {
    let mut hasher = DefaultHasher::new();
    record.planes.hash(&mut hasher);
    record.castling.hash(&mut hasher);
    record.side_to_move_or_enpassant.hash(&mut hasher);
    record.rule50_count.hash(&mut hasher);
    hasher.finish()
}

fn same_key(a: &V6Record, b: &V6Record) -> bool {
    a.planes == b.planes
        && a.castling == b.castling
        && a.side_to_move_or_enpassant == b.side_to_move_or_enpassant
        && a.rule50_count == b.rule50_count
}

fn same_legal_moves(a: &V6Record, b: &V6Record) -> bool {
    a.probabilities.len() == b.probabilities.len()
        && a.probabilities.iter().zip(&b.probabilities).all(|(&x, &y)| (x == -1.0) == (y == -1.0))
}

impl Window {
    fn add(&mut self, record: V6Record) -> Added {
        let same_hash = self.by_hash.entry(key_hash(&record)).or_default();
        let mut key_held = false;
        for &index in same_hash.iter() {
            let entry = &mut self.entries[index];
            if same_key(&entry.record, &record) {
                if same_legal_moves(&entry.record, &record) {
                    entry.sums.get_or_insert_with(|| Box::new(Sums::of(&entry.record))).add(&record);
                    entry.count += 1;
                    return Added::Merged;
                }
                key_held = true;
            }
        }
        same_hash.push(self.entries.len());
        self.entries.push(Entry { record, sums: None, count: 1 });
        if key_held { Added::Apart } else { Added::New }
    }

    /// The entries in first-seen order, merged values replaced by their
    /// means; the window is left empty.
    fn drain(&mut self) -> impl Iterator<Item = V6Record> + '_ {
        self.by_hash.clear();
        self.entries.drain(..).map(|entry| {
            let mut record = entry.record;
            if let Some(sums) = entry.sums {
                let n = f64::from(entry.count);
                let legal = record.probabilities.iter_mut().filter(|p| **p != -1.0);
                for (p, sum) in legal.zip(&sums.legal) {
                    *p = (sum / n) as f32;
                }
                record.best_q = (sums.best_q / n) as f32;
                record.root_q = (sums.root_q / n) as f32;
                record.best_d = (sums.best_d / n) as f32;
                record.root_d = (sums.root_d / n) as f32;
            }
            record
        })
    }
}

/// Records waiting for a full output file.
struct Output<'a> {
    job: &'a DedupJob,
    pending: Vec<V6Record>,
}

impl Output<'_> {
    /// Writes the window out (files of `chunks_per_file` records, the rest
    /// pending unless `last`).
    fn flush(&mut self, window: &mut Window, last: bool, summary: &mut DedupSummary) -> Result<(), DedupError> {
        if !window.entries.is_empty() {
            summary.windows += 1;
        }
        for record in window.drain() {
            summary.records_written += 1;
            self.pending.push(record);
            if self.pending.len() >= self.job.chunks_per_file {
                self.write(summary)?;
            }
        }
        if last && !self.pending.is_empty() {
            self.write(summary)?;
        }
        Ok(())
    }

    fn write(&mut self, summary: &mut DedupSummary) -> Result<(), DedupError> {
        let path = self.job.chunk_path(summary.files_written);
        let bytes = compress(&self.pending);
        self.pending.clear();
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)
                .map_err(|source| DedupError::Write { path: folder.to_path_buf(), source })?;
        }
        capa_data::write_atomically(&path, &bytes)
            .map_err(|source| DedupError::Write { path: path.clone(), source })?;
        summary.files_written += 1;
        summary.bytes_written += bytes.len() as u64;
        Ok(())
    }
}
