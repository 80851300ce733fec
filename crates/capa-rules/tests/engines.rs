//! Cross-checks against engines none of us wrote: Fairy-Stockfish for
//! Capablanca, Stockfish for chess, and Sjaak II (an independent code base) as
//! a second opinion on Capablanca (Debian's `fairy-stockfish`, `stockfish`,
//! `sjaakii`).
//!
//! Random playouts of random length from the reference positions; at several
//! positions of each, the engine's `go perft 2` split is compared with ours
//! move by move (Sjaak II: the perft 3 total, as its split uses its own move
//! notation). A mismatch prints the FEN and the moves that differ.
//! The engines are found by `capa_uci::engine_for_test`: without them the
//! tests fail with the command that installs them, unless
//! `CAPA_SKIP_ENGINE_TESTS=1`; `CAPA_FAIRY_STOCKFISH=/path` (and so on)
//! overrides a binary.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, divide};
pub(crate) use capa_uci::engine_for_test;

use crate::common::{CAPABLANCA_FENS, CHESS_FENS, Rng, random_game};

/// An engine process, spoken to line by line.
pub(crate) struct Engine {
    name: String,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Engine {
    pub(crate) fn spawn(path: &PathBuf, args: &[&str]) -> Engine {
        let name = path.display().to_string();
        let mut child = Command::new(path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Engine { name, child, stdin, lines }
    }

    /// Starts a UCI engine and selects `variant` if given.
    fn start_uci(path: &PathBuf, variant: Option<&str>) -> Engine {
        let mut engine = Engine::spawn(path, &[]);
        engine.send("uci");
        engine.read_until("uciok");
        if let Some(variant) = variant {
            engine.send(&format!("setoption name UCI_Variant value {variant}"));
        }
        engine.send("isready");
        engine.read_until("readyok");
        engine
    }

    pub(crate) fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap_or_else(|e| panic!("{} stopped reading: {e}", self.name));
    }

    /// Lines up to and including the first that starts with `prefix`.
    fn read_until(&mut self, prefix: &str) -> Vec<String> {
        self.read_until_line(prefix, |line| line.starts_with(prefix))
    }

    /// Lines up to and including the first for which `last` holds.
    pub(crate) fn read_until_line(&mut self, what: &str, last: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    let done = last(&line);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("{} sent no '{what}' within 60 s", self.name),
                Err(RecvTimeoutError::Disconnected) => panic!("{} exited before '{what}'", self.name),
            }
        }
    }

    /// The engine's `go perft` split: move -> leaves.
    fn divide(&mut self, fen: &str, depth: u32) -> BTreeMap<String, u64> {
        self.send(&format!("position fen {fen}"));
        self.send(&format!("go perft {depth}"));
        self.read_until("Nodes searched")
            .iter()
            .filter_map(|line| {
                let (m, n) = line.split_once(": ")?;
                Some((m.trim().to_string(), n.trim().parse().ok()?))
            })
            .filter(|(m, _)| m != "Nodes searched")
            .collect()
    }

    /// Sjaak II's own `perft` total (its line `DEPTH NODES TIME NPS`).
    fn sjaak_perft(&mut self, fen: &str, depth: u32) -> u64 {
        self.send(&format!("setboard {fen}"));
        self.send(&format!("perft {depth}"));
        let total = |line: &str| {
            let mut fields = line.split_whitespace();
            (fields.next() == Some(&depth.to_string())).then(|| fields.next()?.parse::<u64>().ok()).flatten()
        };
        let lines = self.read_until_line("perft total", |line| total(line).is_some());
        total(lines.last().expect("at least the total")).expect("the total line")
    }

    /// The engine's FEN after playing `moves` (UCI, space-separated, maybe
    /// none) from `start` itself (`d` prints it).
    fn fen_after(&mut self, start: &str, moves: &str) -> String {
        self.send(&format!("position fen {start} moves {moves}"));
        self.send("d");
        // `isready` marks the end of `d`'s output, whatever the engine prints after the FEN.
        self.send("isready");
        let lines = self.read_until("readyok");
        let fen = lines.iter().find_map(|line| line.strip_prefix("Fen: "));
        fen.unwrap_or_else(|| panic!("{} printed no 'Fen:' line for `d`", self.name)).trim().to_string()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ours<G: Game>(pos: &G, depth: u32) -> BTreeMap<String, u64> {
    divide(pos, depth).into_iter().map(|(m, n)| (m.to_string(), n)).collect()
}

/// What differs between two splits, for the failure message.
fn differences(ours: &BTreeMap<String, u64>, theirs: &BTreeMap<String, u64>) -> String {
    let mut out = String::new();
    for (m, n) in ours {
        match theirs.get(m) {
            None => out += &format!("\n    {m}: ours {n}, engine has no such move"),
            Some(t) if t != n => out += &format!("\n    {m}: ours {n}, engine {t}"),
            _ => {}
        }
    }
    for (m, t) in theirs.iter().filter(|(m, _)| !ours.contains_key(*m)) {
        out += &format!("\n    {m}: engine {t}, we have no such move");
    }
    out
}

/// Compares the `go perft 2` splits at every 20th position of each random
/// game and at its last one, and at every 5th the FEN the engine writes after
/// playing the game's moves itself with ours. Returns how many positions had
/// their splits compared.
fn cross_check<G: Game>(engine: &mut Engine, fens: &[&str], games: usize, seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let mut compared = 0;
    let mut failures = Vec::new();
    for i in 0..games {
        let plies = rng.below(160);
        let game = random_game(G::from_fen(fens[i % fens.len()]).unwrap(), plies, &mut Rng::new(rng.next()));
        let moves: Vec<String> = game.moves().iter().map(ToString::to_string).collect();
        let last = moves.len();
        for (ply, pos) in game.positions().iter().enumerate() {
            let fen = pos.fen();
            if ply % 20 == 0 || ply == last {
                let (mine, theirs) = (ours(pos, 2), engine.divide(&fen, 2));
                if mine != theirs {
                    failures.push(format!("game {i}, ply {ply}: {fen}{}", differences(&mine, &theirs)));
                }
                compared += 1;
            }
            if ply % 5 == 0 || ply == last {
                let played = moves[..ply].join(" ");
                let theirs = engine.fen_after(&game.start().fen(), &played);
                if theirs != fen {
                    failures.push(format!("game {i}, after {played}:\n    our FEN    {fen}\n    engine FEN {theirs}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences from {} in {compared} positions:\n{}",
        failures.len(),
        engine.name,
        failures.join("\n")
    );
    compared
}

/// A random Capablanca FEN: kings anywhere or at home, corner rooks with
/// castling rights, a few random pieces, and sometimes an en passant square
/// with a pawn beside it. Many are rejected by `from_fen` (the side not to
/// move in check, say); the caller skips those.
fn random_capablanca_fen(rng: &mut Rng) -> String {
    let mut board = [[' '; 10]; 8];
    let place = |board: &mut [[char; 10]; 8], file: usize, rank: usize, piece: char| {
        let free = board[rank][file] == ' ';
        if free {
            board[rank][file] = piece;
        }
        free
    };
    let home = |rng: &mut Rng, rank| if rng.below(2) == 0 { (5, rank) } else { (rng.below(10), rng.below(8)) };
    let (wk, bk) = (home(rng, 0), home(rng, 7));
    place(&mut board, wk.0, wk.1, 'K');
    if !place(&mut board, bk.0, bk.1, 'k') {
        return String::new();
    }
    for (file, rank, rook) in [(0, 0, 'R'), (9, 0, 'R'), (0, 7, 'r'), (9, 7, 'r')] {
        if rng.below(3) > 0 {
            place(&mut board, file, rank, rook);
        }
    }
    for _ in 0..rng.below(12) {
        let role = b"pppnbrqac"[rng.below(9)] as char;
        let piece = if rng.below(2) == 0 { role.to_ascii_uppercase() } else { role };
        let rank = if role == 'p' { 1 + rng.below(6) } else { rng.below(8) };
        place(&mut board, rng.below(10), rank, piece);
    }
    let white = rng.below(2) == 0;
    let mut castling = String::new();
    for (rank, king, rook, rights) in [(0, 'K', 'R', ['K', 'Q']), (7, 'k', 'r', ['k', 'q'])] {
        for (file, right) in [(9, rights[0]), (0, rights[1])] {
            if board[rank][5] == king && board[rank][file] == rook && rng.below(4) > 0 {
                castling.push(right);
            }
        }
    }
    if castling.is_empty() {
        castling.push('-');
    }
    // An en passant square: the pushed pawn in front, the squares it crossed empty.
    let (pawn_rank, ep_rank, from_rank, pushed, taker) = if white { (4, 5, 6, 'p', 'P') } else { (3, 2, 1, 'P', 'p') };
    let mut ep = "-".to_string();
    let files: Vec<usize> = (0..10)
        .filter(|&f| board[pawn_rank][f] == pushed && board[ep_rank][f] == ' ' && board[from_rank][f] == ' ')
        .collect();
    if !files.is_empty() && rng.below(2) == 0 {
        let file = files[rng.below(files.len())];
        ep = format!("{}{}", (b'a' + file as u8) as char, ep_rank + 1);
        let beside = if file > 0 && (file == 9 || rng.below(2) == 0) { file - 1 } else { file + 1 };
        place(&mut board, beside, pawn_rank, taker);
    }
    let rows: Vec<String> = (0..8)
        .rev()
        .map(|rank| {
            let mut row = String::new();
            let mut empty = 0;
            for &c in &board[rank] {
                if c == ' ' {
                    empty += 1;
                } else {
                    if empty > 0 {
                        row += &empty.to_string();
                        empty = 0;
                    }
                    row.push(c);
                }
            }
            if empty > 0 {
                row += &empty.to_string();
            }
            row
        })
        .collect();
    format!("{} {} {castling} {ep} 0 1", rows.join("/"), if white { 'w' } else { 'b' })
}

#[test]
fn capablanca_matches_fairy_stockfish() {
    let Some(path) = engine_for_test("fairy-stockfish") else { return };
    let mut engine = Engine::start_uci(&path, Some("capablanca"));
    // The reference positions themselves, one ply deeper than the split.
    for fen in CAPABLANCA_FENS {
        let pos = Capablanca::from_fen(fen).unwrap();
        assert_eq!(ours(&pos, 3), engine.divide(fen, 3), "perft 3 split of {fen}");
    }
    let compared = cross_check::<Capablanca>(&mut engine, &CAPABLANCA_FENS, 320, 5);
    assert!(compared >= 600, "only {compared} positions compared");
}

/// Positions no game from the reference positions is likely to reach: kings
/// in the middle, castling rights beside attackers, en passant under pins.
#[test]
fn random_capablanca_positions_match_fairy_stockfish() {
    let Some(path) = engine_for_test("fairy-stockfish") else { return };
    let mut engine = Engine::start_uci(&path, Some("capablanca"));
    let mut rng = Rng::new(8);
    let mut failures = Vec::new();
    let mut compared = 0;
    while compared < 2000 {
        let fen = random_capablanca_fen(&mut rng);
        let Ok(pos) = Capablanca::from_fen(&fen) else { continue };
        compared += 1;
        let (mine, theirs) = (ours(&pos, 2), engine.divide(&fen, 2));
        if mine != theirs {
            failures.push(format!("{fen}{}", differences(&mine, &theirs)));
        }
        let theirs = engine.fen_after(&fen, "");
        if theirs != pos.fen() {
            failures.push(format!("{fen}\n    our FEN    {}\n    engine FEN {theirs}", pos.fen()));
        }
    }
    assert!(failures.is_empty(), "{} differences in {compared} positions:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn chess_matches_stockfish() {
    let Some(path) = engine_for_test("stockfish") else { return };
    let mut engine = Engine::start_uci(&path, None);
    let compared = cross_check::<Chess>(&mut engine, &CHESS_FENS, 120, 6);
    assert!(compared >= 200, "only {compared} positions compared");
}

#[test]
fn capablanca_matches_sjaak_ii() {
    let Some(path) = engine_for_test("sjaakii") else { return };
    let mut engine = Engine::spawn(&path, &["-xboard"]);
    engine.send("variant capablanca");
    // Without `force` Sjaak II, as an xboard engine, would reply to each `setboard` with a move.
    engine.send("force");
    let mut rng = Rng::new(7);
    let mut failures = Vec::new();
    let mut compared = 0;
    for i in 0..160 {
        let start = Capablanca::from_fen(CAPABLANCA_FENS[i % CAPABLANCA_FENS.len()]).unwrap();
        let plies = rng.below(160);
        let last = *random_game(start, plies, &mut Rng::new(rng.next())).current();
        let fen = last.fen();
        let (ours, theirs) = (capa_rules::perft(&last, 3), engine.sjaak_perft(&fen, 3));
        compared += 1;
        if ours != theirs {
            failures.push(format!("game {i}: {fen}: perft 3 ours {ours}, Sjaak II {theirs}"));
        }
    }
    assert!(failures.is_empty(), "{} of {compared} positions differ:\n{}", failures.len(), failures.join("\n"));
}
