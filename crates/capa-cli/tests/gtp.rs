//! `capa gtp` through a scripted session, and Go matches against GNU Go.

use std::io::Write;
use std::process::{Command, Stdio};

use capa_net::GameKind;
use capa_rules::Game;
use capa_rules::go::Go9;

use crate::{capa, locate, network, stderr, stdout};

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
    let Some(gnugo) = locate("gnugo") else { return };
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
