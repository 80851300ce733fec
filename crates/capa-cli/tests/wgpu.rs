//! `capa` on the wgpu backend (Mesa's lavapipe in CI): the UCI engine
//! searching with it, and the error for a machine without any adapter.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use capa_net::burn::backend::Flex;
use capa_net::burn::backend::flex::FlexDevice;
use capa_net::{Net, save_net};
use capa_rules::Game;
use capa_rules::GameKind;
use capa_rules::capablanca::Capablanca;
use capa_uci::{Go, UciEngine};

#[test]
fn capa_uci_searches_on_wgpu() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-cli-wgpu");
    std::fs::create_dir_all(&dir).unwrap();
    let net = dir.join("capablanca.safetensors");
    // configs/tiny.toml's network, which capa-train's wgpu test plays with
    // too: the kernels lavapipe compiles and cubecl tunes here serve it.
    let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml");
    let config = capa_train::RunConfig::parse(&std::fs::read_to_string(tiny).unwrap(), &[]).unwrap();
    let config = config.net_config().unwrap();
    assert_eq!(config.game, GameKind::Capablanca);
    save_net(&Net::<Flex>::new(&config, &FlexDevice), &net).unwrap();
    let command = format!("{} uci --net {} --backend wgpu", env!("CARGO_BIN_EXE_capa"), net.display());
    // lavapipe compiles each kernel on first use, for every batch shape the
    // search sends: the first search takes minutes, not the usual seconds.
    let mut engine = UciEngine::start_with_timeout(&command, Duration::from_secs(600)).unwrap();
    engine.new_game().unwrap();
    let out = engine.go("startpos moves e2e4", Go::Nodes(16)).unwrap();
    let best = out.best.expect("a move");
    let mut position = Capablanca::startpos();
    position.play(position.parse_move("e2e4").unwrap());
    assert!(position.parse_move(&best).is_ok(), "{best} is legal");
    assert!(out.lines.first().and_then(|line| line.nodes).is_some_and(|nodes| nodes >= 8), "{:?}", out.lines);
}

/// With no Vulkan driver to load, the GPU backend is a one-line error that
/// says what to install: no panic, no backtrace.
#[test]
fn no_vulkan_driver_is_an_error_naming_what_to_install() {
    let output = Command::new(env!("CARGO_BIN_EXE_capa"))
        .args(["bench", "net", "--backend", "wgpu", "--channels", "8", "--blocks", "1", "--seconds", "0"])
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("mesa-vulkan-drivers") && stderr.contains("wgpu"), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
}
