//! `capa uci` driven by capa's own UCI client, and the client against real
//! engines and broken ones.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use crate::{is_legal_after, network, script};
use capa_rules::GameKind;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, MoveList};
use capa_uci::{Go, UciEngine, UciError, UciScore, engine_for_test};

fn engine_command(net: &Path) -> String {
    format!("{} uci --net {}", env!("CARGO_BIN_EXE_capa"), net.display())
}

#[test]
fn capa_uci_plays_a_scripted_session() {
    let net = network(GameKind::Capablanca, "a");
    let mut engine = UciEngine::start(&engine_command(&net)).unwrap();
    assert!(engine.name().starts_with("capa"), "{}", engine.name());
    let variant = engine.option("UCI_Variant").unwrap();
    assert_eq!(variant.default.as_deref(), Some("capablanca"));
    engine.set_option("UCI_Variant", "capablanca").unwrap();
    engine.set_option("MultiPV", "2").unwrap();
    engine.set_option("UCI_ShowWDL", "true").unwrap();
    engine.new_game().unwrap();
    let moves = ["e2e4", "e7e5"];
    let out = engine.go(&format!("startpos moves {}", moves.join(" ")), Go::Nodes(64)).unwrap();
    let best = out.best.unwrap();
    assert!(is_legal_after::<Capablanca>(&moves, &best), "{best}");
    assert_eq!(out.lines.len(), 2, "{:?}", out.lines);
    assert_eq!(out.lines[0].pv[0], best, "the first line starts with the move played");
    for line in &out.lines {
        let wdl = line.wdl.expect("UCI_ShowWDL adds wdl");
        assert_eq!(wdl.iter().sum::<u32>(), 1000);
        assert!(matches!(line.score, UciScore::Cp(_)));
    }
    // One node: no move is visited, and the score is the root's.
    let out = engine.go("startpos", Go::Nodes(1)).unwrap();
    assert_eq!(out.lines.len(), 1, "{:?}", out.lines);
    assert_eq!(out.lines[0].pv[0], out.best.unwrap());
    // A clock: the move comes well within it.
    let started = std::time::Instant::now();
    let clock = Go::Clock { wtime: 3000, btime: 3000, winc: 0, binc: 0, moves_to_go: None };
    let out = engine.go("startpos", clock).unwrap();
    assert!(is_legal_after::<Capablanca>(&[], &out.best.unwrap()));
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

/// The KLD-gain stop ends a long `go nodes` early; UCI_AnalyseMode pools
/// transpositions, so a position reached by another move order starts with
/// the visits of the first search.
#[test]
fn capa_uci_stops_on_kld_gain_and_analyses_with_transpositions() {
    let net = network(GameKind::Chess, "a");
    let mut engine = UciEngine::start(&engine_command(&net)).unwrap();
    for option in ["MinimumKLDGainPerNode", "KLDGainAverageInterval", "UCI_AnalyseMode", "AnalysisNodeLimit"] {
        assert!(engine.option(option).is_some(), "{option} is declared");
    }
    let nodes = |out: &capa_uci::SearchOutput| out.lines[0].nodes.unwrap();
    engine.set_option("MinimumKLDGainPerNode", "0.001").unwrap();
    engine.set_option("KLDGainAverageInterval", "50").unwrap();
    engine.new_game().unwrap();
    let out = engine.go("startpos", Go::Nodes(50_000)).unwrap();
    assert!(nodes(&out) < 5_000, "settled long before 50000 nodes: {:?}", out.lines);
    engine.set_option("MinimumKLDGainPerNode", "0").unwrap();

    let first = "startpos moves g1f3 g8f6 b1c3";
    let transposed = "startpos moves b1c3 g8f6 g1f3";
    for (analyse, pooled) in [(false, false), (true, true)] {
        engine.set_option("UCI_AnalyseMode", &analyse.to_string()).unwrap();
        engine.new_game().unwrap();
        engine.go(first, Go::Nodes(400)).unwrap();
        let out = engine.go(transposed, Go::Nodes(50)).unwrap();
        assert_eq!(nodes(&out) > 400, pooled, "UCI_AnalyseMode {analyse}: {:?}", out.lines);
    }
}

/// `capa uci` on raw pipes, for what a well-behaved client never sends.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Session {
    fn start(net: &Path) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capa"))
            .args(["uci", "--net"])
            .arg(net)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = channel();
        std::thread::spawn(move || stdout.lines().map_while(Result::ok).try_for_each(|l| sender.send(l)));
        Session { child, stdin, lines }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The lines up to and including the first that starts with `prefix`.
    fn until(&mut self, prefix: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            // Generous: the test binary runs its tests, and their engines, in parallel.
            let line = self.lines.recv_timeout(Duration::from_secs(90)).unwrap_or_else(|_| {
                panic!("no `{prefix}` line within 90 s; got {seen:?}");
            });
            let done = line.starts_with(prefix);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
}

#[test]
fn capa_uci_answers_garbage_and_stops_on_request() {
    let mut engine = Session::start(&network(GameKind::Chess, "a"));
    engine.send(b"uci");
    engine.until("uciok");
    let garbage: [&[u8]; 13] = [
        b"hello there",
        b"\xff\xfe not text",
        b"setoption name Bogus value 1",
        b"setoption name CPuct value many",
        b"setoption name Temperature value -1",
        b"setoption name PolicyTemperature value 0",
        b"setoption name UCI_Variant value capablanca",
        b"setoption",
        b"position startpos moves e2e5",
        b"position fen 8/8/8 w - - 0 1",
        b"position",
        b"go nodes 0",
        b"ponderhit",
    ];
    for line in garbage {
        engine.send(line);
        // Unknown words before a command are skipped, as the protocol asks.
        engine.send(b"joho isready");
        let answer = engine.until("readyok");
        assert!(
            answer.iter().any(|l| l.starts_with("info string")),
            "`{}` got no explanation: {answer:?}",
            String::from_utf8_lossy(line)
        );
    }
    // The bad positions left the start position in place.
    engine.send(b"go nodes 16");
    let bestmove = engine.until("bestmove").pop().unwrap();
    assert!(is_legal_after::<Chess>(&[], bestmove.split_whitespace().nth(1).unwrap()), "{bestmove}");

    // `go infinite` answers `isready` while it thinks and moves only on `stop`.
    engine.send(b"position startpos moves f2f3 e7e5 g2g4");
    engine.send(b"go infinite");
    engine.send(b"isready");
    let answer = engine.until("readyok");
    assert!(!answer.iter().any(|l| l.starts_with("bestmove")), "{answer:?}");
    std::thread::sleep(Duration::from_millis(300));
    engine.send(b"position startpos");
    engine.send(b"stop");
    let answer = engine.until("bestmove");
    assert!(answer.iter().any(|l| l.contains("ignored during a search")), "{answer:?}");
    let best = answer.last().unwrap().split_whitespace().nth(1).unwrap().to_string();
    assert!(is_legal_after::<Chess>(&["f2f3", "e7e5", "g2g4"], &best), "{best}");
    // Mate in one is found and scored as such.
    engine.send(b"go nodes 400");
    let answer = engine.until("bestmove");
    assert_eq!(answer.last().unwrap().split_whitespace().nth(1), Some("d8h4"), "{answer:?}");
    assert!(answer.iter().any(|l| l.contains("score mate 1")), "{answer:?}");
    // VerboseMoveStats: a line per legal move, the mate first, priors summing to 1.
    engine.send(b"setoption name VerboseMoveStats value true");
    engine.send(b"go nodes 64");
    let answer = engine.until("bestmove");
    let stats: Vec<&String> = answer.iter().filter(|l| l.contains(" prior ")).collect();
    let mut position = Chess::startpos();
    for uci in ["f2f3", "e7e5", "g2g4"] {
        position.play(position.parse_move(uci).unwrap());
    }
    let mut legal = MoveList::new();
    position.legal_moves(&mut legal);
    assert_eq!(stats.len(), legal.len(), "one line per legal move: {answer:?}");
    assert!(stats[0].starts_with("info string d8h4 visits ") && stats[0].ends_with("proven mate 1"), "{stats:?}");
    let prior_sum: f32 =
        stats.iter().map(|l| l.split_whitespace().nth(6).unwrap().trim_end_matches('%').parse::<f32>().unwrap()).sum();
    assert!((prior_sum - 100.0).abs() < 0.5, "{prior_sum}");
    engine.send(b"setoption name VerboseMoveStats value maybe");
    engine.send(b"isready");
    let answer = engine.until("readyok");
    assert!(answer.iter().any(|l| l.contains("VerboseMoveStats is true or false")), "{answer:?}");

    engine.send(b"position startpos moves e2e4");
    engine.send(b"go movetime 200");
    let best = engine.until("bestmove").pop().unwrap();
    assert!(is_legal_after::<Chess>(&["e2e4"], best.split_whitespace().nth(1).unwrap()), "{best}");
    engine.send(b"quit");
    assert!(engine.child.wait().unwrap().success());
}

#[test]
fn client_reports_engines_that_fail() {
    let missing = UciEngine::start("/nonexistent/engine").err().unwrap();
    assert!(matches!(missing, UciError::Start { .. }), "{missing}");
    assert!(missing.to_string().contains("/nonexistent/engine"), "{missing}");
    let empty = UciEngine::start("  ").err().unwrap();
    assert!(matches!(empty, UciError::Start { .. }), "{empty}");
    // Exits at once: the error quotes its status and last stderr line.
    let dies = script("dies", "echo 'no weights found' >&2; exit 3");
    let err = UciEngine::start(&dies).err().unwrap();
    assert!(matches!(err, UciError::Exited { .. }), "{err}");
    assert!(err.to_string().contains("no weights found") && err.to_string().contains('3'), "{err}");
    // Crashes in the middle of a search.
    let crashes = script(
        "crashes",
        r#"while read line; do
             case "$line" in
               uci) echo 'id name crasher'; echo uciok;;
               isready) echo readyok;;
               go*) echo 'info depth 1 score cp 10 pv e2e4'; echo 'segmentation fault' >&2; exit 139;;
             esac
           done"#,
    );
    let mut engine = UciEngine::start(&crashes).unwrap();
    assert_eq!(engine.name(), "crasher");
    engine.new_game().unwrap();
    let err = engine.go("startpos", Go::Nodes(100)).err().unwrap();
    assert!(matches!(err, UciError::Exited { .. }), "{err}");
    assert!(err.to_string().contains("searching") && err.to_string().contains("segmentation fault"), "{err}");
    // Never answers: a timeout, not a hang.
    let silent = UciEngine::start_with_timeout("sleep 10", Duration::from_millis(300)).err().unwrap();
    assert!(matches!(silent, UciError::Timeout { .. }), "{silent}");
}

#[test]
fn client_drives_fairy_stockfish() {
    let Some(path) = engine_for_test("fairy-stockfish") else { return };
    let mut engine = UciEngine::start(&path.display().to_string()).unwrap();
    let elo = engine.option("UCI_Elo").expect("Fairy-Stockfish has UCI_Elo");
    assert!(matches!(elo.kind, capa_uci::OptionKind::Spin { min, max } if min < max));
    engine.set_option("UCI_Variant", "capablanca").unwrap();
    engine.set_option("MultiPV", "3").unwrap();
    assert!(engine.set_option("MultiPV", "100000").is_err(), "out of range");
    assert!(engine.set_option("No Such Option", "1").is_err());
    engine.new_game().unwrap();
    let moves = ["e2e4", "e7e5"];
    let out = engine.go(&format!("startpos moves {}", moves.join(" ")), Go::Nodes(5000)).unwrap();
    let best = out.best.unwrap();
    assert!(is_legal_after::<Capablanca>(&moves, &best), "{best}");
    assert_eq!(out.lines.iter().map(|l| l.multipv).collect::<Vec<_>>(), [1, 2, 3]);
    for line in &out.lines {
        assert!(is_legal_after::<Capablanca>(&moves, &line.pv[0]), "{line:?}");
    }
    // Mate in one for the side to move.
    let out = engine.go("fen 4k5/10/4K5/10/10/10/10/R9 w - - 0 1", Go::Depth(6)).unwrap();
    assert_eq!(out.best.as_deref(), Some("a1a8"));
    assert_eq!(out.lines[0].score, UciScore::Mate(1));
}
