//! What can go wrong in capa-net.

use std::path::PathBuf;

/// What can go wrong in capa-net.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A configuration value is out of range or inconsistent.
    #[error("network configuration: {0}")]
    Config(String),
    /// The requested backend or device is unavailable.
    #[error("{0}")]
    Backend(String),
    /// A file is not a capa network or checkpoint.
    #[error("{0}")]
    Format(String),
    /// Weights do not fit the architecture: every difference listed.
    #[error("{what} does not fit the network:\n  {}", problems.join("\n  "))]
    Mismatch {
        /// The file (or other source) of the weights.
        what: String,
        /// One line per missing, unexpected or misshapen tensor.
        problems: Vec<String>,
    },
    /// Reading or writing a file failed.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure: part of the message, not a separate source, so that
        /// error chains say it once.
        error: std::io::Error,
    },
    /// Something is wrong inside a file. The problem is part of the message,
    /// not a separate source, so that error chains say it once.
    #[error("{}: {problem}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: Box<NetError>,
    },
}
