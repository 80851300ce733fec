//! The `capa` binary as a user runs it: output format, exit codes, errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use capa_net::burn::backend::Flex;
use capa_net::burn::backend::flex::FlexDevice;
use capa_net::{Net, NetConfig, save_net};
use capa_rules::GameKind;
use capa_rules::{Game, History};

mod distill;
mod gtp;
mod lc0;
mod matches;
mod tidy;
mod uci;

fn capa(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capa")).args(args).output().expect("capa runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn perft_prints_nodes_last() {
    let out = capa(&["perft", "--variant", "capablanca", "--depth", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "nodes 25228\n");
    assert!(stderr(&out).contains("nodes/s"), "timing goes to stderr: {}", stderr(&out));
}

#[test]
fn perft_divide_lists_root_moves_sorted() {
    let fen = "r4k3r/ppppp1pppp/5c4/10/4N5/5Na3/PPPP3PPP/R4K3R w KQkq - 0 1";
    let out = capa(&["perft", "--variant", "capablanca", "--fen", fen, "--depth", "2", "--divide"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    assert!(lines[..4].iter().zip(["e4g3: ", "f1g1: ", "f1g2: ", "h2g3: "]).all(|(l, m)| l.starts_with(m)), "{text}");
    let sum: u64 = lines[..4].iter().map(|l| l.split(": ").nth(1).unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(lines[4], format!("nodes {sum}"));
    assert_eq!(sum, 230);
}

#[test]
fn perft_chess() {
    let out = capa(&["perft", "--variant", "chess", "--depth", "4"]);
    assert_eq!(stdout(&out), "nodes 197281\n");
}

#[test]
fn legal_lists_uci_sorted() {
    let out = capa(&["legal", "--variant", "capablanca", "--fen", "r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1"]);
    let text = stdout(&out);
    let moves: Vec<&str> = text.lines().collect();
    let mut sorted = moves.clone();
    sorted.sort();
    assert_eq!(moves, sorted);
    assert!(moves.contains(&"f1i1") && moves.contains(&"f1c1"), "castling as king from-to: {text}");
    let chess = capa(&["legal", "--variant", "chess"]);
    assert_eq!(stdout(&chess).lines().count(), 20);
}

#[test]
fn bad_fen_is_a_clear_error() {
    let out = capa(&[
        "perft",
        "--variant",
        "capablanca",
        "--fen",
        "rnabqkbcnr1/10/10/10/10/10/10/RNABQKBCNR w - - 0 1",
        "--depth",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--fen") && err.contains("rank 8 describes 11 squares, expected 10"), "{err}");
    assert!(stdout(&out).is_empty());
}

#[test]
fn bad_arguments_are_rejected_by_clap() {
    for args in [
        &["perft", "--variant", "shogi", "--depth", "1"][..],
        &["perft", "--variant", "chess", "--depth", "0"],
        &["perft", "--variant", "chess"],
        &["legal"],
    ] {
        let out = capa(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!stderr(&out).is_empty());
    }
}

#[test]
fn legal_says_when_the_game_is_over() {
    let out = capa(&["legal", "--variant", "capablanca", "--fen", "k9/1Q8/2K7/10/10/10/10/10 b - - 0 1"]);
    assert!(out.status.success());
    assert!(stdout(&out).is_empty());
    assert_eq!(stderr(&out), "game over: checkmate (Loss for the side to move)\n");
}

#[test]
fn bench_search_prints_the_figures_last() {
    let out =
        capa(&["bench", "search", "--variant", "capablanca", "--nodes", "3000", "--batch", "64", "--threads", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let last: Vec<&str> = text.lines().last().unwrap().split(' ').collect();
    assert_eq!(
        last.iter().step_by(2).copied().collect::<Vec<_>>(),
        ["nodes", "cpu_s", "nodes_per_cpu_s", "bytes_per_node"]
    );
    assert_eq!(last[1], "3000", "two games of 1500 playouts: {text}");
    let bytes: f64 = last[7].parse().unwrap();
    assert!((32.0..1000.0).contains(&bytes), "{text}");
}

#[test]
fn bench_search_rejects_bad_arguments() {
    for args in [["--batch", "0"], ["--games", "0"], ["--threads", "0"], ["--nodes", "x"]] {
        let mut all = vec!["bench", "search", "--variant", "chess", "--nodes", "100"];
        all.extend(args);
        let out = capa(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!stderr(&out).is_empty() && !stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
    }
}

/// A path in this test binary's scratch folder (under the target folder,
/// emptied once per run, so runs do not pile up files).
pub fn scratch(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-cli-tests");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .join(name)
}

/// A small network with fresh weights, written once per game, name and process.
pub fn network(game: GameKind, name: &str) -> PathBuf {
    let config = NetConfig { channels: 32, blocks: 2, transformer_blocks: 1, heads: 4, ..NetConfig::small(game) };
    network_of(&config, name)
}

/// A fresh network of `config` in the scratch folder (written once), named
/// by its game and `name`.
pub fn network_of(config: &NetConfig, name: &str) -> PathBuf {
    let path = scratch(&format!("{}-{name}.safetensors", config.game.name()));
    if !path.exists() {
        save_net(&Net::<Flex>::new(config, &FlexDevice), &path).unwrap();
    }
    path
}

/// An executable shell script in the scratch folder, as an engine command.
pub fn script(name: &str, body: &str) -> String {
    let path = scratch(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    let mut permissions = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&path, permissions).unwrap();
    path.display().to_string()
}

/// A move in UCI notation that is legal after `moves` from the start.
pub fn is_legal_after<G: Game>(moves: &[&str], best: &str) -> bool {
    let mut history = History::new(G::startpos());
    for m in moves {
        let m = history.current().parse_move(m).unwrap();
        history.play(m);
    }
    history.current().parse_move(best).is_ok()
}
