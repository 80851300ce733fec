//! `capa gtp`: a Go engine speaking GTP version 2 (the Go Text Protocol of
//! GNU Go, GoGui, Sabaki and referees), backed by a network and the search.
//!
//! One command per line; an answer is `=` or `?` (with the command's id when
//! it had one), the text, and an empty line. Nothing on the input ends the
//! engine but `quit` or the end of the input: a command it cannot carry out
//! is answered `? ...` with the reason.
//!
//! A thread reads the input, so that an analysis (`lz-analyze`,
//! `kata-analyze`) searches until the next line arrives, and that line is
//! then carried out as usual.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capa_mcts::{CachedEvaluator, Limits, PLAY_PARALLEL_SIMS, SearchParams, SearchResult, StopReason, Tree};
use capa_net::{NetEvaluator, Territory};
use capa_play::{Player, SearchPlayer, Turn};
use capa_rules::GameKind;
use capa_rules::go::{Cell, Go, GoMove};
use capa_rules::{Color, Game, History, MoveList};

use crate::args::DeviceArgs;
use crate::gtp_analysis::{Dialect, Request, analysis_line, parse_request, shown_moves};

/// Playouts an analysis searches between looks at the input and the clock.
const ANALYSIS_CHUNK: u32 = 16;
/// An analysis's table is compacted to what the root reaches beyond this
/// many nodes (a few hundred bytes each with their edges).
const ANALYSIS_NODES: usize = 1_000_000;

/// Every command the engine knows, as `list_commands` names them.
const COMMANDS: [&str; 20] = [
    "protocol_version",
    "name",
    "version",
    "known_command",
    "list_commands",
    "boardsize",
    "clear_board",
    "komi",
    "play",
    "genmove",
    "kgs-genmove_cleanup",
    "undo",
    "final_score",
    "showboard",
    "quit",
    "lz-analyze",
    "kata-analyze",
    "lz-genmove_analyze",
    "kata-genmove_analyze",
    "capa-fen",
];

/// Run as a GTP engine on stdin and stdout: a Go network and the search.
///
/// The network decides the board size (`boardsize` accepts only its own).
/// `genmove` searches `--playouts` playouts and plays the most visited move;
/// `kgs-genmove_cleanup` does the same without passing while a point that
/// is not the mover's own eye is playable, so that dead stones get
/// captured before the game ends. `final_score` counts the board as it
/// stands by area (Tromp-Taylor) with the komi. `play` or `genmove` for the
/// side not to move (handicap stones played in a row) goes on from the
/// current board with that side to move, and `undo` cannot go back past it.
/// `capa-fen` prints the position's text form.
///
/// `lz-analyze` and `kata-analyze` (`[player] [interval] [interval N]
/// [minmoves N] [maxmoves N] [ownership true]`, the interval in
/// centiseconds) search until the next command or an empty line arrives,
/// writing a line of `info move ... visits ... winrate ... prior ... lcb
/// ... order ... pv ...` records per interval, as Leela Zero and KataGo do
/// (Sabaki, Lizzie, KaTrain). With a network that has the score head,
/// `kata-analyze` adds each move's `scoreLead` and `scoreStdev` (the
/// network's after the move, komi counted); with the ownership head,
/// `ownership true` ends each line with every point's ownership for the
/// player analysed, from the top-left. `lz-genmove_analyze` and
/// `kata-genmove_analyze` do the same while searching `--playouts` for a
/// move, then answer `play MOVE`.
#[derive(clap::Args, Debug)]
pub struct GtpArgs {
    /// The Go network file (a run's `nets/<hash>.safetensors`, or a shipped
    /// network's short name).
    #[arg(long, value_parser = crate::args::network)]
    pub net: PathBuf,
    /// Playouts per move.
    #[arg(long, default_value_t = 400)]
    pub playouts: u32,
    /// Seeds the search's random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Runs the engine on stdin and stdout until `quit` or the end of the input.
///
/// # Errors
/// A network that cannot be read or is not a Go network, or stdout closing.
pub fn run(args: &GtpArgs) -> Result<()> {
    let game = capa_net::read_net_config(&args.net).context("cannot read the network")?.game;
    if args.playouts == 0 {
        bail!("--playouts must be at least 1");
    }
    let (input, output) = (read_lines(), std::io::stdout().lock());
    match game {
        GameKind::Go9 => Engine::<9>::new(args)?.serve(input, output),
        GameKind::Go13 => Engine::<13>::new(args)?.serve(input, output),
        GameKind::Go19 => Engine::<19>::new(args)?.serve(input, output),
        chess => bail!("{}: a {} network; GTP is for Go (use `capa uci`)", args.net.display(), chess.name()),
    }
}

struct Engine<const N: usize> {
    evaluator: CachedEvaluator<NetEvaluator<Go<N>>>,
    playouts: u32,
    seed: u64,
    history: History<Go<N>>,
    komi: f32,
    searches: u64,
}

/// What a command asks the loop to do after answering.
enum Next {
    Continue,
    Quit,
}

/// How an analysis command ended.
enum AnalysisEnd {
    /// Its answer is complete.
    Answered,
    /// The next input line arrived (and is to be carried out).
    Interrupted(Line),
    /// The input ended.
    InputClosed,
}

impl<const N: usize> Engine<N> {
    fn new(args: &GtpArgs) -> Result<Engine<N>> {
        let network =
            NetEvaluator::<Go<N>>::from_file(&args.net, args.device.spec()).context("cannot load the network")?;
        let komi = Go::<N>::startpos().komi();
        Ok(Engine {
            evaluator: CachedEvaluator::new(network, 200_000),
            playouts: args.playouts,
            seed: args.seed,
            history: History::new(Go::startpos()),
            komi,
            searches: 0,
        })
    }

    fn serve(mut self, input: Receiver<Line>, mut output: impl Write) -> Result<()> {
        let mut pending = None;
        loop {
            let line = match pending.take().map_or_else(|| input.recv().ok(), Some) {
                None => break,
                Some(Line::Text(line)) => line,
                Some(Line::NotText) => {
                    respond(&mut output, None, Err("the line is not UTF-8 text".to_string()))?;
                    continue;
                }
                Some(Line::Failed(e)) => return Err(e).context("cannot read stdin"),
            };
            // GTP: control characters other than tab and newline are
            // dropped, tabs are spaces, `#` starts a comment.
            let cleaned: String = line
                .chars()
                .filter(|c| !c.is_control() || *c == '\t')
                .map(|c| if c == '\t' { ' ' } else { c })
                .collect();
            let text = cleaned.split('#').next().unwrap_or_default().trim();
            if text.is_empty() {
                continue;
            }
            let mut words = text.split_whitespace();
            let first = words.next().unwrap_or_default();
            let (id, command) = match first.parse::<u64>() {
                Ok(id) => (Some(id), words.next().unwrap_or_default()),
                Err(_) => (None, first),
            };
            let args: Vec<&str> = words.collect();
            if let Some(dialect) = analysis_dialect(command) {
                match self.analysis(dialect, command, id, &args, &input, &mut output)? {
                    AnalysisEnd::Answered => {}
                    AnalysisEnd::Interrupted(line) => pending = Some(line),
                    AnalysisEnd::InputClosed => break,
                }
                continue;
            }
            let (answer, next) = match self.command(command, &args) {
                Ok((text, next)) => (Ok(text), next),
                Err(e) => (Err(format!("{e:#}")), Next::Continue),
            };
            respond(&mut output, id, answer)?;
            if let Next::Quit = next {
                break;
            }
        }
        Ok(())
    }

    /// Carries out an analysis command (`dialect`'s `command` with `args`):
    /// `=`, the lines as it searches, and the end of the answer: for
    /// `genmove_analyze` the move, else the empty line once the next input
    /// arrives.
    fn analysis(
        &mut self,
        dialect: Dialect,
        command: &str,
        id: Option<u64>,
        args: &[&str],
        input: &Receiver<Line>,
        output: &mut impl Write,
    ) -> Result<AnalysisEnd> {
        let request = match parse_request(dialect, args, parse_color).and_then(|request| self.can_answer(request)) {
            Ok(request) => request,
            Err(e) => {
                respond(output, id, Err(format!("{e:#}")))?;
                return Ok(AnalysisEnd::Answered);
            }
        };
        let genmove = command.ends_with("genmove_analyze");
        if genmove {
            self.give_the_move_to(request.color.unwrap_or(self.history.current().turn()));
        }
        let history = if genmove { self.history.clone() } else { self.analysed(request.color) };
        let tree = match self.new_tree(history, !genmove) {
            Ok(tree) => tree,
            Err(e) => {
                respond(output, id, Err(format!("{e:#}")))?;
                return Ok(AnalysisEnd::Answered);
            }
        };
        write_head(output, id)?;
        if genmove {
            let answer = self.genmove_analyze(tree, &request, output)?;
            write!(output, "{answer}\n\n").and_then(|()| output.flush()).context("cannot write stdout")?;
            return Ok(AnalysisEnd::Answered);
        }
        let next = self.analyze(tree, &request, input, output)?;
        writeln!(output).and_then(|()| output.flush()).context("cannot write stdout")?;
        Ok(next.map_or(AnalysisEnd::InputClosed, AnalysisEnd::Interrupted))
    }

    /// `request` if the network can answer it: `ownership true` needs the
    /// ownership head.
    fn can_answer(&self, request: Request) -> Result<Request> {
        if request.ownership && !self.evaluator.inner().config().ownership_head {
            bail!("ownership true: this network has no ownership head (train one with [net] ownership_head = true)");
        }
        Ok(request)
    }

    /// Writes `result`'s analysis line for `request`, with the score leads
    /// and ownership of the network's heads after `history`'s position.
    fn write_analysis(
        &self,
        output: &mut impl Write,
        request: &Request,
        history: &History<Go<N>>,
        result: &SearchResult<Go<N>>,
    ) -> Result<()> {
        let territory = self.territory(request, history, result)?;
        let line = analysis_line(request, result, &territory);
        if line.is_empty() {
            return Ok(());
        }
        writeln!(output, "{line}").and_then(|()| output.flush()).context("cannot write stdout")
    }

    /// The network's ownership of `history`'s position (if asked) and the
    /// score lead after each move the line shows (`kata-analyze`, with the
    /// score head), in one call.
    fn territory(
        &self,
        request: &Request,
        history: &History<Go<N>>,
        result: &SearchResult<Go<N>>,
    ) -> Result<Territory> {
        let network = self.evaluator.inner();
        let scores = request.dialect == Dialect::Kata && network.config().score_head;
        if !scores && !request.ownership {
            return Ok(Territory::default());
        }
        let shown: Vec<GoMove<N>> = match scores {
            true => result.moves.iter().take(shown_moves(request, result)).map(|m| m.mv).collect(),
            false => Vec::new(),
        };
        network.territory(history, &shown, request.ownership).context("the network's analysis heads")
    }

    fn command(&mut self, command: &str, args: &[&str]) -> Result<(String, Next)> {
        let done = |text: String| Ok((text, Next::Continue));
        match command {
            "protocol_version" => done("2".to_string()),
            "name" => done("capa".to_string()),
            "version" => done(env!("CARGO_PKG_VERSION").to_string()),
            "known_command" => done(COMMANDS.contains(&one(args, "a command name")?).to_string()),
            "list_commands" => done(COMMANDS.join("\n")),
            "boardsize" => {
                let size = one(args, "a size")?;
                if size.parse::<usize>().ok() != Some(N) {
                    bail!("unacceptable size: the network plays {N}x{N}, not {size}");
                }
                self.clear();
                done(String::new())
            }
            "clear_board" => {
                self.clear();
                done(String::new())
            }
            "komi" => {
                let text = one(args, "a komi")?;
                let komi =
                    text.parse::<f32>().map_err(|_| anyhow::anyhow!("syntax error: komi '{text}' is not a number"))?;
                self.set_komi(komi)?;
                done(String::new())
            }
            "play" => {
                let [color, vertex] = args else { bail!("syntax error: play takes a color and a vertex") };
                let color = parse_color(color)?;
                self.give_the_move_to(color);
                let m = self.history.current().parse_move(vertex).map_err(|e| anyhow::anyhow!("illegal move: {e}"))?;
                self.history.play(m);
                done(String::new())
            }
            "genmove" | "kgs-genmove_cleanup" => {
                let color = parse_color(one(args, "a color")?)?;
                self.give_the_move_to(color);
                let m = self.search(command == "kgs-genmove_cleanup")?;
                self.history.play(m);
                done(m.to_string())
            }
            "undo" => match self.history.undo() {
                Some(_) => done(String::new()),
                None => bail!("cannot undo"),
            },
            "final_score" => done(self.history.current().score_text()),
            "showboard" => done(format!("\n{}", board_text(self.history.current()))),
            "capa-fen" => done(self.history.current().fen()),
            "quit" => Ok((String::new(), Next::Quit)),
            "" => bail!("syntax error: a command id with no command"),
            other => bail!("unknown command: {other}"),
        }
    }

    fn clear(&mut self) {
        let start = Go::<N>::startpos().with_komi(self.komi).expect("a komi checked when set");
        self.history = History::new(start);
    }

    /// Sets the komi, replaying the game so far under it.
    fn set_komi(&mut self, komi: f32) -> Result<()> {
        let start = self.history.start().clone().with_komi(komi).map_err(|e| anyhow::anyhow!("syntax error: {e}"))?;
        let mut history = History::new(start);
        for &m in self.history.moves() {
            history.play(m);
        }
        self.history = history;
        self.komi = komi;
        Ok(())
    }

    /// Makes `color` the side to move, going on from the current board.
    fn give_the_move_to(&mut self, color: Color) {
        if self.history.current().turn() != color {
            self.history = History::new(self.history.current().clone().with_turn(color));
        }
    }

    /// The game for an analysis for `color` (by default the side to move),
    /// without changing the engine's.
    fn analysed(&self, color: Option<Color>) -> History<Go<N>> {
        match color {
            Some(color) if self.history.current().turn() != color => {
                History::new(self.history.current().clone().with_turn(color))
            }
            _ => self.history.clone(),
        }
    }

    /// A tree for the next search of `history`: an analysis's table, or
    /// play's tree.
    fn new_tree(&mut self, history: History<Go<N>>, analysis: bool) -> Result<Tree<Go<N>>> {
        self.searches += 1;
        let seed = capa_rules::mix(self.seed, self.searches);
        let tree = match analysis {
            true => Tree::analysis(history, play_params(), seed, ANALYSIS_NODES),
            false => Tree::new(history, play_params(), seed),
        };
        tree.map_err(|e| anyhow::anyhow!("cannot search: {e}"))
    }

    /// Searches `tree` until a line arrives, writing an analysis line every
    /// interval; returns that line, or `None` at the end of the input.
    fn analyze(
        &mut self,
        mut tree: Tree<Go<N>>,
        request: &Request,
        input: &Receiver<Line>,
        output: &mut impl Write,
    ) -> Result<Option<Line>> {
        let mut last_line = Instant::now();
        let mut settled = false;
        loop {
            match input.try_recv() {
                Ok(line) => return Ok(Some(line)),
                Err(TryRecvError::Disconnected) => return Ok(None),
                Err(TryRecvError::Empty) => {}
            }
            if settled {
                // Nothing more to find (one legal move, or the game is
                // decided): wait for the next line without spinning.
                if let Ok(line) = input.recv_timeout(Duration::from_millis(50)) {
                    return Ok(Some(line));
                }
                continue;
            }
            let result =
                tree.search(&self.evaluator, Limits::playouts(ANALYSIS_CHUNK)).map_err(|e| anyhow::anyhow!("{e}"))?;
            settled = result.playouts == 0 || result.stop == StopReason::Proven;
            if let Some(interval) = request.interval
                && (last_line.elapsed() >= interval || settled)
            {
                self.write_analysis(output, request, tree.history(), &result)?;
                last_line = Instant::now();
            }
        }
    }

    /// `genmove` with analysis lines every interval while it searches and
    /// one when it ends; returns the answer's last line, `play MOVE`.
    fn genmove_analyze(&mut self, mut tree: Tree<Go<N>>, request: &Request, output: &mut impl Write) -> Result<String> {
        let mut last_line = Instant::now();
        let mut searched = 0;
        let mut last: Option<SearchResult<Go<N>>> = None;
        while searched < self.playouts {
            let chunk = ANALYSIS_CHUNK.min(self.playouts - searched);
            let result = tree.search(&self.evaluator, Limits::playouts(chunk)).map_err(|e| anyhow::anyhow!("{e}"))?;
            searched += chunk;
            let stalled = result.playouts == 0 || result.stop == StopReason::Proven;
            let done = stalled || searched >= self.playouts;
            if let Some(interval) = request.interval
                && last_line.elapsed() >= interval
                && !done
            {
                self.write_analysis(output, request, tree.history(), &result)?;
                last_line = Instant::now();
            }
            last = Some(result);
            if done {
                break;
            }
        }
        // The search's final figures, whatever the clock said.
        if let (Some(_), Some(result)) = (request.interval, &last) {
            self.write_analysis(output, request, tree.history(), result)?;
        }
        let m = last.as_ref().and_then(|result| result.best()).map(|best| best.mv);
        let Some(m) = m else { bail!("the search found no move") };
        self.history.play(m);
        Ok(format!("play {m}"))
    }

    /// The search's move; with `cleanup`, no pass while a point other than
    /// the mover's own eye is playable.
    fn search(&mut self, cleanup: bool) -> Result<GoMove<N>> {
        let mut player = SearchPlayer {
            name: "capa".to_string(),
            evaluator: &self.evaluator,
            simulations: self.playouts,
            params: play_params(),
        };
        self.searches += 1;
        let turn =
            Turn { slot: 0, history: &self.history, seed: capa_rules::mix(self.seed, self.searches), clock: None };
        let answer = player.moves(&[turn])?.pop().expect("one answer per turn");
        let m = answer.played.map_err(|why| anyhow::anyhow!("the search failed: {why}"))?;
        if cleanup && m.is_pass() {
            let position = self.history.current();
            let mut moves = MoveList::new();
            position.legal_moves(&mut moves);
            let own = Cell::stone(position.turn());
            let capture_or_fill = moves
                .iter()
                .copied()
                .find(|m| m.point().is_some_and(|point| !position.neighbours(point).all(|q| position.cell(q) == own)));
            return Ok(capture_or_fill.unwrap_or(m));
        }
        Ok(m)
    }
}

/// A line of the input, as the reading thread passes it on.
enum Line {
    Text(String),
    /// Bytes that are not UTF-8: answered with an error, then read on.
    NotText,
    Failed(std::io::Error),
}

/// Reads stdin on a thread of its own, line by line, until its end or an
/// error (passed on as the last line).
fn read_lines() -> Receiver<Line> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let (line, last) = match line {
                Ok(text) => (Line::Text(text), false),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => (Line::NotText, false),
                Err(e) => (Line::Failed(e), true),
            };
            if sender.send(line).is_err() || last {
                break;
            }
        }
    });
    receiver
}

/// The search settings of play and analysis.
fn play_params() -> SearchParams {
    SearchParams { parallel_sims: PLAY_PARALLEL_SIMS, ..SearchParams::default() }
}

fn analysis_dialect(command: &str) -> Option<Dialect> {
    match command {
        "lz-analyze" | "lz-genmove_analyze" => Some(Dialect::Lz),
        "kata-analyze" | "kata-genmove_analyze" => Some(Dialect::Kata),
        _ => None,
    }
}

/// The first line of an analysis's answer: `=` and the id.
fn write_head(output: &mut impl Write, id: Option<u64>) -> Result<()> {
    let id = id.map(|id| id.to_string()).unwrap_or_default();
    writeln!(output, "={id}").and_then(|()| output.flush()).context("cannot write stdout")
}

/// Writes one GTP answer: `=id text` or `?id text`, then an empty line.
fn respond(output: &mut impl Write, id: Option<u64>, answer: Result<String, String>) -> Result<()> {
    let id = id.map(|id| id.to_string()).unwrap_or_default();
    let (mark, text) = match answer {
        Ok(text) => ('=', text),
        Err(text) => ('?', text),
    };
    let separator = if text.is_empty() || text.starts_with('\n') { "" } else { " " };
    write!(output, "{mark}{id}{separator}{text}\n\n").and_then(|()| output.flush()).context("cannot write stdout")
}

fn one<'a>(args: &[&'a str], what: &str) -> Result<&'a str> {
    match args {
        [one] => Ok(one),
        _ => bail!("syntax error: expected {what}"),
    }
}

fn parse_color(text: &str) -> Result<Color> {
    match text.to_ascii_lowercase().as_str() {
        "b" | "black" => Ok(Color::Black),
        "w" | "white" => Ok(Color::White),
        _ => bail!("syntax error: '{text}' is not a color (b, w, black, white)"),
    }
}

/// The board as GNU Go's `showboard` draws it: `X` black, `O` white, `.` empty.
fn board_text<const N: usize>(go: &Go<N>) -> String {
    let letters: String =
        (0..N).map(|column| GoMove::<N>::at(column).to_string().remove(0)).map(|c| format!(" {c}")).collect();
    let mut text = format!("  {letters}\n");
    for row in (0..N).rev() {
        text.push_str(&format!("{:>2}", row + 1));
        for column in 0..N {
            let mark = match go.cell(row * N + column) {
                Cell::Empty => '.',
                Cell::Black => 'X',
                Cell::White => 'O',
            };
            text.push(' ');
            text.push(mark);
        }
        text.push_str(&format!(" {}\n", row + 1));
    }
    text.push_str(&format!("  {letters}"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_the_id_and_end_with_an_empty_line() {
        let mut out = Vec::new();
        respond(&mut out, Some(7), Ok("2".into())).unwrap();
        respond(&mut out, None, Err("unknown command: x".into())).unwrap();
        respond(&mut out, None, Ok(String::new())).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "=7 2\n\n? unknown command: x\n\n=\n\n");
    }

    #[test]
    fn the_board_is_drawn_with_gtp_letters() {
        let mut go = capa_rules::go::Go9::startpos();
        go.play(go.parse_move("J9").unwrap());
        let text = board_text(&go);
        assert!(text.starts_with("   A B C D E F G H J\n 9 . . . . . . . . X 9\n"), "{text}");
    }
}
