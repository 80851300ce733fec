//! An engine as a child process, spoken to line by line: stdout read on a
//! thread of its own, the last lines of stderr kept for error messages,
//! every wait with a deadline. UCI and GTP engines share it.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::UciError;

/// Lines of the engine's stderr kept for error messages.
const STDERR_LINES: usize = 8;

/// A running engine process. Dropping it sends `quit` (both protocols'
/// word) and, if the engine does not exit promptly, kills it.
pub(crate) struct Process {
    /// The command line, for messages.
    pub command: String,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Process {
    /// Starts `program` with `args` (no splitting: paths may hold spaces).
    pub fn launch<A: AsRef<OsStr>>(program: &Path, args: &[A]) -> Result<Process, UciError> {
        let command = std::iter::once(program.as_os_str())
            .chain(args.iter().map(AsRef::as_ref))
            .map(|word| word.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let mut child = Command::new(find_program(program).as_deref().unwrap_or(program))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| UciError::Start { engine: command.clone(), source })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let (sender, lines) = channel();
        let reader = std::thread::Builder::new()
            .name("engine-stdout".to_string())
            .spawn(move || for_each_line(stdout, |line| sender.send(line).is_ok()));
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let kept = Arc::clone(&stderr);
        let stderr_reader = std::thread::Builder::new().name("engine-stderr".to_string()).spawn(move || {
            for_each_line(stderr_pipe, |line| {
                let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.len() == STDERR_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
                true
            });
        });
        if let Err(source) = reader.and(stderr_reader) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(UciError::Start { engine: command, source });
        }
        Ok(Process { command, child, stdin, lines, stderr })
    }

    /// Sends one line.
    pub fn send(&mut self, line: &str) -> Result<(), UciError> {
        let sent = writeln!(self.stdin, "{line}").and_then(|()| self.stdin.flush());
        sent.map_err(|_| self.exited(&format!("sending `{line}`")))
    }

    /// The next line, waiting until `deadline`; `timeout` is what the
    /// message reports as the time allowed.
    pub fn next_line(&mut self, deadline: Instant, doing: &str, timeout: Duration) -> Result<String, UciError> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(UciError::Timeout {
                engine: self.command.clone(),
                doing: doing.to_string(),
                seconds: timeout.as_secs_f64(),
            }),
            Err(RecvTimeoutError::Disconnected) => Err(self.exited(doing)),
        }
    }

    /// The error for an engine whose output closed, with its exit status
    /// and last stderr lines.
    fn exited(&mut self, doing: &str) -> UciError {
        let deadline = Instant::now() + Duration::from_secs(1);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.to_string(),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                Ok(None) => break "still running, output closed".to_string(),
                Err(e) => break format!("status unknown: {e}"),
            }
        };
        // Give the stderr thread a moment to read what the engine last said.
        std::thread::sleep(Duration::from_millis(20));
        let kept = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        let stderr = if kept.is_empty() {
            String::new()
        } else {
            format!("; its last stderr lines:\n{}", kept.iter().cloned().collect::<Vec<_>>().join("\n"))
        };
        UciError::Exited { engine: self.command.clone(), doing: doing.to_string(), status, stderr }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit").and_then(|()| self.stdin.flush());
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where `program` runs from: itself when it names a path (or is not found
/// anywhere), else the first match on `PATH`, else Debian's `/usr/games`,
/// where `fairy-stockfish`, `stockfish`, `sjaakii` and `gnugo` install and
/// which is not on every user's `PATH`.
pub fn find_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() != 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/games")])
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// For the tests that cross-check capa against a real engine: the engine
/// `name` (`fairy-stockfish`, `stockfish`, `sjaakii`, `gnugo`) from the
/// variable `CAPA_<NAME>` (`CAPA_FAIRY_STOCKFISH`), else as
/// [`find_program`] finds it; `None`, to skip the check, only when
/// `CAPA_SKIP_ENGINE_TESTS=1`.
///
/// # Panics
/// When the engine is missing and skipping was not asked for: a check that
/// skipped itself silently would pass without checking anything.
pub fn engine_for_test(name: &str) -> Option<PathBuf> {
    let variable = format!("CAPA_{}", name.to_ascii_uppercase().replace('-', "_"));
    if let Some(path) = std::env::var_os(&variable) {
        return Some(PathBuf::from(path));
    }
    let found = find_program(Path::new(name));
    if found.is_none() {
        assert!(
            std::env::var("CAPA_SKIP_ENGINE_TESTS").as_deref() == Ok("1"),
            "{name} not found in PATH or /usr/games. Install it with `apt-get update && apt-get install -y \
             fairy-stockfish stockfish sjaakii gnugo` (scripts/test.sh does), point {variable} at it, or set \
             CAPA_SKIP_ENGINE_TESTS=1 to skip the engine cross-checks"
        );
        eprintln!("skipping a cross-check against {name}: it is missing and CAPA_SKIP_ENGINE_TESTS=1");
    }
    found
}

/// Hands each line of `pipe` to `take` (bytes that are not UTF-8 replaced,
/// the line ending removed) until the pipe closes or `take` says stop.
fn for_each_line(pipe: impl io::Read, mut take: impl FnMut(String) -> bool) {
    let mut reader = BufReader::new(pipe);
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        match reader.read_until(b'\n', &mut bytes) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let line = String::from_utf8_lossy(&bytes);
                if !take(line.trim_end_matches(['\n', '\r']).to_string()) {
                    return;
                }
            }
        }
    }
}
