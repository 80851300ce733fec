//! The files a command reads: paths as the user gives them, folders
//! searched for the names a command wants.

use std::io;
use std::path::{Path, PathBuf};

/// An input path that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct InputError {
    /// The file or folder.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// The files of `paths`: files as given, folders searched recursively for
/// files whose names `wanted` accepts. Hidden entries are skipped,
/// symbolic links to folders not followed (a link up the tree would loop),
/// and each folder's entries are visited in sorted order, so the order
/// never changes between runs.
///
/// # Errors
/// A path that does not exist, or a folder that cannot be listed.
pub fn input_files(paths: &[PathBuf], wanted: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>, InputError> {
    fn walk(dir: &Path, wanted: &dyn Fn(&str) -> bool, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
        let error = |e: io::Error| InputError { path: dir.to_path_buf(), reason: format!("cannot list: {e}") };
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(error)? {
            let entry = entry.map_err(error)?;
            if !entry.file_name().to_string_lossy().starts_with('.') {
                found.push(entry.path());
            }
        }
        found.sort();
        for path in found {
            if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                walk(&path, wanted, out)?;
            } else if path.file_name().is_some_and(|name| wanted(&name.to_string_lossy())) && path.is_file() {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &wanted, &mut files)?;
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(InputError { path: path.clone(), reason: "no such file or folder".into() });
        }
    }
    Ok(files)
}
