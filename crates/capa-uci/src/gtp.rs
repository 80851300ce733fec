//! A client for GTP engines (the Go Text Protocol, version 2): GNU Go,
//! `capa gtp`, any Go program with a GTP mode.

use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::UciError;
use crate::process::Process;

/// A running GTP engine. Dropping it sends `quit` and, if the engine does
/// not exit promptly, kills it.
pub struct GtpEngine {
    process: Process,
    timeout: Duration,
}

impl GtpEngine {
    /// Starts `program` with `args` and checks that it speaks GTP
    /// (`protocol_version`).
    ///
    /// # Errors
    /// [`UciError::Start`] when the program cannot run; [`UciError::Exited`],
    /// [`UciError::Timeout`] or [`UciError::Protocol`] when it does not answer.
    pub fn launch<A: AsRef<OsStr>>(program: &Path, args: &[A], timeout: Duration) -> Result<GtpEngine, UciError> {
        let mut engine = GtpEngine { process: Process::launch(program, args)?, timeout };
        engine.command("protocol_version")?;
        Ok(engine)
    }

    /// The engine's command line.
    pub fn command_line(&self) -> &str {
        &self.process.command
    }

    /// Sends `command` and returns the text of its success answer (after
    /// `=`, trimmed; lines joined by newlines).
    ///
    /// # Errors
    /// [`UciError::Protocol`] with the engine's message for a `?` answer;
    /// [`UciError::Exited`] or [`UciError::Timeout`].
    pub fn command(&mut self, command: &str) -> Result<String, UciError> {
        self.process.send(command)?;
        let deadline = Instant::now() + self.timeout;
        let doing = format!("answering `{command}`");
        // Lines before the answer (some engines print a banner) are skipped.
        let first = loop {
            let line = self.process.next_line(deadline, &doing, self.timeout)?;
            if line.starts_with(['=', '?']) {
                break line;
            }
        };
        let mut lines = vec![first[1..].trim_start_matches(|c: char| c.is_ascii_digit()).trim().to_string()];
        loop {
            let line = self.process.next_line(deadline, &doing, self.timeout)?;
            if line.trim().is_empty() {
                break;
            }
            lines.push(line);
        }
        let text = lines.join("\n").trim().to_string();
        if first.starts_with('?') {
            return Err(UciError::Protocol {
                engine: self.process.command.clone(),
                message: format!("`{command}` failed: {text}"),
            });
        }
        Ok(text)
    }
}
