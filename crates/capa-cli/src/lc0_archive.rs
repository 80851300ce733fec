//! `capa lc0 pack` and `capa lc0 dedup`: converted trees into `.tar`
//! archives, and repeated positions of V6 files merged.

use std::path::PathBuf;

use anyhow::{Result, bail};
use capa_lc0::{self as lc0, ArchiveCompression, DedupEvent, DedupJob, PackEvent, PackJob};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

/// An archive's compression.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum PackCompression {
    /// A plain `.tar`, as Lc0 ships its runs (the members are gzipped already).
    #[default]
    None,
    /// A gzipped `.tar.gz`.
    Gz,
}

/// `capa lc0 pack`'s options.
#[derive(Args, Debug)]
pub struct PackArgs {
    /// The converted tree: the folder holding the `<name>-N/` folders.
    pub src: PathBuf,
    /// Where the archives are written (created if missing).
    #[arg(long)]
    pub output_dir: PathBuf,
    /// Chunk folders per archive.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub group: u64,
    /// How the archives are compressed.
    #[arg(long, value_enum, default_value_t = PackCompression::None)]
    pub compress: PackCompression,
    /// Skip the archives that already exist (without it, an existing archive is an error).
    #[arg(long)]
    pub resume: bool,
    /// Do not read each archive back to check its members before renaming it.
    #[arg(long)]
    pub no_verify: bool,
}

/// `capa lc0 dedup`'s options.
#[derive(Args, Debug)]
pub struct DedupArgs {
    /// V6 files (`.gz`) or folders searched recursively for them.
    #[arg(required = true)]
    pub files_or_dirs: Vec<PathBuf>,
    /// The folder the `<name>-N/` folders go in.
    #[arg(long, default_value = ".")]
    pub output_dir: PathBuf,
    /// The output folders' prefix.
    #[arg(long, default_value = "deduped")]
    pub name: String,
    /// Records per output file `chunk_NNNNNN.gz`.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    pub chunks_per_file: u64,
    /// Unique positions held before the window is written out and cleared;
    /// repeats across windows are not merged.
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub dedup_uniq_buffersize: u64,
    /// r in [0, 1]: best_q and root_q become q r + result_q (1 - r) before merging (1: unchanged).
    #[arg(long, default_value_t = 1.0)]
    pub dedup_q_ratio: f64,
    /// Output files per folder.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub files_per_dir: u64,
}

/// Runs `capa lc0 pack`: packs the converted tree SRC/<dir>/*.gz into
/// `.tar` archives laid out as Lc0 ships its training runs.
///
/// Members are `<dir>/<file>.gz`, so `tar -xf ARCHIVE -C SRC` recreates the
/// tree. Folders go in natural order (`supervised-2` before
/// `supervised-10`), --group per archive, named `<dir>.tar` (one folder) or
/// `<first>--<last>.tar` (several). Each archive is written to
/// `<archive>.partial`, read back and checked, then renamed; the sources are
/// never modified. The last line on stdout is the summary.
pub fn pack(args: &PackArgs) -> Result<()> {
    let job = PackJob {
        group: usize::try_from(args.group)?,
        compress: match args.compress {
            PackCompression::None => ArchiveCompression::None,
            PackCompression::Gz => ArchiveCompression::Gz,
        },
        resume: args.resume,
        verify: !args.no_verify,
        ..PackJob::new(&args.src, &args.output_dir)
    };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} archives {msg} [{elapsed}]").expect("a valid template"),
    );
    let summary = lc0::pack_chunks(&job, |event| match event {
        PackEvent::Planned { archives, .. } => bar.set_length(archives as u64),
        PackEvent::Skipped { archive } => {
            bar.set_message(format!("skipped {}", archive.display()));
            bar.inc(1);
        }
        PackEvent::Written { archive, .. } => {
            bar.set_message(format!("wrote {}", archive.display()));
            bar.inc(1);
        }
    })?;
    bar.finish_and_clear();
    println!(
        "{} archives written ({} members, {:.1} MB), {} skipped as existing, in {:.1} s",
        summary.archives_written,
        summary.members,
        summary.bytes as f64 / 1e6,
        summary.archives_skipped,
        summary.seconds
    );
    Ok(())
}

/// Runs `capa lc0 dedup`: merges repeated positions of V6 files as
/// trainingdata-tool's `-deduplication-mode` does.
///
/// Records with the same planes, castling rights, side to move and rule-50
/// clock are merged within a window by the mean of their policy and best
/// and root Q and D; the other fields keep the first occurrence's values
/// (so the played move may disagree with the merged policy). Unlike the
/// tool, the output is in first-seen order, a truncated input is an error,
/// and records of one position with other legal moves are kept apart. A
/// window holds about 8.4 KB per unique position (420 MB for 50,000). The
/// last line on stdout is the summary.
pub fn dedup(args: &DedupArgs) -> Result<()> {
    if !(0.0..=1.0).contains(&args.dedup_q_ratio) {
        bail!("--dedup-q-ratio must be in [0, 1], got {}", args.dedup_q_ratio);
    }
    if args.name.is_empty() || args.name.contains(['/', '\\']) {
        bail!("--name must be a plain folder prefix, got {:?}", args.name);
    }
    let job = DedupJob {
        output_dir: args.output_dir.clone(),
        name: args.name.clone(),
        chunks_per_file: usize::try_from(args.chunks_per_file)?,
        files_per_dir: args.files_per_dir,
        uniq_buffer: usize::try_from(args.dedup_uniq_buffersize)?,
        q_ratio: args.dedup_q_ratio,
    };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} files {msg} [{elapsed}]").expect("a valid template"),
    );
    let summary = lc0::dedup_files(&args.files_or_dirs, &job, |event| match event {
        DedupEvent::Planned { files } => bar.set_length(files as u64),
        DedupEvent::Progress(summary) => {
            bar.set_position(summary.files_read);
            bar.set_message(format!(
                "{} records read, {} merged, {:.0} records/s",
                summary.records_read,
                summary.merged,
                summary.records_read as f64 / summary.seconds.max(1e-9)
            ));
        }
    })?;
    bar.finish_and_clear();
    println!(
        "{} records read from {} files, {} unique written ({} merged, {} kept apart for other legal moves) in {} files, {} windows, {:.1} MB, in {:.1} s",
        summary.records_read,
        summary.files_read,
        summary.records_written,
        summary.merged,
        summary.mask_mismatches,
        summary.files_written,
        summary.windows,
        summary.bytes_written as f64 / 1e6,
        summary.seconds
    );
    Ok(())
}
