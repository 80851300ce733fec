//! One iteration of `configs/tiny.toml` on the wgpu backend (Mesa's
//! lavapipe in CI): self-play, training and a checkpoint, through the binary.
//! Fewer games, playouts and steps than the config's: lavapipe runs the
//! network on the CPU's cores, far slower than the CPU backend.

use std::path::Path;
use std::process::Command;

#[test]
fn one_iteration_of_the_tiny_config_runs_on_wgpu() {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capa-train-wgpu");
    let _ = std::fs::remove_dir_all(&dir);
    let output = Command::new(env!("CARGO_BIN_EXE_capa-train"))
        .arg("--config")
        .arg(&config)
        .args(["--set", &format!("run.dir={}", dir.display())])
        .args(["--set", "run.backend=wgpu", "--set", "run.iterations=1"])
        .args(["--set", "selfplay.games=2", "--set", "selfplay.simulations=8", "--set", "game.ply_cap=40"])
        .args(["--set", "train.steps=2", "--set", "train.batch=32"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "capa-train failed:\n{stderr}");
    assert!(stderr.contains("device wgpu:0, "), "it names the adapter:\n{stderr}");
    let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
    assert_eq!(line["iteration"], 1, "{line}");
    let loss = line["train"]["loss"].as_f64();
    assert!(loss.is_some_and(f64::is_finite), "a finite training loss: {line}");
}
