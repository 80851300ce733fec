//! `capa play`: a game against a network in the terminal, or one move per
//! call with the game kept in a state file, for scripts.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use capa_data::{centipawns, write_atomically};
use capa_mcts::{Limits, PLAY_PARALLEL_SIMS, SearchParams, Tree};
use capa_net::{NetEvaluator, NetGame};
use capa_rules::{Color, Game, GameResult, History, MoveList};

use crate::args::DeviceArgs;

/// Play a network in the terminal, or one move per call with --state.
///
/// In the terminal: the board is drawn after every move; type a move in
/// UCI (`e2e4`) or SAN (`Nf3`), `moves` for the legal moves, `undo` to
/// take back your last move and the reply, `quit` to stop. With
/// --state FILE: each call plays --move (if given), then the network's
/// reply, saves the game to FILE and prints the board, then
/// `bestmove M`, and `result R (how)` once the game is over; a missing
/// FILE starts a new game (from --fen if given).
#[derive(clap::Args, Debug)]
pub struct PlayArgs {
    /// The network file, or a shipped network's short name
    /// (`capablanca-cpu`); its game is the game played.
    #[arg(long, value_parser = crate::args::network)]
    pub net: PathBuf,
    /// Playouts per move of the network.
    #[arg(long, default_value_t = 800)]
    pub nodes: u32,
    /// Your colour in the terminal: `white` or `black`.
    #[arg(long, default_value = "white", value_parser = parse_color)]
    pub color: Color,
    /// The start position (FEN); the game's own when absent.
    #[arg(long)]
    pub fen: Option<String>,
    /// Keep the game in this file and play one move per call.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// With --state: your move (UCI or SAN), played before the network's.
    #[arg(long = "move")]
    pub mv: Option<String>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Plays, in the terminal or one move per call.
///
/// # Errors
/// An unreadable network, a bad FEN, a bad state file, an illegal `--move`.
pub fn run(args: &PlayArgs) -> Result<()> {
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    let game =
        capa_net::read_net_config(&args.net).with_context(|| format!("cannot read {}", args.net.display()))?.game;
    capa_rules::for_game!(game, G => play::<G>(args))
}

fn play<G: NetGame>(args: &PlayArgs) -> Result<()> {
    let engine = Engine::<G>::new(args)?;
    match &args.state {
        Some(path) => one_move(args, &engine, path),
        None => {
            if args.mv.is_some() {
                bail!("--move needs --state: in the terminal, type the moves");
            }
            let start = match &args.fen {
                Some(fen) => G::from_fen(fen).with_context(|| format!("--fen `{fen}`"))?,
                None => G::startpos(),
            };
            terminal(args.color, &engine, History::new(start), std::io::stdin().lock(), &mut std::io::stdout())
        }
    }
}

/// The network and how long it thinks.
struct Engine<G: NetGame> {
    evaluator: NetEvaluator<G>,
    nodes: u32,
}

impl<G: NetGame> Engine<G> {
    fn new(args: &PlayArgs) -> Result<Engine<G>> {
        let evaluator = NetEvaluator::<G>::from_file(&args.net, args.device.spec())
            .with_context(|| format!("cannot load {}", args.net.display()))?;
        Ok(Engine { evaluator, nodes: args.nodes })
    }

    /// The engine's move in `history`, and a line describing it.
    fn reply(&self, history: &History<G>) -> Result<(G::Move, String)> {
        let params = SearchParams { parallel_sims: PLAY_PARALLEL_SIMS, ..SearchParams::default() };
        let mut tree = Tree::new(history.clone(), params, 0).map_err(|e| anyhow::anyhow!("{e}"))?;
        let result = tree.search(&self.evaluator, Limits::playouts(self.nodes)).map_err(|e| anyhow::anyhow!("{e}"))?;
        let best = result.best().context("the search found no move")?;
        let position = history.current();
        let white_q = if position.turn() == Color::White { result.q } else { -result.q };
        let line = format!(
            "capa plays {} ({}): eval {:+.2} for white, win/draw/loss {:.0}/{:.0}/{:.0}% for capa, {} visits",
            position.san(best.mv),
            best.mv,
            centipawns(white_q) / 100.0,
            50.0 * (1.0 + result.q - result.d),
            100.0 * result.d,
            50.0 * (1.0 - result.q - result.d),
            result.visits
        );
        Ok((best.mv, line))
    }
}

/// A move typed by a person: UCI (`e2e4`) or SAN (`Nf3`, `O-O`).
fn parse_move<G: Game>(position: &G, text: &str) -> Result<G::Move> {
    if let Ok(m) = position.parse_move(text) {
        return Ok(m);
    }
    let mut legal = MoveList::new();
    position.legal_moves(&mut legal);
    let plain = |s: &str| s.trim_end_matches(['+', '#', '!', '?']).to_string();
    legal
        .iter()
        .copied()
        .find(|&m| plain(&position.san(m)) == plain(text))
        .with_context(|| format!("`{text}` is not a legal move here (type `moves` for the list)"))
}

/// The board as text, white at the bottom, from the FEN's placement field.
fn board<G: Game>(position: &G) -> String {
    let fen = position.fen();
    let placement = fen.split(' ').next().unwrap_or_default();
    let mut out = String::new();
    let ranks: Vec<&str> = placement.split('/').collect();
    let mut files = 0;
    for (i, rank) in ranks.iter().enumerate() {
        let mut row = format!("{:>2} ", ranks.len() - i);
        let mut empty = 0;
        let flush = |row: &mut String, empty: &mut usize| {
            row.push_str(&" .".repeat(*empty));
            *empty = 0;
        };
        let mut width = 0;
        for c in rank.chars() {
            if let Some(d) = c.to_digit(10) {
                // Empty runs can take two digits (`10` on a Capablanca board).
                empty = empty * 10 + d as usize;
            } else {
                width += empty;
                flush(&mut row, &mut empty);
                row.push(' ');
                row.push(c);
                width += 1;
            }
        }
        width += empty;
        flush(&mut row, &mut empty);
        files = files.max(width);
        out.push_str(&row);
        out.push('\n');
    }
    out.push_str("   ");
    for file in (b'a'..).take(files) {
        out.push(' ');
        out.push(char::from(file));
    }
    out.push('\n');
    out
}

/// The result line for a finished game, `None` while it goes on.
fn result_line<G: Game>(history: &History<G>) -> Option<String> {
    let outcome = history.outcome()?;
    let to_move = history.current().turn();
    let score = match (outcome.result, to_move) {
        (GameResult::Draw, _) => "1/2-1/2",
        (GameResult::Win, Color::White) | (GameResult::Loss, Color::Black) => "1-0",
        _ => "0-1",
    };
    Some(format!("{score} ({})", outcome.reason))
}

/// The interactive game: the person plays `color`.
fn terminal<G: NetGame>(
    color: Color,
    engine: &Engine<G>,
    mut history: History<G>,
    input: impl BufRead,
    out: &mut impl Write,
) -> Result<()> {
    writeln!(
        out,
        "You play {color:?} against capa ({} playouts a move). Type a move (e2e4 or Nf3), `moves`, `undo` or `quit`.",
        engine.nodes
    )?;
    let mut lines = input.lines();
    loop {
        write!(out, "\n{}", board(history.current()))?;
        if let Some(result) = result_line(&history) {
            writeln!(out, "game over: {result}")?;
            return Ok(());
        }
        if history.current().turn() != color {
            let (m, line) = engine.reply(&history)?;
            writeln!(out, "{line}")?;
            history.play(m);
            continue;
        }
        loop {
            write!(out, "your move: ")?;
            out.flush()?;
            let Some(line) = lines.next() else { return Ok(()) };
            let line = line.context("cannot read stdin")?;
            match line.trim() {
                "" => continue,
                "quit" | "exit" => return Ok(()),
                "moves" => {
                    let mut legal = MoveList::new();
                    history.current().legal_moves(&mut legal);
                    let mut names: Vec<String> = legal.iter().map(|&m| history.current().san(m)).collect();
                    names.sort();
                    writeln!(out, "{}", names.join(" "))?;
                }
                "undo" => {
                    // Back to the person's previous turn: their move and the reply.
                    if history.moves().len() < 2 {
                        writeln!(out, "nothing to take back")?;
                    } else {
                        history.undo();
                        history.undo();
                        break;
                    }
                }
                text => match parse_move(history.current(), text) {
                    Ok(m) => {
                        history.play(m);
                        break;
                    }
                    Err(e) => writeln!(out, "{e}")?,
                },
            }
        }
    }
}

/// One call of the scripted mode: load the game, play `--move`, let the
/// engine reply, save the game.
fn one_move<G: NetGame>(args: &PlayArgs, engine: &Engine<G>, path: &Path) -> Result<()> {
    let mut history = match std::fs::read_to_string(path) {
        Ok(text) => read_state::<G>(&text).with_context(|| format!("bad state file {}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => History::new(match &args.fen {
            Some(fen) => G::from_fen(fen).with_context(|| format!("--fen `{fen}`"))?,
            None => G::startpos(),
        }),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if let Some(text) = &args.mv {
        if let Some(result) = result_line(&history) {
            bail!("the game is over ({result}): no more moves");
        }
        let m = parse_move(history.current(), text)?;
        history.play(m);
    }
    let mut reply = None;
    if result_line(&history).is_none() {
        let (m, line) = engine.reply(&history)?;
        eprintln!("{line}");
        history.play(m);
        reply = Some(m);
    }
    let moves: Vec<String> = history.moves().iter().map(ToString::to_string).collect();
    let state = format!("{} {}\nfen {}\nmoves {}\n", STATE_MAGIC, G::NAME, history.start().fen(), moves.join(" "));
    write_atomically(path, state.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    print!("{}", board(history.current()));
    if let Some(m) = reply {
        println!("bestmove {m}");
    }
    if let Some(result) = result_line(&history) {
        println!("result {result}");
    }
    Ok(())
}

/// The first word of a state file.
const STATE_MAGIC: &str = "capa-play";

/// Reads a state file: `capa-play <game>`, `fen <FEN>`, `moves <uci>...`.
fn read_state<G: Game>(text: &str) -> Result<History<G>> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    match header.split_whitespace().collect::<Vec<_>>()[..] {
        [STATE_MAGIC, game] if game == G::NAME => {}
        [STATE_MAGIC, game] => bail!("line 1: the game is {game}, but the network plays {}", G::NAME),
        _ => bail!("line 1: expected `{STATE_MAGIC} {}`", G::NAME),
    }
    let fen = lines.next().and_then(|l| l.strip_prefix("fen ")).context("line 2: expected `fen <FEN>`")?;
    let mut history = History::new(G::from_fen(fen).context("line 2")?);
    let moves = lines.next().and_then(|l| l.strip_prefix("moves")).context("line 3: expected `moves ...`")?;
    history.play_moves(moves.split_whitespace()).context("line 3")?;
    Ok(history)
}

/// `white` or `black`.
fn parse_color(text: &str) -> Result<Color, String> {
    match text {
        "white" => Ok(Color::White),
        "black" => Ok(Color::Black),
        other => Err(format!("`{other}`: white or black")),
    }
}

#[cfg(test)]
mod tests {
    use capa_rules::capablanca::Capablanca;
    use capa_rules::chess::Chess;

    use super::*;

    #[test]
    fn boards_are_drawn_from_the_fen() {
        let chess = board(&Chess::startpos());
        assert!(chess.starts_with(" 8  r n b q k b n r\n"), "{chess}");
        assert!(chess.contains(" 4  . . . . . . . .\n"), "{chess}");
        assert!(chess.ends_with("    a b c d e f g h\n"), "{chess}");
        let capablanca = board(&Capablanca::startpos());
        assert!(capablanca.starts_with(" 8  r n a b q k b c n r\n"), "{capablanca}");
        assert!(capablanca.contains(" 5  . . . . . . . . . .\n"), "{capablanca}");
        assert!(capablanca.ends_with("    a b c d e f g h i j\n"), "{capablanca}");
    }

    #[test]
    fn moves_are_read_as_uci_or_san() {
        let start = Chess::startpos();
        assert_eq!(parse_move(&start, "Nf3").unwrap(), start.parse_move("g1f3").unwrap());
        assert_eq!(parse_move(&start, "e2e4").unwrap(), start.parse_move("e2e4").unwrap());
        assert!(parse_move(&start, "Nf6").is_err());
        assert!(parse_move(&start, "").is_err());
    }

    #[test]
    fn state_files_round_trip_and_bad_ones_say_where() {
        let history = read_state::<Chess>(
            "capa-play chess\nfen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\nmoves e2e4 e7e5\n",
        )
        .unwrap();
        assert_eq!(history.moves().len(), 2);
        let bad = [
            ("", "line 1"),
            ("capa-play capablanca\n", "the network plays chess"),
            ("capa-play chess\nfen x\nmoves\n", "line 2"),
            ("capa-play chess\nfen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\n", "line 3"),
            (
                "capa-play chess\nfen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\nmoves e2e4 e2e4\n",
                "move 2",
            ),
        ];
        for (text, expected) in bad {
            let err = format!("{:#}", read_state::<Chess>(text).unwrap_err());
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }
}
