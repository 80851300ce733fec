//! Lc0's files on disk: V6 game files (gzipped records), PGN inputs,
//! the numbered layout, and the `.partial` name of a file being written.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use capa_data::{InputError, input_files};
use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use crate::record::{V6_SIZE, V6Record};

/// Opens a PGN file, plain or compressed (`.gz`, `.zst`), by its name.
///
/// # Errors
/// The file cannot be opened.
pub fn open_pgn(path: &Path) -> io::Result<Box<dyn BufRead + Send>> {
    let file = File::open(path)?;
    let name = path.to_string_lossy();
    Ok(if name.ends_with(".gz") {
        Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(BufReader::new(file))))
    } else if name.ends_with(".zst") {
        let decoder = ruzstd::decoding::StreamingDecoder::new(BufReader::new(file))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not a zstd stream: {e}")))?;
        Box::new(BufReader::with_capacity(1 << 16, decoder))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, file))
    })
}

/// `<output_dir>/<name>-<k>/<stem>_NNNNNN.gz`: the `number`-th file (from
/// 0) of folders holding `files_per_dir` files each, as Lc0 lays them out.
pub(crate) fn numbered_path(output_dir: &Path, name: &str, files_per_dir: u64, stem: &str, number: u64) -> PathBuf {
    output_dir.join(format!("{name}-{}", number / files_per_dir.max(1))).join(format!("{stem}_{number:06}.gz"))
}

/// Gzips records back to back, as Lc0 writes a game.
pub fn compress(records: &[V6Record]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(records.len() * V6_SIZE);
    for record in records {
        record.write_to(&mut raw);
    }
    let mut encoder = GzEncoder::new(Vec::with_capacity(raw.len() / 8), Compression::default());
    encoder.write_all(&raw).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

/// Where a file is written until it is complete (then renamed):
/// `<path>.partial`. A killed run leaves only this, never a truncated file
/// under the real name.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

/// The V6 files of `paths`: files as given, folders searched recursively
/// for `.gz` files ([`input_files`]).
///
/// # Errors
/// A path that does not exist, or a folder that cannot be listed.
pub fn v6_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    input_files(paths, |name| name.ends_with(".gz"))
}

/// Reads a gzipped V6 file whole.
///
/// # Errors
/// The file cannot be read or decompressed, or holds a partial or
/// non-V6 record (with the record's index).
pub fn read_game_file(path: &Path) -> Result<Vec<V6Record>, String> {
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut raw = Vec::new();
    MultiGzDecoder::new(BufReader::new(file))
        .read_to_end(&mut raw)
        .map_err(|e| format!("{}: not a whole gzip stream: {e}", path.display()))?;
    V6Record::read_all(&raw).map_err(|(index, e)| format!("{}: record {index}: {e}", path.display()))
}
