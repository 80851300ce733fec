//! `capa gtp` through a scripted session, and Go matches against GNU Go.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use capa_rules::Game;
use capa_rules::GameKind;
use capa_rules::go::{Go, Go9};
use capa_uci::engine_for_test;

use crate::{capa, network, stderr, stdout};

/// Runs `capa gtp` on `input` and returns its answers (each without its
/// closing empty line) and whether it exited cleanly.
fn session(net: &std::path::Path, input: &[u8]) -> (Vec<String>, bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_capa"))
        .args(["gtp", "--net", net.to_str().unwrap(), "--playouts", "16"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.ends_with("\n\n"), "every answer ends with an empty line: {text:?}");
    (text.trim_end().split("\n\n").map(str::to_string).collect(), out.status.success())
}

#[test]
fn gtp_session_follows_the_protocol() {
    let net = network(GameKind::Go9, "a");
    let mut input = b"1 protocol_version\nname\n2 known_command genmove\nknown_command resign\nlist_commands\n\
boardsize 19\nboardsize 9\nkomi 6.5\nplay b E5\nplay w E5\nplay w Z3\nplay w\nplay x D4\nkomi seven\n\
# a comment\n\n3 genmove w\nfinal_score\nshowboard\nundo\nundo\nundo\nfoo bar\n"
        .to_vec();
    input.extend_from_slice(b"\xff\xfe not text\n");
    input.extend_from_slice(b"kgs-genmove_cleanup b\ncapa-fen\nquit\nname\n");
    let (answers, clean) = session(&net, &input);
    assert!(clean, "quit ends the engine cleanly (and is answered; the `name` after it is not)");
    let expected_starts = [
        "=1 2",
        "= capa",
        "=2 true",
        "= false",
        "= protocol_version\nname",
        "? unacceptable size",
        "=",
        "=",
        "=",
        "? illegal move: 'E5' is not a legal move",
        "? illegal move: 'Z3' is not a move",
        "? syntax error: play takes a color and a vertex",
        "? syntax error: 'x' is not a color",
        "? syntax error: komi 'seven'",
        "=3 ",
        "= ",
        "=\n   A B C D E F G H J",
        "=",
        "=",
        "? cannot undo",
        "? unknown command: foo",
        "? the line is not UTF-8 text",
        "= ",
        "= ",
        "=",
    ];
    assert_eq!(answers.len(), expected_starts.len(), "one answer per command until quit: {answers:#?}");
    for (answer, start) in answers.iter().zip(expected_starts) {
        assert!(answer.starts_with(start), "{answer:?} should start with {start:?}");
    }
    // genmove answered a legal move for white after 1. E5, and final_score is GTP's form.
    let reply = answers[14].trim_start_matches("=3 ");
    let mut go = Go9::startpos().with_komi(6.5).unwrap();
    go.play(go.parse_move("E5").unwrap());
    assert!(go.parse_move(reply).is_ok(), "genmove answered {reply}");
    let score = answers[15].trim_start_matches("= ");
    assert!(score == "0" || score.starts_with("B+") || score.starts_with("W+"), "{score}");
    assert!(answers[23].trim_start_matches("= ").ends_with(" w - 0 6.5 simple 1"), "{}", answers[23]);
}

/// One move's record of an analysis line, as KataGo's GTP extensions
/// document it: `info` opens it, key-value pairs follow in any order
/// (unknown keys skipped), and `pv` takes every word up to the next
/// `info` or `ownership`.
#[derive(Debug, Default)]
struct Record {
    mv: String,
    visits: u64,
    winrate: f64,
    prior: f64,
    lcb: f64,
    order: u64,
    pv: Vec<String>,
    score_lead: Option<f64>,
    score_stdev: Option<f64>,
}

/// Parses an analysis line into its records and, after `ownership`, the
/// ownership of every point (floats in [-1, 1]); `lz` values are integers
/// out of 10,000, KataGo's floats in [0, 1] (both returned in [0, 1]).
fn parse_analysis(line: &str, lz: bool) -> (Vec<Record>, Vec<f64>) {
    let mut records: Vec<Record> = Vec::new();
    let mut ownership = Vec::new();
    let mut words = line.split_whitespace().peekable();
    let unit = |text: &str| -> f64 {
        if lz {
            let value: u32 = text.parse().unwrap_or_else(|_| panic!("{text} is not an integer: {line}"));
            assert!(value <= 10_000, "{line}");
            f64::from(value) / 10_000.0
        } else {
            let value: f64 = text.parse().unwrap();
            assert!((0.0..=1.0).contains(&value), "{value} outside [0, 1]: {line}");
            value
        }
    };
    while let Some(word) = words.next() {
        if word == "info" {
            records.push(Record::default());
            continue;
        }
        if word == "ownership" {
            for value in words.by_ref() {
                let value: f64 = value.parse().unwrap_or_else(|_| panic!("{value} is not a number: {line}"));
                assert!((-1.0..=1.0).contains(&value), "ownership {value} outside [-1, 1]: {line}");
                ownership.push(value);
            }
            break;
        }
        let record = records.last_mut().unwrap_or_else(|| panic!("a line starts with `info`: {line}"));
        if word == "pv" {
            while let Some(&next) = words.peek() {
                if next == "info" || next == "ownership" {
                    break;
                }
                record.pv.push(words.next().unwrap().to_string());
            }
            continue;
        }
        let value = words.next().unwrap_or_else(|| panic!("{word} has a value: {line}"));
        match word {
            "move" => record.mv = value.to_string(),
            "visits" => record.visits = value.parse().unwrap(),
            "winrate" => record.winrate = unit(value),
            "prior" => record.prior = unit(value),
            "lcb" => record.lcb = unit(value),
            "order" => record.order = value.parse().unwrap(),
            "scoreLead" => record.score_lead = Some(value.parse().unwrap()),
            "scoreStdev" => record.score_stdev = Some(value.parse().unwrap()),
            _ => {}
        }
    }
    (records, ownership)
}

/// Checks an analysis answer (`=id`, then its lines) on `position`: every
/// line parses, its moves and variations are legal, `order` counts from 0,
/// the best move has the most visits, and the LCB is below the win rate;
/// with `territory` (a network with the ownership and score heads, asked
/// for `ownership true`), every move has a score lead within the board's
/// area and a spread, and the line ends with one ownership per point.
fn check_analysis<const N: usize>(
    answer: &str,
    id: &str,
    position: &Go<N>,
    lz: bool,
    moves: std::ops::RangeInclusive<usize>,
    territory: bool,
) {
    let mut lines = answer.lines();
    assert_eq!(lines.next(), Some(format!("={id}").as_str()), "{answer}");
    let lines: Vec<&str> = lines.collect();
    assert!(!lines.is_empty(), "at least one analysis line: {answer}");
    for line in lines {
        let (records, ownership) = parse_analysis(line, lz);
        assert!(moves.contains(&records.len()), "{} moves, wanted {moves:?}: {line}", records.len());
        assert_eq!(ownership.len(), if territory { N * N } else { 0 }, "{line}");
        let area = (N * N) as f64 + 10.0;
        let scored = |r: &Record| {
            r.score_lead.is_some_and(|lead| lead.abs() <= area)
                && r.score_stdev.is_some_and(|s| (0.0..area).contains(&s))
        };
        assert!(records.iter().all(|r| scored(r) == territory), "{line}");
        for (i, record) in records.iter().enumerate() {
            assert_eq!(record.order, i as u64, "{line}");
            assert!(position.parse_move(&record.mv).is_ok(), "{} is legal: {line}", record.mv);
            assert!(record.lcb <= record.winrate && record.prior > 0.0, "{record:?}");
            assert_eq!(record.pv.first(), Some(&record.mv), "{line}");
            let mut after = position.clone();
            for m in &record.pv {
                let m = after.parse_move(m).unwrap_or_else(|e| panic!("{m} in the pv of {line}: {e}"));
                after.play(m);
            }
        }
        assert!(records.windows(2).all(|w| w[0].visits >= w[1].visits), "best first: {line}");
    }
}

/// A `capa gtp` process driven line by line: an analysis runs until the
/// next command, so each is sent once the answer so far shows it is under way.
struct Session {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
}

impl Session {
    fn start(net: &std::path::Path) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capa"))
            .args(["gtp", "--net", net.to_str().unwrap(), "--playouts", "48"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (input, output) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
        Session { child, input, output }
    }

    fn send(&mut self, text: &str) {
        self.input.write_all(text.as_bytes()).unwrap();
        self.input.flush().unwrap();
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        assert!(self.output.read_line(&mut line).unwrap() > 0, "the engine ended early");
        line.trim_end_matches('\n').to_string()
    }

    /// Reads an answer up to its empty line (without it).
    fn answer(&mut self) -> String {
        let mut lines = Vec::new();
        loop {
            match self.line() {
                line if line.is_empty() => return lines.join("\n"),
                line => lines.push(line),
            }
        }
    }

    /// Starts an analysis, waits for its first line, then sends `next`
    /// (which ends it) and returns the analysis's answer.
    fn analyze(&mut self, command: &str, next: &str) -> String {
        self.send(&format!("{command}\n"));
        let mut lines = vec![self.line()];
        while !lines.last().unwrap().starts_with("info") {
            lines.push(self.line());
        }
        self.send(next);
        let rest = self.answer();
        lines.push(rest);
        lines.join("\n").trim_end().to_string()
    }
}

#[test]
fn analysis_commands_answer_as_go_front_ends_read_them() {
    let mut session = Session::start(&network(GameKind::Go9, "a"));
    session.send("play b E5\n");
    assert_eq!(session.answer(), "=");
    let mut position = Go9::startpos();
    position.play(position.parse_move("E5").unwrap());

    // KataGo's format for white, to move, ended by the next command.
    let answer = session.analyze("1 kata-analyze 5 maxmoves 4", "2 name\n");
    check_analysis(&answer, "1", &position, false, 1..=4, false);
    assert_eq!(session.answer(), "=2 capa");
    // Leela Zero's, with unvisited moves to make up `minmoves`, ended by an empty line.
    let answer = session.analyze("lz-analyze w interval 5 minmoves 30", "\n");
    check_analysis(&answer, "", &position, true, 30..=80, false);
    // Analysis for the side not to move leaves the game as it was.
    let answer = session.analyze("kata-analyze b 5", "3 capa-fen\n");
    check_analysis(&answer, "", &position.clone().with_turn(capa_rules::Color::Black), false, 1..=80, false);
    assert!(session.answer().starts_with("=3 "));
    // genmove_analyze: analysis lines, then the move played.
    session.send("4 kata-genmove_analyze w 1\n");
    let answer = session.answer();
    let (lines, played) = answer.rsplit_once('\n').unwrap();
    let reply = played.strip_prefix("play ").unwrap_or_else(|| panic!("{answer}"));
    check_analysis(lines, "4", &position, false, 1..=80, false);
    assert!(position.parse_move(reply).is_ok(), "{answer}");
    session.send("undo\nkata-analyze ownership true\nlz-analyze 10 avoid b D4 1\nlz-analyze 10 minmoves\nquit\n");
    assert_eq!(session.answer(), "=");
    assert_eq!(
        session.answer(),
        "? ownership true: this network has no ownership head (train one with [net] ownership_head = true)"
    );
    assert!(session.answer().starts_with("? avoid is not supported"));
    assert_eq!(session.answer(), "? syntax error: 'minmoves' needs a value");
    assert_eq!(session.answer(), "=");
    assert!(session.child.wait().unwrap().success());

    // A network with the ownership and score heads: each move's score lead,
    // and every point's ownership, on 9x9 and on 19x19 (whose letters skip
    // I, up to T19).
    let mut session = Session::start(&territory_network(GameKind::Go9));
    session.send("play b E5\n");
    assert_eq!(session.answer(), "=");
    let answer = session.analyze("1 kata-analyze 50 ownership true", "2 name\n");
    check_analysis(&answer, "1", &position, false, 1..=81, true);
    assert_eq!(session.answer(), "=2 capa");
    session.send("quit\n");
    assert_eq!(session.answer(), "=");
    let mut session = Session::start(&territory_network(GameKind::Go19));
    let answer = session.analyze("kata-analyze 50 minmoves 361 ownership true", "quit\n");
    check_analysis(&answer, "", &capa_rules::go::Go19::startpos(), false, 361..=362, true);
    assert_eq!(session.answer(), "=");
}

/// A small Go network with the ownership and score heads.
fn territory_network(game: GameKind) -> std::path::PathBuf {
    let config = capa_net::NetConfig {
        channels: 16,
        blocks: 1,
        groups: 4,
        transformer_blocks: 0,
        ownership_head: true,
        score_head: true,
        ..capa_net::NetConfig::small(game)
    };
    crate::network_of(&config, "territory")
}

#[test]
fn gtp_and_uci_refuse_each_others_networks() {
    let chess = network(GameKind::Chess, "a");
    let out = capa(&["gtp", "--net", chess.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("GTP is for Go (use `capa uci`)"), "{}", stderr(&out));
    let go = network(GameKind::Go9, "a");
    let out = capa(&["uci", "--net", go.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("use `capa gtp` for Go"), "{}", stderr(&out));
}

#[test]
fn a_go_network_plays_gnu_go_without_an_illegal_move() {
    let Some(gnugo) = engine_for_test("gnugo") else { return };
    let net = network(GameKind::Go9, "a");
    let gnugo = format!("{} --mode gtp --level 1", gnugo.display());
    let out = capa(&["match", net.to_str().unwrap(), &gnugo, "--games", "2", "--nodes", "8", "--random-plies", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    let games: Vec<&str> = log.lines().filter(|l| l.starts_with("game ")).map(str::trim).collect();
    assert_eq!(games.len(), 2, "{log}");
    assert!(games.iter().all(|g| g.contains("by two passes, scored")), "{games:#?}");
    assert!(stdout(&out).contains("of 2 games, score"), "{}", stdout(&out));
    // Between two GTP commands the game is Go too: --variant names it.
    let out = capa(&["match", &gnugo, &gnugo, "--variant", "go9", "--games", "2", "--random-plies", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = capa(&["match", net.to_str().unwrap(), &gnugo, "--movetime", "100"]);
    assert!(stderr(&out).contains("a Go match takes --nodes"), "{}", stderr(&out));
}

/// `capa sgf convert` then `capa sgf spot-check` on what it wrote.
#[test]
fn sgf_convert_sums_up_and_names_bad_games() {
    let dir = crate::scratch("sgf-in");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.sgf"), "(;SZ[9]RE[B+R];B[ee];W[ce];B[gg])(;SZ[9]RE[W+2.5];B[ee];W[ee])").unwrap();
    std::fs::write(dir.join("sub/b.sgf"), "(;SZ[19]RE[B+R];B[dd])").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a record").unwrap();
    let out = crate::scratch("sgf-out");
    let run = capa(&["sgf", "convert", dir.to_str().unwrap(), "--out", out.to_str().unwrap(), "--size", "9"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let summary = stdout(&run);
    assert!(
        summary.starts_with(
            "2 files, 3 games read, 1 converted (0 scored on the board, with ownership and score targets; 1 not: \
             resigned, on time, or counted with dead stones left), skipped 2 (illegal move 1, wrong board size 1); \
             3 examples written"
        ),
        "{summary}"
    );
    assert!(stderr(&run).contains("game 2 (line 1), move 2: E5 by White is occupied"), "{}", stderr(&run));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    let missing = capa(&["sgf", "convert", "/no/such.sgf", "--out", out.to_str().unwrap()]);
    assert!(!missing.status.success());
    assert!(stderr(&missing).contains("/no/such.sgf: no such file or folder"), "{}", stderr(&missing));
    let size = capa(&["sgf", "convert", dir.to_str().unwrap(), "--out", out.to_str().unwrap(), "--size", "7"]);
    assert!(stderr(&size).contains("--size 7"), "{}", stderr(&size));

    // The spot check draws the three examples, and names a damaged record.
    std::fs::write(out.join("damaged.capa"), "not a record").unwrap();
    let sheet = crate::scratch("sheet.png");
    let args = |size: &str, count: &str| {
        let (out, sheet) = (out.to_str().unwrap().to_string(), sheet.to_str().unwrap().to_string());
        ["sgf", "spot-check", &out, "--out", &sheet, "--size", size, "--count", count].map(String::from)
    };
    let run = capa(&args("9", "5").each_ref().map(String::as_str));
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stdout(&run).starts_with("3 examples drawn of 3 in 1 records (1 skipped)"), "{}", stdout(&run));
    assert!(stderr(&run).contains("damaged.capa"), "{}", stderr(&run));
    let png = std::fs::read(&sheet).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let dimension = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((dimension(16), dimension(20)), (3 * 280, 340), "three boards in a row");
    let other_size = capa(&args("19", "5").each_ref().map(String::as_str));
    assert!(stderr(&other_size).contains("no example to draw: 0 records read, 2 skipped"), "{}", stderr(&other_size));
    let none = capa(&args("9", "0").each_ref().map(String::as_str));
    assert!(stderr(&none).contains("--count 0: draw 1 to 100 examples"), "{}", stderr(&none));
}
