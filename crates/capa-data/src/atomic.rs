//! Atomic file writes: a temporary file beside the target, fsync, rename
//! (or a hard link, for a file that must not replace another), fsync of the
//! directory.

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
    write_through_temporary(path, bytes, rename_durably)
}

/// [`write_atomically`] for a file that must not exist yet: an error of kind
/// `AlreadyExists` when it does, and the file there is left as it was. Two
/// writers of one name never overwrite each other's file.
///
/// # Errors
/// The I/O error; the caller names the path.
pub fn write_new_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_through_temporary(path, bytes, link_durably)
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, and gives it
/// its name with `publish`. The temporary is removed on failure.
fn write_through_temporary(
    path: &Path,
    bytes: &[u8],
    publish: fn(&Path, &Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let directory = folder_of(path);
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
        publish(&temporary, path)
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
    File::open(folder_of(to))?.sync_all()
}

/// Gives a complete, synced file `from` the name `to` only if `to` does not
/// exist (a hard link, which the kernel refuses over an existing name), then
/// removes `from` and syncs the folder.
fn link_durably(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => std::fs::remove_file(from)?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(e),
        // A filesystem without hard links (FAT, some network mounts): a
        // rename after a look, which only two writers at the same instant could race.
        Err(_) if !to.try_exists()? => std::fs::rename(from, to)?,
        Err(_) => return Err(std::io::ErrorKind::AlreadyExists.into()),
    }
    File::open(folder_of(to))?.sync_all()
}

/// The folder `path` is in ("." for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Removes the temporary files that writers killed midway left in
/// `directory` and the folders below it; returns how many. A temporary
/// file is left while its writer may still be at work: its process is
/// alive on this machine and the file is younger than an hour (a writer
/// on another machine sharing the folder is given the hour).
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
        } else if entry.file_name().to_str().is_some_and(|n| {
            n.starts_with('.')
                && n.contains(TEMPORARY_MARK)
                && writer_gone(n, entry.metadata().ok().and_then(|m| m.modified().ok()))
        }) {
            std::fs::remove_file(&path)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Whether the writer of the temporary file `name` (written at `modified`)
/// is gone: its process is not running here, or the file is an hour old.
pub fn writer_gone(name: &str, modified: Option<std::time::SystemTime>) -> bool {
    let age = modified.and_then(|m| m.elapsed().ok()).unwrap_or_default();
    if age > std::time::Duration::from_secs(3600) {
        return true;
    }
    let pid = name.rsplit_once(TEMPORARY_MARK).and_then(|(_, rest)| rest.split('-').next()?.parse::<i32>().ok());
    !pid.is_some_and(|pid| pid > 0 && process_alive(pid))
}

/// Whether process `pid` runs on this machine.
#[cfg(unix)]
fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 checks only whether the process exists; nothing is sent.
    let status = unsafe { libc::kill(pid, 0) };
    status == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether process `pid` runs on this machine: unknown here, so yes.
#[cfg(not(unix))]
fn process_alive(_pid: i32) -> bool {
    true
}
