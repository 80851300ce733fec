//! What can go wrong talking to an engine.

use std::io;

/// What went wrong talking to an engine. Every message names the engine.
#[derive(Debug, thiserror::Error)]
pub enum UciError {
    /// The process could not be started.
    #[error("cannot start engine `{engine}`: {source} (is it installed and on PATH?)")]
    Start {
        /// The engine command.
        engine: String,
        /// Why.
        source: io::Error,
    },
    /// The engine exited, or closed its output.
    #[error("engine `{engine}` exited ({status}) while {doing}{stderr}")]
    Exited {
        /// The engine command.
        engine: String,
        /// What the client waited for.
        doing: String,
        /// Its exit status, as far as known.
        status: String,
        /// Its last stderr lines, prefixed with a newline, or empty.
        stderr: String,
    },
    /// No answer in time.
    #[error("engine `{engine}` gave no answer within {seconds:.1} s while {doing}")]
    Timeout {
        /// The engine command.
        engine: String,
        /// What the client waited for.
        doing: String,
        /// How long it waited.
        seconds: f64,
    },
    /// A request the engine cannot take: an option it lacks, a value out of
    /// its range, a reply that breaks the protocol.
    #[error("engine `{engine}`: {message}")]
    Protocol {
        /// The engine command.
        engine: String,
        /// What is wrong.
        message: String,
    },
}
