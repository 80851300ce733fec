//! Atomic file writes: a temporary file beside the target, fsync, rename,
//! fsync of the directory.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the name of every temporary file [`write_atomically`] makes
/// contains: `.{name}.tmp-{pid}-{serial}`.
pub const TEMPORARY_MARK: &str = ".tmp-";

/// Writes `bytes` to `path` so that a reader sees the old file or the whole
/// new one, never a part. A process killed midway leaves at most a
/// temporary file, which [`remove_stale_temporaries`] clears.
///
/// # Errors
/// The I/O error; the caller names the path.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"))?;
    // Unique per process and call, so concurrent writers never share a file.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let serial = WRITES.fetch_add(1, Ordering::Relaxed);
    let temporary =
        directory.join(format!(".{}{TEMPORARY_MARK}{}-{serial}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut file = File::options().write(true).create_new(true).open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        rename_durably(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Renames a complete, synced file `from` to `to` and syncs the folder, so
/// the new name survives a crash. A reader sees the old `to` or the new
/// file, never a part.
///
/// # Errors
/// The I/O error; the caller names the path.
pub fn rename_durably(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::rename(from, to)?;
    let directory = match to.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    File::open(directory)?.sync_all()
}

/// Removes the temporary files that writers killed midway left in
/// `directory` and the folders below it; returns how many.
///
/// Call it only when no other process writes there.
///
/// # Errors
/// The I/O error of a listing or a removal, with the path.
pub fn remove_stale_temporaries(directory: &Path) -> std::io::Result<usize> {
    let mut removed = 0;
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", directory.display()))),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            removed += remove_stale_temporaries(&path)?;
        } else if entry.file_name().to_str().is_some_and(|n| n.starts_with('.') && n.contains(TEMPORARY_MARK)) {
            std::fs::remove_file(&path)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            removed += 1;
        }
    }
    Ok(removed)
}
