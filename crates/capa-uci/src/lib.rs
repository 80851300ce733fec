//! Clients for engines as child processes: UCI engines (start one, set its
//! options, search, and survive it) and GTP engines (Go).
//!
//! Every wait has a deadline, so an engine that hangs is an error rather
//! than a hang; an engine that dies is an error that says what it was doing
//! and quotes the last lines it wrote to stderr. The engine's stdout is read
//! on a thread of its own and handed over line by line.

#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use capa_rules::{Game, GameKind, History};

mod error;
mod gtp;
mod process;
mod restart;

pub use error::UciError;
pub use gtp::GtpEngine;
use process::Process;
pub use process::{engine_for_test, find_program};
pub use restart::Restarting;

/// How long an engine may take to answer `uci` or `isready`, and a search
/// may run past its own time limit, before it counts as hung.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The kind of an option, as the engine declared it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// `type check`: true or false.
    Check,
    /// `type spin` with its bounds.
    Spin {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// `type combo` with its values.
    Combo(Vec<String>),
    /// `type button`: set without a value.
    Button,
    /// `type string`.
    String,
}

/// One option the engine declared after `uci`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineOption {
    /// Its name, as the engine spells it.
    pub name: String,
    /// Its kind.
    pub kind: OptionKind,
    /// Its default, if declared.
    pub default: Option<String>,
}

/// The score of a line, from the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UciScore {
    /// Centipawns.
    Cp(i32),
    /// Mate in this many moves (negative: the side to move is mated).
    Mate(i32),
}

/// One principal variation from `info` lines: the latest the engine sent
/// for its `multipv` slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvLine {
    /// The slot, 1 for the best line.
    pub multipv: u32,
    /// Search depth.
    pub depth: u32,
    /// The score.
    pub score: UciScore,
    /// Win, draw and loss per mille, when the engine reports them (`UCI_ShowWDL`).
    pub wdl: Option<[u32; 3]>,
    /// Nodes searched so far, when reported.
    pub nodes: Option<u64>,
    /// The moves, in UCI notation.
    pub pv: Vec<String>,
}

/// What a `go` returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchOutput {
    /// The move to play; `None` when the engine says there is none
    /// (`bestmove (none)` or `0000`).
    pub best: Option<String>,
    /// The move it expects in reply, if it said.
    pub ponder: Option<String>,
    /// The last line per `multipv` slot, best first.
    pub lines: Vec<PvLine>,
    /// Whether the client sent `stop` because the search overran its time
    /// (or, for a depth or node limit, the timeout): the lines are then
    /// those of a cut-short search.
    pub stopped: bool,
    /// The text of each `info string` line, in order (Lc0's and capa's
    /// VerboseMoveStats, for one).
    pub strings: Vec<String>,
}

/// How long a search may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Go {
    /// `go nodes N`.
    Nodes(u64),
    /// `go depth N`.
    Depth(u32),
    /// `go movetime MS`.
    MoveTime(u64),
    /// `go wtime .. btime .. winc .. binc .. [movestogo ..]`, in milliseconds.
    Clock {
        /// White's time left.
        wtime: u64,
        /// Black's time left.
        btime: u64,
        /// White's increment.
        winc: u64,
        /// Black's increment.
        binc: u64,
        /// Moves to the next time control, if any.
        moves_to_go: Option<u32>,
    },
}

impl Go {
    fn command(self) -> String {
        match self {
            Go::Nodes(n) => format!("go nodes {n}"),
            Go::Depth(d) => format!("go depth {d}"),
            Go::MoveTime(ms) => format!("go movetime {ms}"),
            Go::Clock { wtime, btime, winc, binc, moves_to_go } => {
                let mut go = format!("go wtime {wtime} btime {btime} winc {winc} binc {binc}");
                if let Some(n) = moves_to_go {
                    go.push_str(&format!(" movestogo {n}"));
                }
                go
            }
        }
    }

    /// The longest the search itself may take, when the limit says.
    fn time_limit(self) -> Option<Duration> {
        match self {
            Go::MoveTime(ms) => Some(Duration::from_millis(ms)),
            Go::Clock { wtime, btime, .. } => Some(Duration::from_millis(wtime.max(btime))),
            Go::Nodes(_) | Go::Depth(_) => None,
        }
    }
}

/// A running UCI engine. Dropping it sends `quit` and, if the engine does
/// not exit promptly, kills it.
pub struct UciEngine {
    process: Process,
    name: Option<String>,
    options: Vec<EngineOption>,
    timeout: Duration,
}

impl UciEngine {
    /// Starts `command` (a program and its arguments, split on whitespace),
    /// sends `uci` and reads its name and options up to `uciok`.
    ///
    /// # Errors
    /// [`UciError::Start`] when the program cannot run; [`UciError::Exited`]
    /// or [`UciError::Timeout`] when it does not answer `uci`.
    pub fn start(command: &str) -> Result<UciEngine, UciError> {
        UciEngine::start_with_timeout(command, DEFAULT_TIMEOUT)
    }

    /// As [`UciEngine::start`], waiting at most `timeout` for each answer.
    ///
    /// # Errors
    /// As [`UciEngine::start`].
    pub fn start_with_timeout(command: &str, timeout: Duration) -> Result<UciEngine, UciError> {
        let mut words = command.split_whitespace();
        let Some(program) = words.next() else {
            return Err(UciError::Start {
                engine: command.to_string(),
                source: io::Error::new(io::ErrorKind::InvalidInput, "the engine command is empty"),
            });
        };
        let args: Vec<&str> = words.collect();
        UciEngine::launch(Path::new(program), &args, timeout)
    }

    /// Starts `program` with `args` (no splitting: paths may hold spaces),
    /// as [`UciEngine::start`] does.
    ///
    /// # Errors
    /// As [`UciEngine::start`].
    pub fn launch<A: AsRef<OsStr>>(program: &Path, args: &[A], timeout: Duration) -> Result<UciEngine, UciError> {
        let process = Process::launch(program, args)?;
        let mut uci = UciEngine { process, name: None, options: Vec::new(), timeout };
        uci.send("uci")?;
        let deadline = Instant::now() + timeout;
        loop {
            let line = uci.next_line(deadline, "waiting for `uciok`")?;
            let line = line.trim();
            if line == "uciok" {
                break;
            }
            if let Some(name) = line.strip_prefix("id name ") {
                uci.name = Some(name.trim().to_string());
            } else if let Some(option) = parse_option(line) {
                uci.options.push(option);
            }
        }
        Ok(uci)
    }

    /// The engine's name (`id name`), or its command when it gave none.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.process.command)
    }

    /// The options the engine declared.
    pub fn options(&self) -> &[EngineOption] {
        &self.options
    }

    /// The option called `name` (UCI option names ignore case).
    pub fn option(&self, name: &str) -> Option<&EngineOption> {
        self.options.iter().find(|o| o.name.eq_ignore_ascii_case(name))
    }

    /// How long an answer may take (and a timed search may overrun).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Sets option `name` to `value` (ignored for buttons), after checking
    /// the engine has it and the value fits its kind.
    ///
    /// # Errors
    /// [`UciError::Protocol`] for an unknown option or a value it cannot
    /// take; [`UciError::Exited`] when the engine is gone.
    pub fn set_option(&mut self, name: &str, value: &str) -> Result<(), UciError> {
        let option = self.option(name).ok_or_else(|| self.protocol(format!("has no option `{name}`")))?;
        let fits = match &option.kind {
            OptionKind::Check => value == "true" || value == "false",
            OptionKind::Spin { min, max } => value.parse::<i64>().is_ok_and(|v| (*min..=*max).contains(&v)),
            OptionKind::Combo(values) => values.iter().any(|v| v.eq_ignore_ascii_case(value)),
            OptionKind::Button | OptionKind::String => true,
        };
        if !fits {
            let kind = &option.kind;
            return Err(self.protocol(format!("option `{name}` cannot take `{value}` ({kind:?})")));
        }
        let line = match option.kind {
            OptionKind::Button => format!("setoption name {}", option.name),
            _ => format!("setoption name {} value {value}", option.name),
        };
        self.send(&line)
    }

    /// Sets the engine up to play `game`: through its `UCI_Variant` option
    /// when it has one; an engine without it plays chess only.
    ///
    /// # Errors
    /// [`UciError::Protocol`] when the engine cannot play `game`.
    pub fn select_variant(&mut self, game: GameKind) -> Result<(), UciError> {
        if self.option("UCI_Variant").is_some() {
            self.set_option("UCI_Variant", game.name())
        } else if game == GameKind::Chess {
            Ok(())
        } else {
            Err(self.protocol(format!("has no UCI_Variant option: it cannot play {game}")))
        }
    }

    /// Sends `isready` and waits for `readyok`.
    ///
    /// # Errors
    /// [`UciError::Exited`] or [`UciError::Timeout`].
    pub fn ready(&mut self) -> Result<(), UciError> {
        self.send("isready")?;
        let deadline = Instant::now() + self.timeout;
        while self.next_line(deadline, "waiting for `readyok`")?.trim() != "readyok" {}
        Ok(())
    }

    /// Starts a new game (`ucinewgame`) and waits until the engine is ready.
    ///
    /// # Errors
    /// As [`UciEngine::ready`].
    pub fn new_game(&mut self) -> Result<(), UciError> {
        self.send("ucinewgame")?;
        self.ready()
    }

    /// Searches `position` (what follows `position `: `startpos moves ...`
    /// or `fen ... moves ...`) to `go`, collecting the `info` lines up to
    /// `bestmove`.
    ///
    /// A search that overruns its time (or, without one, the timeout) is
    /// sent `stop`; one that still does not answer is an error.
    ///
    /// # Errors
    /// [`UciError::Exited`], [`UciError::Timeout`], or
    /// [`UciError::Protocol`] for a `bestmove` line without a move.
    pub fn go(&mut self, position: &str, go: Go) -> Result<SearchOutput, UciError> {
        self.send(&format!("position {position}"))?;
        self.send(&go.command())?;
        let started = Instant::now();
        let mut deadline = started + go.time_limit().unwrap_or_default() + self.timeout;
        let mut stopped = false;
        let mut lines = BTreeMap::new();
        let mut strings = Vec::new();
        loop {
            let line = match self.next_line(deadline, "searching") {
                Err(UciError::Timeout { .. }) if !stopped => {
                    self.send("stop")?;
                    stopped = true;
                    deadline = Instant::now() + self.timeout;
                    continue;
                }
                other => other?,
            };
            if let Some(text) = line.trim().strip_prefix("info string ") {
                strings.push(text.to_string());
            } else if let Some(pv) = parse_info(&line) {
                lines.insert(pv.multipv, pv);
            } else if let Some(rest) = line.trim().strip_prefix("bestmove") {
                let mut words = rest.split_whitespace();
                let best = words.next().ok_or_else(|| self.protocol("`bestmove` without a move".to_string()))?;
                let best = (best != "(none)" && best != "0000").then(|| best.to_string());
                let ponder = match (words.next(), words.next()) {
                    (Some("ponder"), Some(m)) => Some(m.to_string()),
                    _ => None,
                };
                return Ok(SearchOutput { best, ponder, lines: lines.into_values().collect(), stopped, strings });
            }
        }
    }

    /// Sends one line.
    ///
    /// # Errors
    /// [`UciError::Exited`] when the engine no longer reads.
    pub fn send(&mut self, line: &str) -> Result<(), UciError> {
        self.process.send(line)
    }

    fn next_line(&mut self, deadline: Instant, doing: &str) -> Result<String, UciError> {
        self.process.next_line(deadline, doing, self.timeout)
    }

    fn protocol(&self, message: String) -> UciError {
        UciError::Protocol { engine: self.process.command.clone(), message }
    }
}

/// The argument of a `position` command for a game in progress:
/// `startpos` or `fen ...`, then `moves ...` when there are any.
pub fn position_command<G: Game>(history: &History<G>) -> String {
    let start = history.start();
    let mut command =
        if start.fen() == G::startpos().fen() { "startpos".to_string() } else { format!("fen {}", start.fen()) };
    if !history.moves().is_empty() {
        command.push_str(" moves");
        for m in history.moves() {
            command.push_str(&format!(" {m}"));
        }
    }
    command
}

/// Parses an `option name ... type ...` line; `None` for anything else.
pub fn parse_option(line: &str) -> Option<EngineOption> {
    let rest = line.trim().strip_prefix("option name ")?;
    // The name runs up to ` type `: names may hold spaces.
    let (name, rest) = rest.split_once(" type ")?;
    let mut words = rest.split_whitespace().peekable();
    let kind = words.next()?;
    let mut default = None;
    let (mut min, mut max) = (None, None);
    let mut values = Vec::new();
    while let Some(word) = words.next() {
        // A value runs up to the next keyword (combo values and string
        // defaults may hold spaces).
        let mut value = Vec::new();
        while let Some(next) = words.peek() {
            if matches!(*next, "default" | "min" | "max" | "var") {
                break;
            }
            value.push(words.next()?);
        }
        let value = value.join(" ");
        match word {
            "default" => default = Some(value),
            "min" => min = value.parse().ok(),
            "max" => max = value.parse().ok(),
            "var" => values.push(value),
            _ => {}
        }
    }
    let kind = match kind {
        "check" => OptionKind::Check,
        "spin" => OptionKind::Spin { min: min.unwrap_or(i64::MIN), max: max.unwrap_or(i64::MAX) },
        "combo" => OptionKind::Combo(values),
        "button" => OptionKind::Button,
        "string" => OptionKind::String,
        _ => return None,
    };
    Some(EngineOption { name: name.trim().to_string(), kind, default })
}

/// Parses an `info` line that carries a scored principal variation; `None`
/// for other lines, and for bound scores (`lowerbound`, `upperbound`),
/// which are not the engine's verdict.
pub fn parse_info(line: &str) -> Option<PvLine> {
    let mut words = line.split_whitespace();
    if words.next()? != "info" {
        return None;
    }
    let (mut multipv, mut depth, mut score, mut wdl, mut nodes, mut pv) = (1, 0, None, None, None, Vec::new());
    while let Some(word) = words.next() {
        match word {
            "depth" => depth = words.next()?.parse().ok()?,
            "multipv" => multipv = words.next()?.parse().ok()?,
            "nodes" => nodes = Some(words.next()?.parse().ok()?),
            "score" => {
                score = Some(match words.next()? {
                    "cp" => UciScore::Cp(words.next()?.parse().ok()?),
                    "mate" => UciScore::Mate(words.next()?.parse().ok()?),
                    _ => return None,
                });
            }
            "lowerbound" | "upperbound" => return None,
            "wdl" => {
                let mut next = || words.next()?.parse::<u32>().ok();
                wdl = Some([next()?, next()?, next()?]);
            }
            "pv" => {
                pv = words.by_ref().map(str::to_string).collect();
            }
            // The rest of the line is free text.
            "string" => return None,
            _ => {}
        }
    }
    if pv.is_empty() || multipv == 0 {
        return None;
    }
    Some(PvLine { multipv, depth, score: score?, wdl, nodes, pv })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_parsed_with_spaces_in_names_and_values() {
        let spin = parse_option("option name UCI_Elo type spin default 1350 min 1350 max 2850").unwrap();
        assert_eq!(spin.kind, OptionKind::Spin { min: 1350, max: 2850 });
        assert_eq!(spin.default.as_deref(), Some("1350"));
        let combo = parse_option("option name UCI_Variant type combo default chess var chess var capablanca").unwrap();
        assert_eq!(combo.kind, OptionKind::Combo(vec!["chess".into(), "capablanca".into()]));
        let button = parse_option("option name Clear Hash type button").unwrap();
        assert_eq!((button.name.as_str(), button.kind), ("Clear Hash", OptionKind::Button));
        let string = parse_option("option name Debug Log File type string default <empty>").unwrap();
        assert_eq!(string.default.as_deref(), Some("<empty>"));
        assert!(parse_option("option name X type wobble").is_none());
        assert!(parse_option("id name Stockfish").is_none());
        assert!(parse_option("option name").is_none());
    }

    #[test]
    fn info_lines_are_parsed_and_bounds_skipped() {
        let line = "info depth 5 seldepth 5 multipv 2 score cp -193 wdl 10 500 490 nodes 2001 nps 200100 \
                    tbhits 0 time 10 pv f7f6 d2d3";
        let pv = parse_info(line).unwrap();
        assert_eq!(pv.multipv, 2);
        assert_eq!(pv.depth, 5);
        assert_eq!(pv.score, UciScore::Cp(-193));
        assert_eq!(pv.wdl, Some([10, 500, 490]));
        assert_eq!(pv.nodes, Some(2001));
        assert_eq!(pv.pv, ["f7f6", "d2d3"]);
        assert_eq!(parse_info("info depth 9 score mate -3 pv a1a2").unwrap().score, UciScore::Mate(-3));
        assert!(parse_info("info depth 9 score cp 20 lowerbound pv e2e4").is_none());
        assert!(parse_info("info string NNUE evaluation enabled").is_none());
        assert!(parse_info("info depth 3 currmove e2e4 currmovenumber 1").is_none());
        assert!(parse_info("info depth x score cp 1 pv e2e4").is_none());
        assert!(parse_info("info score cp").is_none());
        assert!(parse_info("bestmove e2e4").is_none());
    }
}
