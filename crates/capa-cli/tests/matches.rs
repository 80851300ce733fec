//! `capa match` between networks, against Fairy-Stockfish, and with broken
//! players.

use capa_rules::GameKind;
use capa_uci::engine_for_test;

use crate::{capa, network, scratch, script, stderr, stdout};

/// The numbers of the summary line `... +W =D -L of N games, ...`.
fn tally(out: &str) -> (u32, u32, u32, u32) {
    let line = out.lines().find(|l| l.contains(" games, score ")).unwrap_or_else(|| panic!("no summary: {out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| w.starts_with('+') && w.len() > 1).unwrap();
    let number = |w: &str| w[1..].parse::<u32>().unwrap();
    (number(words[at]), number(words[at + 1]), number(words[at + 2]), words[at + 4].parse().unwrap())
}

#[test]
fn two_networks_play_a_match_with_a_pgn() {
    let (a, b) = (network(GameKind::Capablanca, "a"), network(GameKind::Capablanca, "b"));
    let pgn = scratch("networks.pgn");
    let out = capa(&[
        "match",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--games",
        "3",
        "--nodes",
        "8",
        "--ply-cap",
        "24",
        "--concurrency",
        "2",
        "--pgn",
        pgn.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (wins, draws, losses, games) = tally(&stdout(&out));
    assert_eq!((wins + draws + losses, games), (4, 4), "rounded up to pairs");
    let text = std::fs::read_to_string(&pgn).unwrap();
    assert_eq!(text.matches("[Event \"capa match\"]").count(), 4, "{text}");
    assert_eq!(text.matches("[Variant \"capablanca\"]").count(), 4, "{text}");
    assert_eq!(stderr(&out).lines().filter(|l| l.starts_with("game ")).count(), 4, "a line per game");
}

#[test]
fn a_network_plays_fairy_stockfish_at_its_lowest_elo() {
    let Some(engine) = engine_for_test("fairy-stockfish") else { return };
    let net = network(GameKind::Capablanca, "a");
    let out = capa(&[
        "match",
        net.to_str().unwrap(),
        engine.to_str().unwrap(),
        "--games",
        "2",
        "--nodes",
        "16",
        "--option-b",
        "UCI_LimitStrength=true",
        "--option-b",
        "UCI_Elo=1350",
        "--sprt",
        "-400,0",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (wins, draws, losses, _) = tally(&stdout(&out));
    assert_eq!(wins + draws + losses, 2);
    assert!(stdout(&out).contains("SPRT elo0 -400 elo1 0"), "{}", stdout(&out));
}

#[test]
fn a_player_that_crashes_or_cheats_loses_and_the_match_goes_on() {
    let net = network(GameKind::Chess, "a");
    let crasher = script(
        "crashes-on-go",
        r#"while read line; do
             case "$line" in
               uci) echo 'option name UCI_Variant type combo default chess var chess'; echo uciok;;
               isready) echo readyok;;
               go*) exit 1;;
             esac
           done"#,
    );
    let cheater = script(
        "plays-illegal-moves",
        r#"while read line; do
             case "$line" in
               uci) echo uciok;;
               isready) echo readyok;;
               go*) echo 'bestmove e1e8';;
             esac
           done"#,
    );
    for bad in [crasher, cheater] {
        let out = capa(&["match", net.to_str().unwrap(), &bad, "--games", "2", "--nodes", "4"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(tally(&stdout(&out)), (2, 0, 0, 2), "{}", stderr(&out));
        assert!(stderr(&out).contains("forfeit"), "{}", stderr(&out));
    }
}

#[test]
fn bad_match_arguments_are_clear_errors() {
    let net = network(GameKind::Chess, "a").to_str().unwrap().to_string();
    let capablanca = network(GameKind::Capablanca, "a").to_str().unwrap().to_string();
    let openings = scratch("bad-openings.txt");
    std::fs::write(&openings, "# two openings\ne2e4 e7e5\ne2e4 e2e4\n").unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["match", "fairy-stockfish", "fairy-stockfish"], "--variant"),
        (&["match", &net, &capablanca], "different games"),
        (&["match", &net, "/no/such/engine"], "/no/such/engine"),
        (&["match", &net, &net, "--games", "0"], "--games"),
        (&["match", &net, &net, "--nodes", "0"], "--nodes"),
        (&["match", &net, &net, "--sprt", "10,0"], "elo0"),
        (&["match", &net, &net, "--openings", openings.to_str().unwrap()], "line 3"),
    ];
    for (args, expected) in cases {
        let out = capa(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(err.contains(expected) && !err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn elo_bisects_over_fairy_stockfish_levels() {
    let Some(engine) = engine_for_test("fairy-stockfish") else { return };
    let net = network(GameKind::Capablanca, "a");
    let out = capa(&[
        "elo",
        "--net",
        net.to_str().unwrap(),
        "--engine",
        engine.to_str().unwrap(),
        "--games",
        "2",
        "--nodes",
        "8",
        "--max-probes",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let probes: Vec<&str> = text.lines().filter(|l| l.starts_with("probe ")).collect();
    // The engine's range is 1350 to 2850 (its `uci` says so): the first probe is the middle.
    assert!(probes[0].starts_with("probe 1: UCI_Elo 2100:"), "{text}");
    // Two probes, unless the first scored 45% to 55% (two draws, as the
    // engine's weakened play allows): that stops the bisection at once.
    let even = probes[0].contains("score 50.0%");
    assert_eq!(probes.len(), if even { 1 } else { 2 }, "{text}");
    assert!(text.lines().last().unwrap().starts_with("Elo "), "{text}");
}

#[test]
fn elo_needs_an_engine_whose_strength_can_be_set() {
    let net = network(GameKind::Chess, "a");
    let plain = script(
        "no-uci-elo",
        r#"while read line; do
             case "$line" in
               uci) echo uciok;;
               isready) echo readyok;;
             esac
           done"#,
    );
    let out = capa(&["elo", "--net", net.to_str().unwrap(), "--engine", &plain]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("UCI_LimitStrength"), "{}", stderr(&out));
    let Some(engine) = engine_for_test("fairy-stockfish") else { return };
    let out = capa(&["elo", "--net", net.to_str().unwrap(), "--engine", engine.to_str().unwrap(), "--low", "100"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("UCI_Elo range"), "{}", stderr(&out));
}

#[test]
fn policy_health_reports_each_network() {
    let (a, b) = (network(GameKind::Capablanca, "a"), network(GameKind::Chess, "a"));
    let out = capa(&["policy-health", a.to_str().unwrap(), b.to_str().unwrap(), "--positions", "40"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 2, "{text}");
    for line in text.lines() {
        let value: f64 = line.split("legal moves ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        // Fresh weights: close to uniform, and never below it.
        assert!((1.0..5.0).contains(&value), "{line}");
    }
    let missing = capa(&["policy-health", "/no/such.safetensors"]);
    assert!(!missing.status.success() && stderr(&missing).contains("/no/such.safetensors"));
}

#[test]
fn play_in_the_terminal_and_by_state_file() {
    use std::io::Write;
    let net = network(GameKind::Chess, "a");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_capa"))
        .args(["play", "--net", net.to_str().unwrap(), "--nodes", "8"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"moves\nNf9\nundo\nNf3\nundo\ne2e4\nquit\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(" 1  R N B Q K B N R"), "{text}");
    assert!(text.contains("Nf3 Nh3 a3 a4"), "the legal moves, sorted: {text}");
    assert!(text.contains("`Nf9` is not a legal move here"), "{text}");
    assert!(text.contains("nothing to take back"), "{text}");
    assert_eq!(text.matches("capa plays").count(), 2, "{text}");

    let state = scratch("play-state.txt");
    let _ = std::fs::remove_file(&state);
    let call = |mv: &str| {
        capa(&[
            "play",
            "--net",
            net.to_str().unwrap(),
            "--nodes",
            "8",
            "--state",
            state.to_str().unwrap(),
            "--move",
            mv,
        ])
    };
    let out = call("e4");
    assert!(out.status.success(), "{}", stderr(&out));
    let reply = stdout(&out).lines().last().unwrap().strip_prefix("bestmove ").unwrap().to_string();
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.starts_with("capa-play chess\nfen ") && saved.contains(&format!("moves e2e4 {reply}\n")), "{saved}");
    let out = call("e2e5");
    assert!(!out.status.success() && stderr(&out).contains("not a legal move"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&state).unwrap(), saved, "a refused move leaves the game as it was");
    std::fs::write(&state, "hello\n").unwrap();
    let out = call("d4");
    assert!(!out.status.success() && stderr(&out).contains("line 1"), "{}", stderr(&out));
}

#[test]
fn judge_scores_each_networks_moves_by_the_engine() {
    let Some(engine) = engine_for_test("fairy-stockfish") else { return };
    let (a, b) = (network(GameKind::Capablanca, "a"), network(GameKind::Capablanca, "b"));
    let (a, b, engine) = (a.to_str().unwrap(), b.to_str().unwrap(), engine.to_str().unwrap());
    let args = ["--engine", engine, "--positions", "4", "--depth", "3", "--nodes", "4,8", "--play-nodes", "4"];
    let out = capa(&[&["judge", a, a, b], &args[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("judge: ") && lines[0].contains(" on 4 positions of capablanca-a's games"), "{text}");
    for line in &lines[1..] {
        let columns: Vec<&str> = line.split(" | ").collect();
        assert_eq!(columns.len(), 3, "the prior and two limits: {line}");
        assert!(
            columns[0].starts_with("capablanca-a: prior: ") || columns[0].starts_with("capablanca-b: prior: "),
            "{line}"
        );
        for column in columns {
            let number = |after: &str| -> f64 {
                column.split(after).nth(1).unwrap().split([' ', '%']).next().unwrap().parse().unwrap()
            };
            assert!((0.0..=1000.0).contains(&number("loss ")), "{line}");
            assert!((0.0..=100.0).contains(&number("best ")), "{line}");
            assert!((0.0..=100.0).contains(&number("blunders ")), "{line}");
        }
    }
    // The same network again makes the same moves: nothing between them.
    assert_eq!(lines[2].matches("(+0 ± 0 against the first)").count(), 3, "{text}");
    assert!(!lines[1].contains("against the first") && lines[3].contains("against the first"), "{text}");

    let chess = network(GameKind::Chess, "a");
    let go = network(GameKind::Go9, "a");
    for (nets, message) in [
        (vec![a, chess.to_str().unwrap()], "judge networks of one game together"),
        (vec![go.to_str().unwrap()], "takes chess and Capablanca networks"),
    ] {
        let out = capa(&[&["judge"], &nets[..], &args[..]].concat());
        assert!(!out.status.success() && stderr(&out).contains(message), "{}", stderr(&out));
    }
    let out = capa(&["judge", a, "--engine", "/no/such/engine", "--positions", "1"]);
    assert!(!out.status.success() && stderr(&out).contains("cannot start the judge"), "{}", stderr(&out));
    let out = capa(&["judge", a, "--engine", engine, "--depth", "1"]);
    assert!(!out.status.success() && stderr(&out).contains("--depth must be at least 2"), "{}", stderr(&out));
}
