//! Packing a converted tree (`SRC/<dir>/*.gz`) into `.tar` archives laid
//! out as Lc0 ships its training runs: members are stored as
//! `<dir>/<file>.gz`, so `tar -xf` recreates the tree.
//!
//! Each archive is written to `<archive>.partial`, fsynced, read back and
//! checked (member count, names and sizes), then renamed, so an
//! interrupted run never leaves a truncated archive under its final name.
//! The sources are only read.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use crate::files::partial_path;
use crate::rescore::prefer_rescored;

/// How an archive is compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ArchiveCompression {
    /// A plain `.tar`, as Lc0 ships its runs: the members are gzip files
    /// already, so compressing again buys little for much CPU.
    #[default]
    None,
    /// A gzipped `.tar.gz`.
    Gz,
}

impl ArchiveCompression {
    /// The archive's extension: `.tar` or `.tar.gz`.
    pub fn extension(self) -> &'static str {
        match self {
            ArchiveCompression::None => ".tar",
            ArchiveCompression::Gz => ".tar.gz",
        }
    }
}

/// What [`pack_chunks`] packs, and how.
#[derive(Clone, Debug)]
pub struct PackJob {
    /// The converted tree: its subfolders holding `.gz` files are packed.
    pub source: PathBuf,
    /// Where the archives go (created if missing).
    pub output_dir: PathBuf,
    /// Chunk folders per archive (at least 1).
    pub group: usize,
    /// Plain `.tar` or `.tar.gz`.
    pub compress: ArchiveCompression,
    /// Skip the archives whose final name exists; without it, an existing
    /// archive is an error.
    pub resume: bool,
    /// Read each archive back before renaming it into place.
    pub verify: bool,
}

impl PackJob {
    /// A job with the defaults: one folder per archive, no compression, no
    /// resume, verified.
    pub fn new(source: impl Into<PathBuf>, output_dir: impl Into<PathBuf>) -> PackJob {
        PackJob {
            source: source.into(),
            output_dir: output_dir.into(),
            group: 1,
            compress: ArchiveCompression::None,
            resume: false,
            verify: true,
        }
    }
}

/// What a packing did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PackSummary {
    /// Archives written.
    pub archives_written: u64,
    /// Archives skipped because they existed (resume).
    pub archives_skipped: u64,
    /// Members of the archives written.
    pub members: u64,
    /// Bytes of the archives written.
    pub bytes: u64,
    /// Wall seconds.
    pub seconds: f64,
}

/// What [`pack_chunks`] reports as it goes.
#[derive(Debug)]
pub enum PackEvent<'a> {
    /// Before anything is written: the archives planned (skipped ones
    /// included) and their members in all.
    Planned {
        /// Archives.
        archives: usize,
        /// Members.
        members: u64,
    },
    /// An existing archive was skipped (resume).
    Skipped {
        /// Its final path.
        archive: &'a Path,
    },
    /// An archive was written (and verified unless told not to).
    Written {
        /// Its final path.
        archive: &'a Path,
        /// Its members.
        members: u64,
        /// Its size.
        bytes: u64,
    },
}

/// A packing that stopped.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The job's settings are not usable.
    #[error("{0}")]
    Settings(String),
    /// The source does not exist.
    #[error("{} does not exist", path.display())]
    SourceMissing {
        /// The source.
        path: PathBuf,
    },
    /// The source is not a folder.
    #[error("{} is not a folder: pack takes the folder holding the converted <name>-N folders", path.display())]
    SourceNotAFolder {
        /// The source.
        path: PathBuf,
    },
    /// No subfolder of the source holds a `.gz` file.
    #[error("{} holds no chunk folder (a subfolder with .gz files) to pack", path.display())]
    NoChunkFolders {
        /// The source.
        path: PathBuf,
    },
    /// A source folder or file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An archive could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The archive (its `.partial`) or the output folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An archive exists and the job does not resume.
    #[error("{} already exists: pass --resume to skip the archives already written, or remove it", path.display())]
    ArchiveExists {
        /// The first existing archive.
        path: PathBuf,
    },
    /// An archive read back does not hold what was put in; its `.partial`
    /// was removed.
    #[error("{} does not read back as written ({reason}); removed it", path.display())]
    Verify {
        /// The `.partial` file.
        path: PathBuf,
        /// What differed.
        reason: String,
    },
}

/// One member: its name in the archive, its source, its size when listed.
#[derive(Clone)]
struct Member {
    name: String,
    source: PathBuf,
    size: u64,
}

/// One archive to write.
struct Planned {
    path: PathBuf,
    members: Vec<Member>,
    exists: bool,
}

/// Packs `job.source`'s chunk folders into archives of `job.group` folders
/// each, in natural order (`supervised-2` before `supervised-10`: by the
/// number after the last `-`, then by name; folders without such a number
/// come first). A chunk folder is an immediate subfolder holding `.gz`
/// files; its `.gz` files (hidden ones and names that are not UTF-8 left
/// out) are packed sorted by name as `<dir>/<file>.gz`, nothing else.
///
/// An archive of one folder is named `<dir>.tar`, of several
/// `<first>--<last>.tar` (`.tar.gz` when compressed); with a group above 1
/// the last archive may hold fewer folders. Existing archives are checked
/// before anything is written; a `.partial` left by a killed run is
/// overwritten.
///
/// # Errors
/// See [`PackError`].
pub fn pack_chunks(job: &PackJob, mut report: impl FnMut(PackEvent<'_>)) -> Result<PackSummary, PackError> {
    if job.group == 0 {
        return Err(PackError::Settings("the group must be at least 1 folder per archive".into()));
    }
    let started = Instant::now();
    let folders = chunk_folders(&job.source, &job.output_dir)?;
    let mut plan = Vec::new();
    for group in folders.chunks(job.group) {
        let (first, last) = (&group[0].0, &group[group.len() - 1].0);
        let stem = if group.len() == 1 { first.clone() } else { format!("{first}--{last}") };
        let path = job.output_dir.join(format!("{stem}{}", job.compress.extension()));
        let exists = path.exists();
        if exists && !job.resume {
            return Err(PackError::ArchiveExists { path });
        }
        let members = group.iter().flat_map(|(_, members)| members).cloned().collect();
        plan.push(Planned { path, members, exists });
    }
    report(PackEvent::Planned {
        archives: plan.len(),
        members: plan.iter().map(|archive| archive.members.len() as u64).sum(),
    });
    let mut summary = PackSummary::default();
    if plan.iter().any(|archive| !archive.exists) {
        std::fs::create_dir_all(&job.output_dir)
            .map_err(|source| PackError::Write { path: job.output_dir.clone(), source })?;
    }
    for archive in &plan {
        if archive.exists {
            summary.archives_skipped += 1;
            report(PackEvent::Skipped { archive: &archive.path });
            continue;
        }
        let bytes = write_archive(archive, job)?;
        summary.archives_written += 1;
        summary.members += archive.members.len() as u64;
        summary.bytes += bytes;
        report(PackEvent::Written { archive: &archive.path, members: archive.members.len() as u64, bytes });
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The sort key of a chunk folder: the number after its last `-`, then
/// the name.
fn natural_key(name: &str) -> (Option<u64>, &str) {
    let number = name
        .rsplit_once('-')
        .map(|(_, n)| n)
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse().ok());
    (number, name)
}

/// The entries of `dir` as (name, path), UTF-8 and not hidden.
fn listing(dir: &Path) -> Result<Vec<(String, PathBuf)>, PackError> {
    let read_error = |source| PackError::Read { path: dir.to_path_buf(), source };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        if let Some(name) = entry.file_name().to_str().filter(|name| !name.starts_with('.')) {
            entries.push((name.to_string(), entry.path()));
        }
    }
    Ok(entries)
}

/// The chunk folders of `source` in natural order, each with its members
/// sorted by name; `output_dir` is never one of them.
fn chunk_folders(source: &Path, output_dir: &Path) -> Result<Vec<(String, Vec<Member>)>, PackError> {
    if !source.exists() {
        return Err(PackError::SourceMissing { path: source.to_path_buf() });
    }
    if !source.is_dir() {
        return Err(PackError::SourceNotAFolder { path: source.to_path_buf() });
    }
    let output = output_dir.canonicalize().ok();
    let mut folders = Vec::new();
    for (dir, path) in listing(source)? {
        if !path.is_dir() || output.is_some() && path.canonicalize().ok() == output {
            continue;
        }
        let mut members = Vec::new();
        for (file, file_path) in listing(&path)? {
            if !file.ends_with(".gz") {
                continue;
            }
            let metadata =
                std::fs::metadata(&file_path).map_err(|source| PackError::Read { path: file_path.clone(), source })?;
            if metadata.is_file() {
                members.push(Member { name: format!("{dir}/{file}"), source: file_path, size: metadata.len() });
            }
        }
        let kept: std::collections::BTreeSet<PathBuf> =
            prefer_rescored(members.iter().map(|m| m.source.clone()).collect()).into_iter().collect();
        members.retain(|m| kept.contains(&m.source));
        if !members.is_empty() {
            members.sort_by(|a, b| a.name.cmp(&b.name));
            folders.push((dir, members));
        }
    }
    if folders.is_empty() {
        return Err(PackError::NoChunkFolders { path: source.to_path_buf() });
    }
    folders.sort_by(|(a, _), (b, _)| natural_key(a).cmp(&natural_key(b)));
    Ok(folders)
}

/// Writes, checks and renames one archive; its size.
fn write_archive(archive: &Planned, job: &PackJob) -> Result<u64, PackError> {
    let partial = partial_path(&archive.path);
    let result = (|| {
        build(&partial, &archive.members, job.compress)?;
        if job.verify
            && let Err(reason) = verify(&partial, &archive.members, job.compress)
        {
            return Err(PackError::Verify { path: partial.clone(), reason });
        }
        let write_error = |source| PackError::Write { path: archive.path.clone(), source };
        let bytes = std::fs::metadata(&partial).map_err(write_error)?.len();
        capa_data::rename_durably(&partial, &archive.path).map_err(write_error)?;
        Ok(bytes)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// Writes the members into `partial` (truncating a stale one) and fsyncs it.
fn build(partial: &Path, members: &[Member], compress: ArchiveCompression) -> Result<(), PackError> {
    let write_error = |source| PackError::Write { path: partial.to_path_buf(), source };
    let writer = BufWriter::with_capacity(1 << 16, File::create(partial).map_err(write_error)?);
    let file = match compress {
        ArchiveCompression::None => {
            let writer = append_members(tar::Builder::new(writer), members, partial)?;
            writer.into_inner().map_err(|e| write_error(e.into_error()))?
        }
        ArchiveCompression::Gz => {
            let encoder = GzEncoder::new(writer, Compression::default());
            let encoder = append_members(tar::Builder::new(encoder), members, partial)?;
            encoder.finish().map_err(write_error)?.into_inner().map_err(|e| write_error(e.into_error()))?
        }
    };
    file.sync_all().map_err(write_error)
}

/// Appends every member and finishes the archive; the writer below it.
fn append_members<W: Write>(mut builder: tar::Builder<W>, members: &[Member], partial: &Path) -> Result<W, PackError> {
    let write_error = |source| PackError::Write { path: partial.to_path_buf(), source };
    builder.sparse(false);
    for member in members {
        let mut file =
            File::open(&member.source).map_err(|source| PackError::Read { path: member.source.clone(), source })?;
        builder.append_file(&member.name, &mut file).map_err(write_error)?;
    }
    builder.into_inner().map_err(write_error)
}

/// Reads `partial` back: the members' count, names and sizes must be what
/// was put in, and a gzipped archive must decompress to its end.
fn verify(partial: &Path, members: &[Member], compress: ArchiveCompression) -> Result<(), String> {
    let file = File::open(partial).map_err(|e| format!("cannot open it: {e}"))?;
    let reader = BufReader::with_capacity(1 << 16, file);
    match compress {
        ArchiveCompression::None => check_members(tar::Archive::new(reader), members),
        ArchiveCompression::Gz => check_members(tar::Archive::new(GzDecoder::new(reader)), members),
    }
}

fn check_members<R: Read>(mut archive: tar::Archive<R>, members: &[Member]) -> Result<(), String> {
    let mut found = 0;
    for entry in archive.entries().map_err(|e| format!("cannot read it: {e}"))? {
        let entry = entry.map_err(|e| format!("cannot read member {}: {e}", found + 1))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Some(expected) = members.get(found) else {
            return Err(format!("member {} ({name}) is one more than the {} put in", found + 1, members.len()));
        };
        if name != expected.name {
            return Err(format!("member {} is {name}, not {}", found + 1, expected.name));
        }
        if !entry.header().entry_type().is_file() || entry.size() != expected.size {
            return Err(format!("{name} holds {} bytes, not {}", entry.size(), expected.size));
        }
        found += 1;
    }
    if found != members.len() {
        return Err(format!("{found} members, not {}", members.len()));
    }
    // The rest (padding, and the gzip trailer with its checksum).
    io::copy(&mut archive.into_inner(), &mut io::sink()).map_err(|e| format!("cannot read its end: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_is_by_the_trailing_number_then_the_name() {
        let mut names = ["b-10", "a-2", "b-2", "c", "a-10", "x-1y", "a"];
        names.sort_by_key(|name| natural_key(name));
        assert_eq!(names, ["a", "c", "x-1y", "a-2", "b-2", "a-10", "b-10"]);
    }

    #[test]
    fn an_archive_that_does_not_hold_what_was_put_in_fails_verification() {
        let dir = std::env::temp_dir().join(format!("capa-pack-verify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("game_000000.gz");
        std::fs::write(&source, b"not really gzip").unwrap();
        let member = |name: &str, size| Member { name: name.into(), source: source.clone(), size };
        for compress in [ArchiveCompression::None, ArchiveCompression::Gz] {
            let archive = dir.join(format!("a{}", compress.extension()));
            build(&archive, &[member("d/game_000000.gz", 15)], compress).unwrap();
            assert_eq!(verify(&archive, &[member("d/game_000000.gz", 15)], compress), Ok(()));
            let wrong = [
                (vec![member("d/game_000001.gz", 15)], "member 1 is d/game_000000.gz, not d/game_000001.gz"),
                (vec![member("d/game_000000.gz", 16)], "holds 15 bytes, not 16"),
                (vec![member("d/game_000000.gz", 15); 2], "1 members, not 2"),
                (vec![], "one more than the 0 put in"),
            ];
            for (members, reason) in wrong {
                let error = verify(&archive, &members, compress).unwrap_err();
                assert!(error.contains(reason), "{error}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
