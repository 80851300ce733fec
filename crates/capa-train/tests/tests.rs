//! The trainer end to end, through its binary: iterations, resume, kills at
//! bad moments, and configs that must be refused before any work starts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use capa_data::GameRecord;
use capa_rules::capablanca::Capablanca;

/// A run small enough for seconds per iteration on 2 cores.
const TINY: &str = r#"
[run]
seed = 7
iterations = 2

[game]
name = "capablanca"
ply_cap = 40

[net]
channels = 16
blocks = 1
transformer_blocks = 1
heads = 2
groups = 2

[selfplay]
games = 6
simulations = 16
parallel_sims = 2
groups = 2
resign_loss = 0.95

[buffer]
window = 2000

[train]
batch = 16
steps = 4

[checkpoint]
every = 2
keep = 1
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-train-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn command(config: &Path, run_dir: &Path, sets: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_capa-train"));
    command.arg("--config").arg(config).arg("--set").arg(format!("run.dir={}", run_dir.display()));
    for set in sets {
        command.arg("--set").arg(set);
    }
    command
}

fn train(config: &Path, run_dir: &Path, sets: &[&str]) -> Output {
    let output = command(config, run_dir, sets).output().unwrap();
    assert!(output.status.success(), "capa-train failed:\n{}", String::from_utf8_lossy(&output.stderr));
    output
}

fn tiny(dir: &Path) -> PathBuf {
    let path = dir.join("tiny.toml");
    std::fs::write(&path, TINY).unwrap();
    path
}

/// The network `LATEST` names.
fn read_latest(run: &Path) -> String {
    std::fs::read_to_string(run.join("LATEST")).unwrap().trim().to_string()
}

/// The iterations in metrics.jsonl, in order.
fn metric_iterations(run: &Path) -> Vec<u64> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["iteration"].as_u64().unwrap())
        .collect()
}

/// Polls `condition` for up to 10 minutes.
fn wait_until(condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while !condition() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The run's game files, sorted; none in a run without games (distillation).
fn game_files(run: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(nets) = std::fs::read_dir(run.join("games")) else { return files };
    for net in nets {
        for file in std::fs::read_dir(net.unwrap().path()).unwrap() {
            files.push(file.unwrap().path());
        }
    }
    files.sort();
    files
}

/// Every file a reader would read is whole: no temporary left, every game readable.
fn assert_clean(run: &Path) {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { walk(&path, out) } else { out.push(path) }
        }
    }
    let mut all = Vec::new();
    walk(run, &mut all);
    let temporaries: Vec<_> = all.iter().filter(|p| p.to_string_lossy().contains(".tmp-")).collect();
    assert!(temporaries.is_empty(), "temporary files left: {temporaries:?}");
    for file in game_files(run) {
        GameRecord::<Capablanca>::read(&file).unwrap();
    }
}

#[test]
fn two_iterations_then_a_resumed_third() {
    let dir = scratch("e2e");
    let (config, run) = (tiny(&dir), dir.join("run"));
    train(&config, &run, &[]);
    assert_eq!(metric_iterations(&run), [1, 2]);
    assert_eq!(game_files(&run).len(), 12);
    assert!(run.join("checkpoints/iter-000002.safetensors").exists());
    assert!(!run.join("checkpoints/iter-000001.safetensors").exists(), "every = 2 keeps only even iterations");
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(run.join("metrics.jsonl")).unwrap().lines().last().unwrap())
            .unwrap();
    assert_eq!(line["games"], 6);
    assert!(line["train"]["loss"].as_f64().unwrap() > 0.0);
    assert_eq!(line["train"]["steps"], 4);
    let pgn = std::fs::read_to_string(run.join("pgn/iter-000002.pgn")).unwrap();
    assert_eq!(pgn.matches("[Event ").count(), 6);
    assert!(pgn.contains("[Variant \"capablanca\"]") && pgn.contains("1. "), "{pgn}");
    let latest = std::fs::read_to_string(run.join("LATEST")).unwrap();
    assert!(run.join("nets").join(format!("{latest}.safetensors")).exists());

    // A check that keeps its state: the whole run the first time.
    let state = dir.join("check-state.json");
    let (whole, report) = check_run(&config, &run, Some(&state));
    assert!(whole && report.contains("problems: 0") && !report.contains("since iteration"), "{report}");

    // The run as the layout before left it: games filed by network, a commit point without the layout.
    let filed = format!("games/{}", latest.trim());
    std::fs::rename(run.join("games/local"), run.join(&filed)).unwrap();
    for ledger in ["ledger/iter-000001.txt", "ledger/iter-000002.txt"] {
        let text = std::fs::read_to_string(run.join(ledger)).unwrap();
        std::fs::write(run.join(ledger), text.replace("games/local/", &format!("{filed}/"))).unwrap();
    }
    let commit = std::fs::read_to_string(run.join("checkpoints/latest.json")).unwrap();
    std::fs::write(run.join("checkpoints/latest.json"), commit.replace("\"games_layout\": 2", "\"games_layout\": 1"))
        .unwrap();

    // The third iteration also plays its network against the second's.
    let output = train(&config, &run, &["run.iterations=3", "eval.every=1", "eval.games=2", "eval.simulations=4"]);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("resuming") && log.contains("after iteration 2"), "{log}");
    assert!(log.contains("12 of its games the run's own"), "the window read through the old ledgers: {log}");
    let commit = std::fs::read_to_string(run.join("checkpoints/latest.json")).unwrap();
    assert!(commit.contains("\"games_layout\": 2"), "{commit}");
    assert_eq!(std::fs::read_dir(run.join("games/local")).unwrap().count(), 6);

    // The next check reads what is new since: a damaged new game is found, the state kept until it is whole.
    let new_game = run.join("games/local/local-i000003-g000001.capa");
    let bytes = std::fs::read(&new_game).unwrap();
    std::fs::write(&new_game, &bytes[..bytes.len() / 2]).unwrap();
    let (whole, report) = check_run(&config, &run, Some(&state));
    assert!(!whole && report.contains("games/local/local-i000003-g000001.capa: "), "{report}");
    std::fs::write(&new_game, &bytes).unwrap();
    let (whole, report) = check_run(&config, &run, Some(&state));
    assert!(whole && report.starts_with("committed iterations: 3; game files: 18 (18 trained on"), "{report}");
    assert!(report.contains("problems: 0 (what is new since iteration 2 checked)"), "{report}");
    let (whole, report) = check_run(&config, &run, Some(&state));
    assert!(whole && report.contains("since iteration 3"), "{report}");
    assert!(log.contains("vs previous"), "{log}");
    assert_eq!(metric_iterations(&run), [1, 2, 3]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines[1].get("eval").is_none());
    let eval = &lines[2]["eval"];
    assert_eq!(eval["opponent"], lines[1]["network"]);
    let games = ["wins", "draws", "losses"].map(|k| eval["probes"][0][k].as_u64().unwrap()).iter().sum::<u64>();
    assert_eq!(games, 2, "{eval}");
    assert_eq!(eval["probes"].as_array().unwrap().len(), 1, "{eval}");

    // The diagnostics read the same run.
    let stats = capa_train::buffer_stats(&run).unwrap();
    assert_eq!(stats.run_games, 18);
    assert_eq!(stats.white_draw_black.iter().sum::<u64>() as usize, stats.games);
    assert_eq!(stats.endings.values().sum::<u64>() as usize, stats.games);
    assert_eq!(stats.targets.iter().sum::<u64>() as usize, stats.positions);
    assert!(stats.positions > 0 && stats.lengths[2] <= stats.lengths[1] && stats.lengths[1] <= stats.lengths[3]);
    let report = capa_train::overfit_check(&run, 16, capa_net::DeviceSpec::CPU).unwrap();
    assert!(report.ratio().is_finite() && report.ratio() > 0.0, "{report}");
    // The newest games were played by iteration 2's network, before iteration 3 trained on them.
    let held = report.held_out.as_ref().expect("three networks played");
    assert_eq!(held.network, lines[1]["network"], "{report}");
    assert!(held.positions == 16 && held.wdl_ratio().is_finite() && held.unseen[1] > 0.0, "{report}");
    assert!(report.to_string().contains("never trained on"), "{report}");
    let too_many = capa_train::overfit_check(&run, 1_000_000, capa_net::DeviceSpec::CPU).unwrap_err();
    assert!(format!("{too_many:#}").contains("too few"), "{too_many:#}");
    assert!(capa_train::buffer_stats(&dir.join("no-such-run")).is_err());
    assert_eq!(game_files(&run).len(), 18);
    assert_clean(&run);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With `[gate]`, self-play plays the player, which changes only to a
/// network that won its match; `LATEST` and the commit point name it, and
/// a resumed run plays on with it.
#[test]
fn a_gate_changes_the_player_only_to_a_network_that_won_its_match() {
    let dir = scratch("gate");
    let (config, run) = (tiny(&dir), dir.join("run"));
    // Iteration 1 is not gated: iteration 2 plays the first network, read back from the run.
    let gate = ["gate.every=2", "gate.games=2", "gate.simulations=4"];
    train(&config, &run, &gate);
    let output = train(&config, &run, &[&gate[..], &["run.iterations=3"]].concat());
    assert!(String::from_utf8_lossy(&output.stderr).contains("after iteration 2"));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let played_by = |iteration: u64| {
        let games: Vec<String> = game_files(&run)
            .iter()
            .filter(|f| f.to_string_lossy().contains(&format!("-i{iteration:06}-")))
            .map(|f| GameRecord::<Capablanca>::read(f).unwrap().network)
            .collect();
        assert_eq!(games.len(), 6);
        assert!(games.iter().all(|n| *n == games[0]), "one network plays an iteration: {games:?}");
        games[0].clone()
    };
    let mut player = played_by(1);
    for line in &lines {
        let iteration = line["iteration"].as_u64().unwrap();
        assert_eq!(played_by(iteration), player, "iteration {iteration}");
        let Some(gate) = line.get("gate") else {
            assert_ne!(iteration, 2, "iteration 2 is gated");
            continue;
        };
        assert_eq!(gate["challenger"], line["network"]);
        assert_eq!(gate["player"].as_str(), Some(player.as_str()));
        let games = ["wins", "draws", "losses"].map(|k| gate[k].as_u64().unwrap());
        assert_eq!(games.iter().sum::<u64>(), 2, "{gate}");
        let score = gate["score"].as_f64().unwrap();
        assert_eq!(gate["promoted"].as_bool(), Some(score >= 0.55), "{gate}");
        if score >= 0.55 {
            player = line["network"].as_str().unwrap().to_string();
        }
    }
    assert_eq!(metric_iterations(&run), [1, 2, 3]);
    assert_ne!(player, lines[2]["network"], "iteration 3's network never played its match");
    assert_eq!(read_latest(&run), player);
    let commit = std::fs::read_to_string(run.join("checkpoints/latest.json")).unwrap();
    assert!(commit.contains(&format!("\"player\": \"{player}\"")), "{commit}");
    let bad = train_expecting_failure(&config, &dir.join("bad"), &["gate.every=1", "gate.threshold=0.5"]);
    assert!(bad.contains("gate.threshold") && bad.contains("(0.5, 1]"), "{bad}");
    assert_clean(&run);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What a kill during a checkpoint write leaves (a temporary file, a
/// checkpoint the commit point does not name yet, a metrics line of the
/// uncommitted iteration, half a line) is cleaned up and the iteration
/// played again.
#[test]
fn a_kill_during_the_checkpoint_loses_only_that_iteration() {
    let dir = scratch("checkpoint-kill");
    let (config, run) = (tiny(&dir), dir.join("run"));
    train(&config, &run, &[]);
    let checkpoints = run.join("checkpoints");
    let one = r#"{"iteration": 1, "checkpoint": "iter-000001.safetensors", "network": "NET"}"#;
    let latest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(checkpoints.join("latest.json")).unwrap()).unwrap();
    // Iteration 1's checkpoint was pruned; stand in iteration 2's for it.
    std::fs::copy(checkpoints.join("iter-000002.safetensors"), checkpoints.join("iter-000001.safetensors")).unwrap();
    std::fs::write(checkpoints.join("latest.json"), one.replace("NET", latest["network"].as_str().unwrap())).unwrap();
    std::fs::write(checkpoints.join(".iter-000002.safetensors.tmp-99999999-0"), b"half a checkpoint").unwrap();
    let mut metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    metrics.push_str("{\"iteration\": 3, \"gam");
    std::fs::write(run.join("metrics.jsonl"), metrics).unwrap();

    let output = train(&config, &run, &[]);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("removed 1 temporary file") && log.contains("after iteration 1"), "{log}");
    assert_eq!(metric_iterations(&run), [1, 2]);
    assert_eq!(game_files(&run).len(), 12, "iteration 2's games are played again, not added twice");
    assert_clean(&run);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGKILL in the middle of self-play, then a restart: nothing written is
/// damaged and the run completes with every iteration once.
#[cfg(unix)]
#[test]
fn sigkill_during_self_play_then_resume() {
    let dir = scratch("sigkill");
    let (config, run) = (tiny(&dir), dir.join("run"));
    let mut child = command(&config, &run, &["run.iterations=3", "selfplay.games=12"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill once iteration 2 has written some of its games.
    wait_until(|| {
        run.join("games").exists() && game_files(&run).iter().any(|f| f.to_string_lossy().contains("local-i000002-g"))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(metric_iterations(&run), [1]);

    let output = train(&config, &run, &["run.iterations=3", "selfplay.games=12"]);
    assert!(String::from_utf8_lossy(&output.stderr).contains("after iteration 1"));
    assert_eq!(metric_iterations(&run), [1, 2, 3]);
    assert_eq!(game_files(&run).len(), 36);
    assert_clean(&run);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_configs_are_refused_before_any_work() {
    let dir = scratch("bad-config");
    let run = dir.join("run");
    let cases = [
        ("[selfplay]\ngames = 4\nsimulatons = 10\n", vec![], vec!["simulatons", "line 3"]),
        ("[train]\nbatch = \"big\"\n", vec![], vec!["batch", "line 2"]),
        ("[selfplay]\nparallel_sims = 0\n", vec![], vec!["selfplay.parallel_sims (line 2)", "1 to 8192"]),
        ("", vec!["buffer.sampling=random"], vec!["--set buffer.sampling=random", "uniform"]),
        ("", vec!["run.backend=tpu"], vec!["--set run.backend=tpu"]),
        ("[eval]\nevery = 1\nsimulations = 0\n", vec![], vec!["eval.simulations (line 3)", "1 to 1000000"]),
        ("[eval]\nbracket = [2000, 1500]\n", vec![], vec!["eval.bracket (line 2)", "low below high"]),
        ("", vec!["eval.method=guess"], vec!["--set eval.method=guess", "bisection"]),
        ("", vec!["curriculum.fraction=2"], vec!["curriculum.fraction", "[0, 1]"]),
        ("[run]\nmode = \"distill\"\n", vec![], vec!["distill.data", "capa distill gen"]),
        ("", vec!["run.mode=teach"], vec!["--set run.mode=teach", "distill"]),
        ("[distill]\ntemperature = 0.0\n", vec![], vec!["distill.temperature (line 2)", "(0, 100]"]),
        ("", vec!["run.mode=distill", "distill.data=/no/such/folder"], vec!["/no/such/folder"]),
        ("[game]\nname = \"go9\"\n[eval]\nevery = 1\n", vec![], vec!["eval.every", "set eval.every = 0 for Go"]),
        ("[game]\nname = \"go9\"\n[net]\npolicy_head = \"conv\"\n", vec![], vec!["go9 networks use policy_head"]),
        ("[game]\nname = \"go7\"\n", vec![], vec!["go7"]),
    ];
    for (text, sets, expected) in cases {
        let config = dir.join("bad.toml");
        std::fs::write(&config, text).unwrap();
        let output = command(&config, &run, &sets).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{text:?} was accepted");
        for part in expected {
            assert!(stderr.contains(part), "{text:?} {sets:?}: expected {part:?} in:\n{stderr}");
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!run.exists(), "a refused config started work");
    }
    let missing = Command::new(env!("CARGO_BIN_EXE_capa-train")).args(["--config", "/no/such.toml"]).output().unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read /no/such.toml"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One iteration of `configs/tiny.toml` with every architecture option on
/// (self-play, training, a checkpoint; fewer games, playouts and steps),
/// then a resume that turns one off is refused.
#[test]
fn every_architecture_option_runs_and_a_change_is_refused_on_resume() {
    let dir = scratch("arch");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml");
    let run = dir.join("run");
    let every_option = [
        "net.ffn=swiglu",
        "net.norm=rms",
        "net.qk_norm=true",
        "net.qkv_bias=false",
        "net.position_embedding=true",
        "net.value_channels=48",
        "net.value_hidden=160",
        "net.future_head=false",
    ];
    let smaller = ["run.iterations=1", "selfplay.games=2", "selfplay.simulations=8", "game.ply_cap=40"];
    let first: Vec<&str> = smaller.into_iter().chain(["train.steps=2", "train.batch=32"]).chain(every_option).collect();
    train(&config, &run, &first);
    assert_eq!(metric_iterations(&run), [1]);
    let mut changed = every_option.to_vec();
    changed[2] = "net.qk_norm=false";
    changed.push("run.iterations=2");
    let output = command(&config, &run, &changed).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("architecture cannot change"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two iterations of `configs/go9.toml`, smaller: Go self-play games start
/// with the config's komi and ko rule, end by two passes (the winner the
/// area score's), by resignation or at the cap, and the network trains on
/// them.
#[test]
fn go9_self_play_trains() {
    let dir = scratch("go9");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/go9.toml");
    let run = dir.join("run");
    let smaller = [
        "run.iterations=2",
        "selfplay.games=4",
        "selfplay.simulations=8",
        "selfplay.fast_probability=0",
        "train.steps=2",
        "train.batch=32",
        "net.channels=16",
        "net.blocks=1",
        "net.groups=4",
        "game.komi=5.5",
        "game.ko_rule=superko",
    ];
    train(&config, &run, &smaller);
    assert_eq!(metric_iterations(&run), [1, 2]);
    let games = game_files(&run);
    assert_eq!(games.len(), 8);
    for path in games {
        use capa_rules::Game;
        let record = capa_data::GameRecord::<capa_rules::go::Go9>::from_bytes(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(record.start.komi(), 5.5);
        assert_eq!(record.start.ko_rule(), capa_rules::go::KoRule::PositionalSuperko);
        let mut history = capa_rules::History::new(record.start.clone());
        for &m in &record.moves {
            history.play(m);
        }
        let position = history.current();
        let scored =
            position.passes() >= 2 && record.ending == capa_data::Ending::Rules(capa_rules::Termination::Scored);
        let (white, black) = (position.material(capa_rules::Color::White), position.material(capa_rules::Color::Black));
        let winner = match position.score() {
            score if score > 0.0 => Some(capa_rules::Color::Black),
            _ => Some(capa_rules::Color::White),
        };
        let ok = match record.ending {
            capa_data::Ending::Rules(capa_rules::Termination::Scored) => scored && record.winner == winner,
            capa_data::Ending::Resignation => record.winner.is_some(),
            capa_data::Ending::Adjudication => record.moves.len() == 180 && white.abs_diff(black) >= 1,
            other => other == capa_data::Ending::Rules(capa_rules::Termination::PlyCap),
        };
        assert!(ok, "{}: {:?} {:?} at {}", path.display(), record.ending, record.winner, position.fen());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Random legal 9x9 games written as SGF, each with its area score as the
/// result: moves at random until `moves`, then two passes.
fn random_sgf_games(games: u64, moves: usize) -> String {
    use capa_rules::Game;
    let mut text = String::new();
    let mut rng = capa_rules::Rng::new(11);
    for _ in 0..games {
        let mut position = capa_rules::go::Go9::startpos();
        let mut sgf = String::new();
        for ply in 0..moves + 2 {
            let mut legal = capa_rules::MoveList::new();
            position.legal_moves(&mut legal);
            let points: Vec<_> = legal.iter().copied().filter(|m| m.point().is_some()).collect();
            let m = if ply < moves && !points.is_empty() {
                points[(rng.next_u64() % points.len() as u64) as usize]
            } else {
                capa_rules::go::GoMove::PASS
            };
            let color = if position.turn() == capa_rules::Color::Black { 'B' } else { 'W' };
            let vertex = m.point().map_or(String::new(), |p| {
                let letter = |i: usize| char::from(b'a' + i as u8);
                format!("{}{}", letter(p % 9), letter(8 - p / 9))
            });
            sgf.push_str(&format!(";{color}[{vertex}]"));
            position.play(m);
        }
        let score = position.score();
        let result = if score > 0.0 { format!("B+{score}") } else { format!("W+{}", -score) };
        text.push_str(&format!("(;GM[1]FF[4]SZ[9]KM[7.5]RE[{result}]{sgf})\n"));
    }
    text
}

/// A Go network learns from SGF games: `capa sgf convert`'s records are
/// the data of a distillation run (the moves the policy targets, the
/// results the value targets), every example trained on or held out.
#[test]
fn go9_learns_from_sgf_games() {
    let dir = scratch("go9-sgf");
    let sgf = dir.join("games.sgf");
    std::fs::write(&sgf, random_sgf_games(24, 40)).unwrap();
    let records = dir.join("records");
    let options = capa_data::ConvertOptions::default();
    let summary = capa_data::convert_sgf::<9>(&[sgf], &records, &options, &mut |w| panic!("{w}")).unwrap();
    assert_eq!((summary.games, summary.converted), (24, 24));
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/go9.toml");
    let run = dir.join("run");
    let sets = [
        "run.mode=distill",
        &format!("distill.data={}", records.display()),
        "distill.holdout=0.2",
        "run.iterations=2",
        "train.batch=64",
        "net.channels=16",
        "net.blocks=1",
        "net.groups=4",
    ];
    train(&config, &run, &sets);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for line in &lines {
        let (trained, held) =
            (line["train_positions"].as_u64().unwrap(), line["held_out"]["positions"].as_u64().unwrap());
        assert_eq!(trained + held, summary.examples, "{line}");
        assert!(held > 0 && line["held_out"]["policy"].as_f64().unwrap().is_finite(), "{line}");
        assert_eq!(line["train"]["steps"].as_u64().unwrap(), trained.div_ceil(64), "{line}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGTERM (what Ctrl-C does too) stops a run cleanly: exit status 130, no
/// temporary file, and the same command continues.
#[cfg(unix)]
#[test]
fn sigterm_stops_cleanly_and_the_run_continues() {
    let dir = scratch("sigterm");
    let (config, run) = (tiny(&dir), dir.join("run"));
    let child = command(&config, &run, &[]).stderr(std::process::Stdio::piped()).spawn().unwrap();
    wait_until(|| run.join("games").exists() && !game_files(&run).is_empty());
    // A second trainer on the same run is refused, and touches nothing.
    let second = command(&config, &run, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    let holder = format!("is held by another trainer: pid {} on ", child.id());
    assert!(!second.status.success() && stderr.contains(&holder), "{stderr}");
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("run the same command again to continue"), "{stderr}");
    assert_clean(&run);
    train(&config, &run, &[]);
    assert_eq!(metric_iterations(&run), [1, 2]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two worker processes and a trainer that only trains on their games.
#[test]
fn workers_feed_a_trainer_through_the_run_directory() {
    let dir = scratch("workers");
    let (config, run) = (tiny(&dir), dir.join("run"));
    let worker = |name: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_capa-train"));
        command.args(["selfplay", "--worker", name, "--config"]).arg(&config);
        command.arg("--set").arg(format!("run.dir={}", run.display())).args(["--set", "selfplay.games=3"]);
        command.stderr(std::process::Stdio::null()).spawn().unwrap()
    };
    let workers = [worker("alpha"), worker("beta")];
    let output = command(&config, &run, &["selfplay.local=false"]).output().unwrap();
    for mut worker in workers {
        // SIGTERM: a worker stops between games, leaving no temporary file.
        Command::new("kill").args(["-TERM", &worker.id().to_string()]).status().unwrap();
        worker.wait().unwrap();
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(metric_iterations(&run), [1, 2]);
    let files = game_files(&run);
    let by = |name: &str| files.iter().filter(|f| f.file_name().unwrap().to_string_lossy().starts_with(name)).count();
    assert!(by("alpha-") > 0 && by("beta-") > 0 && by("local-") == 0, "{files:?}");
    assert!(
        std::fs::read_dir(run.join("pgn")).unwrap().any(|f| f
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("alpha-"))
    );
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(run.join("metrics.jsonl")).unwrap().lines().last().unwrap())
            .unwrap();
    assert!(line["games"].as_u64().unwrap() >= 6, "{line}");
    let bad = Command::new(env!("CARGO_BIN_EXE_capa-train"))
        .args(["selfplay", "--worker", "local", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("worker name"));

    // `capa-train check`: a whole run, then the same run damaged.
    let check = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_capa-train"));
        command.args(["check", "--config"]).arg(&config).arg("--set").arg(format!("run.dir={}", run.display()));
        let output = command.output().unwrap();
        (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let (whole, report) = check();
    assert!(whole && report.starts_with("committed iterations: 2;") && report.contains("problems: 0"), "{report}");
    let game = files.iter().find(|f| f.file_name().unwrap().to_string_lossy().starts_with("beta-")).unwrap();
    let mut bytes = std::fs::read(game).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(game, bytes).unwrap();
    std::fs::write(run.join("games/.x.capa.tmp-99999999-1"), "half").unwrap();
    let first_ledger = std::fs::read_to_string(run.join("ledger/iter-000001.txt")).unwrap();
    let twice = first_ledger.lines().next().unwrap().to_string();
    std::fs::write(run.join("ledger/iter-000002.txt"), format!("{twice}\n")).unwrap();
    let network = line["network"].as_str().unwrap();
    std::fs::remove_file(run.join(format!("nets/{network}.safetensors"))).unwrap();
    let alpha = files.iter().find(|f| f.file_name().unwrap().to_string_lossy().starts_with("alpha-")).unwrap();
    std::fs::create_dir_all(run.join("games/elsewhere")).unwrap();
    std::fs::copy(alpha, run.join("games/elsewhere").join(alpha.file_name().unwrap())).unwrap();
    let alpha_number: u64 =
        alpha.file_stem().unwrap().to_string_lossy().strip_prefix("alpha-").unwrap().parse().unwrap();
    let (whole, report) = check();
    assert!(!whole, "{report}");
    assert!(
        report.contains("note: games/.x.capa.tmp-99999999-1: a temporary file its writer left when it died")
            && report.contains("notes: 1;"),
        "{report}"
    );
    for problem in [
        &format!("{}: ", game.strip_prefix(&run).unwrap().display()),
        &format!("{twice} trained on twice: in ledger/iter-000001.txt and ledger/iter-000002.txt"),
        "ledger/iter-000002.txt: 1 games, its metrics line says",
        &format!("LATEST names network {network}, which is missing"),
        &format!("worker alpha: games [{alpha_number}] written twice"),
    ] {
        assert!(report.contains(problem), "{problem}: {report}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A worker never plays with a network file that is half there: it says so,
/// waits, and plays once `LATEST` names a whole one.
#[test]
fn a_worker_refuses_a_half_written_network_and_waits() {
    let dir = scratch("half-net");
    let (config, run) = (tiny(&dir), dir.join("run"));
    train(&config, &run, &["run.iterations=1", "selfplay.games=2"]);
    let good = std::fs::read_to_string(run.join("LATEST")).unwrap();
    let bytes = std::fs::read(run.join(format!("nets/{}.safetensors", good.trim()))).unwrap();
    std::fs::write(run.join("nets/0123456789abcdef.safetensors"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(run.join("LATEST"), "0123456789abcdef").unwrap();
    let log = dir.join("worker.log");
    let mut worker = Command::new(env!("CARGO_BIN_EXE_capa-train"))
        .args(["selfplay", "--worker", "w", "--games", "1", "--config"])
        .arg(&config)
        .arg("--set")
        .arg(format!("run.dir={}", run.display()))
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let refused = "nets/0123456789abcdef.safetensors in";
    wait_until(|| std::fs::read_to_string(&log).unwrap_or_default().contains(refused));
    assert!(worker.try_wait().unwrap().is_none(), "the worker waits: {}", std::fs::read_to_string(&log).unwrap());

    // Its name is its own: a second worker of that name is refused, naming it.
    let twin = Command::new(env!("CARGO_BIN_EXE_capa-train"))
        .args(["selfplay", "--worker", "w", "--config"])
        .arg(&config)
        .arg("--set")
        .arg(format!("run.dir={}", run.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&twin.stderr);
    let holder = format!("worker name w is in use in {} by another worker: pid {} on ", run.display(), worker.id());
    assert!(!twin.status.success() && stderr.contains(&holder) && stderr.contains("another --worker name"), "{stderr}");
    // And a game file is written only where there is none.
    let dir_of_run = capa_rundir::RunDir::open(&run).unwrap();
    assert!(dir_of_run.create_new("games/x/w-00000000.capa", b"first").unwrap());
    assert!(!dir_of_run.create_new("games/x/w-00000000.capa", b"second").unwrap());
    assert_eq!(std::fs::read(run.join("games/x/w-00000000.capa")).unwrap(), b"first");
    std::fs::remove_dir_all(run.join("games/x")).unwrap();

    std::fs::write(run.join("LATEST"), &good).unwrap();
    assert!(worker.wait().unwrap().success(), "{}", std::fs::read_to_string(&log).unwrap());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("is not a network file") || text.contains("is damaged or half written"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An S3-compatible server on loopback (moto's), killed on drop.
struct S3Server {
    child: std::process::Child,
    endpoint: String,
}

impl S3Server {
    /// Starts `moto_server` (or `$CAPA_MOTO_SERVER`) with a bucket `capa`.
    /// `None` only when it is missing and `CAPA_SKIP_S3_TESTS=1`.
    fn start() -> Option<S3Server> {
        let program = std::env::var("CAPA_MOTO_SERVER").unwrap_or_else(|_| "moto_server".to_string());
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = match Command::new(&program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(_) if std::env::var("CAPA_SKIP_S3_TESTS").as_deref() == Ok("1") => return None,
            Err(e) => panic!(
                "cannot start {program} ({e}): install it with `pip install 'moto[server]'` (or set \
                 CAPA_MOTO_SERVER, or CAPA_SKIP_S3_TESTS=1 to skip the object-store tests)"
            ),
        };
        let server = S3Server { child, endpoint: format!("http://127.0.0.1:{port}") };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                use std::io::{Read, Write};
                let request = format!(
                    "PUT /capa HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                stream.write_all(request.as_bytes()).unwrap();
                let mut response = String::new();
                let _ = stream.read_to_string(&mut response);
                assert!(response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200"), "{response}");
                return Some(server);
            }
            assert!(Instant::now() < deadline, "{program} did not start listening");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn options(&self) -> Vec<(String, String)> {
        [
            ("aws_endpoint", self.endpoint.as_str()),
            ("aws_allow_http", "true"),
            ("aws_access_key_id", "test"),
            ("aws_secret_access_key", "test"),
            ("aws_region", "us-east-1"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec()
    }

    fn command(&self, args: &[&str], config: &Path, sets: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_capa-train"));
        command.args(args).arg("--config").arg(config).args(["--set", "run.dir=s3://capa/run"]);
        for set in sets {
            command.arg("--set").arg(set);
        }
        for (key, value) in self.options() {
            command.env(key.to_ascii_uppercase(), value);
        }
        command
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A worker and a trainer sharing a bucket, then a resumed run reading it all back.
#[test]
fn a_trainer_and_a_worker_share_an_s3_bucket() {
    let Some(server) = S3Server::start() else { return };
    let dir = scratch("s3");
    let config = tiny(&dir);
    let mut worker = server
        .command(&["selfplay", "--worker", "remote"], &config, &["selfplay.games=3"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let output = server.command(&[], &config, &["selfplay.local=false"]).output().unwrap();
    worker.kill().unwrap();
    worker.wait().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("iteration 2:"), "{stderr}");

    let output = server.command(&[], &config, &["run.iterations=3"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("resuming s3://capa/run after iteration 2") && stderr.contains("iteration 3:"), "{stderr}");

    let run = capa_rundir::RunDir::open_with(Path::new("s3://capa/run"), server.options()).unwrap();
    let games = run.list("games").unwrap();
    assert!(games.iter().any(|g| g.key.contains("/remote-")) && games.iter().any(|g| g.key.contains("/local-i000003")));
    let metrics = String::from_utf8(run.read("metrics.jsonl").unwrap().unwrap()).unwrap();
    assert_eq!(metrics.lines().count(), 3);
    let record = run.read(&games[0].key).unwrap().unwrap();
    GameRecord::<Capablanca>::from_bytes(&record).unwrap();
    let check = server.command(&["check"], &config, &[]).output().unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success() && report.contains("committed iterations: 3;"), "{report}");

    // LATEST moves only from the version a writer last saw.
    let other = capa_rundir::RunDir::open_with(Path::new("s3://capa/run"), server.options()).unwrap();
    let current = String::from_utf8(other.read("LATEST").unwrap().unwrap()).unwrap();
    run.read("LATEST").unwrap();
    run.publish_latest("0000000000000000").unwrap();
    let error = other.publish_latest(&current).unwrap_err().to_string();
    assert!(error.contains("changed by another process"), "{error}");
    run.publish_latest(&current).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One trainer per bucket: a second is refused and named the holder; the
/// lock of a killed trainer of this machine is taken over at once, a stale
/// one of another machine too, a live one of another machine only through
/// `capa-train unlock`; a trainer whose lease was taken commits nothing more.
#[test]
fn a_bucket_has_one_trainer_and_a_dead_ones_lock_is_taken_over() {
    let Some(server) = S3Server::start() else { return };
    let dir = scratch("s3-lock");
    let config = tiny(&dir);
    let run = capa_rundir::RunDir::open_with(Path::new("s3://capa/run"), server.options()).unwrap();
    let mut first =
        server.command(&[], &config, &["run.iterations=100"]).stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_until(|| run.read("LOCK").unwrap().is_some());
    let second = server.command(&[], &config, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    let holder = format!("is held by another trainer: pid {} on ", first.id());
    assert!(!second.status.success() && stderr.contains(&holder) && stderr.contains("capa-train unlock"), "{stderr}");
    let unlock = server.command(&["unlock"], &config, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&unlock.stderr);
    assert!(!unlock.status.success() && stderr.contains("running on this machine"), "{stderr}");

    // Killed: the next trainer here takes the lock over at once, and releases it at its end.
    first.kill().unwrap();
    first.wait().unwrap();
    let resumed = server.command(&[], &config, &["run.iterations=1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success() && stderr.contains("its process has ended"), "{stderr}");
    assert!(run.read("LOCK").unwrap().is_none(), "a finished trainer leaves its lock");

    // Another machine's lease: refused while fresh, taken over once stale.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let foreign = |renewed: u64| {
        format!(r#"{{"host":"elsewhere","boot":"b","pid":1,"started":{renewed},"renewed":{renewed},"token":"t"}}"#)
    };
    run.write("LOCK", foreign(now).as_bytes()).unwrap();
    let error = run.lock().err().expect("a fresh lease of another machine is refused").to_string();
    assert!(error.contains("pid 1 on elsewhere") && error.contains("stale in"), "{error}");
    run.write("LOCK", foreign(now - 1000).as_bytes()).unwrap();
    let lock = run.lock().unwrap();
    run.confirm_lock().unwrap();
    // Taken from under this process: the commit check says so.
    run.write("LOCK", foreign(now).as_bytes()).unwrap();
    let error = run.confirm_lock().unwrap_err().to_string();
    assert!(error.contains("was taken by another trainer (pid 1 on elsewhere"), "{error}");
    drop(lock);
    assert!(run.read("LOCK").unwrap().is_some(), "another's lease is not released");

    // A worker's name is leased likewise; a game file is created only where there is none.
    let name = run.lock_worker_name("remote").unwrap();
    let twin = server.command(&["selfplay", "--worker", "remote"], &config, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&twin.stderr);
    let holder =
        format!("worker name remote is in use in s3://capa/run by another worker: pid {} on ", std::process::id());
    assert!(!twin.status.success() && stderr.contains(&holder) && stderr.contains("stale in"), "{stderr}");
    drop(name);
    assert!(run.read("workers/remote.lock").unwrap().is_none(), "a worker's lease is released at its end");
    assert!(run.create_new("games/x/remote-00000000.capa", b"first").unwrap());
    assert!(
        run.create_new("games/x/remote-00000000.capa", b"first").unwrap(),
        "the same bytes: a retry that had landed"
    );
    assert!(!run.create_new("games/x/remote-00000000.capa", b"second").unwrap());
    assert_eq!(run.read("games/x/remote-00000000.capa").unwrap().unwrap(), b"first");
    let unlock = server.command(&["unlock"], &config, &[]).output().unwrap();
    let stdout = String::from_utf8_lossy(&unlock.stdout);
    assert!(unlock.status.success() && stdout.contains("removed the lock of pid 1 on elsewhere"), "{stdout}");
    assert!(run.read("LOCK").unwrap().is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_curriculum_plays_fairy_stockfish_and_moves_its_level() {
    let Some(engine) = capa_uci::engine_for_test("fairy-stockfish") else { return };
    let dir = scratch("curriculum");
    let (config, run) = (tiny(&dir), dir.join("run"));
    let engine_set = format!("curriculum.engine={}", engine.display());
    let sets = [engine_set.as_str(), "curriculum.fraction=1", "curriculum.nodes=1", "run.iterations=1"];
    let output = train(&config, &run, &sets);
    assert!(String::from_utf8_lossy(&output.stderr).contains("vs engine at UCI_Elo 1350"));
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(run.join("metrics.jsonl")).unwrap().lines().last().unwrap())
            .unwrap();
    let curriculum = &line["curriculum"];
    let games = ["wins", "draws", "losses"].map(|k| curriculum[k].as_u64().unwrap()).iter().sum::<u64>();
    assert_eq!(games, 6, "every game against the engine: {curriculum}");
    // Only the network's moves are training positions.
    assert!(line["new_positions"].as_u64().unwrap() < line["plies"].as_u64().unwrap(), "{line}");
    let next = curriculum["next_elo"].as_i64().unwrap();
    let latest = std::fs::read_to_string(run.join("checkpoints/latest.json")).unwrap();
    assert!(latest.contains(&format!("\"curriculum_elo\": {next}")), "{latest}");
    // The resumed run starts where the level was left.
    let sets = [engine_set.as_str(), "curriculum.fraction=1", "curriculum.nodes=1", "run.iterations=2"];
    let output = train(&config, &run, &sets);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains(&format!("vs engine at UCI_Elo {next}")), "{log}");
    // Game records replay, engine moves included.
    for file in game_files(&run) {
        GameRecord::<Capablanca>::read(&file).unwrap();
    }
    let bad = train_expecting_failure(&config, &dir.join("bad-run"), &["curriculum.engine=/no/such/engine"]);
    assert!(bad.contains("/no/such/engine"), "{bad}");
    // On a ladder's rungs, from the one nearest curriculum.elo: below the engine's weakest UCI_Elo.
    let ladder = dir.join("ladder.toml");
    std::fs::write(&ladder, LADDER.replace("ENGINE", &engine.display().to_string())).unwrap();
    let ladder_set = format!("curriculum.ladder={}", ladder.display());
    let sets = [ladder_set.as_str(), "curriculum.fraction=1", "curriculum.elo=600", "run.iterations=1"];
    let output = train(&config, &dir.join("ladder-run"), &sets);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("vs engine at ladder rung bottom (500)"), "{log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs the trainer expecting it to fail; its stderr.
/// `capa-train check` on a run, with a state file if given: whether it
/// found nothing wrong, and what it printed.
fn check_run(config: &Path, run: &Path, state: Option<&Path>) -> (bool, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_capa-train"));
    command.args(["check", "--config"]).arg(config).arg("--set").arg(format!("run.dir={}", run.display()));
    if let Some(state) = state {
        command.arg("--state").arg(state);
    }
    let output = command.output().unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned())
}

fn train_expecting_failure(config: &Path, run_dir: &Path, sets: &[&str]) -> String {
    let output = command(config, run_dir, sets).output().unwrap();
    assert!(!output.status.success(), "the run succeeded");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A calibrated ladder of three rungs of made-up Elo, each Fairy-Stockfish
/// (`ENGINE`) at one node.
const LADDER: &str = r#"
game = "capablanca"
engine = "ENGINE"
anchor = "middle"
anchor_elo = 1000.0

[calibration]
games = 2
reach = 1
random_plies = 2
ply_cap = 0
seed = 1

[[rung]]
name = "bottom"
options = ["UCI_LimitStrength=true", "UCI_Elo=1350", "MultiPV=100"]
nodes = 1
elo = 500.0

[[rung]]
name = "middle"
nodes = 1
elo = 1000.0

[[rung]]
name = "top"
nodes = 100
elo = 1500.0
"#;

/// Teacher games as `capa distill gen` writes them, with made-up scores:
/// the first three legal moves, the first played, to a ply cap of 30.
fn teacher_games(dir: &Path, games: usize) {
    use capa_data::{Candidate, Ending, TeacherGame};
    use capa_rules::{Game, History, MoveList};
    use capa_uci::UciScore;
    std::fs::create_dir_all(dir).unwrap();
    let mut legal = MoveList::new();
    for index in 0..games {
        let mut history = History::new(Capablanca::startpos()).with_ply_cap(30);
        let mut candidates = Vec::new();
        let outcome = loop {
            if let Some(outcome) = history.outcome() {
                break outcome;
            }
            history.current().legal_moves(&mut legal);
            let listed: Vec<_> = legal
                .iter()
                .skip(index % 5)
                .take(3)
                .zip([30, 0, -50])
                .map(|(&mv, cp)| Candidate { mv, score: UciScore::Cp(cp) })
                .collect();
            history.play(listed[0].mv);
            candidates.push(listed);
        };
        let game = TeacherGame {
            start: *history.start(),
            teacher: "made up".to_string(),
            moves: history.moves().to_vec(),
            candidates,
            winner: outcome.winner(history.current().turn()),
            ending: Ending::Rules(outcome.reason),
        };
        game.write(&dir.join(format!("{index:06}.teacher"))).unwrap();
    }
}

#[test]
fn distillation_trains_on_teacher_games_and_resumes() {
    let dir = scratch("distill");
    let (data, run) = (dir.join("data"), dir.join("run"));
    teacher_games(&data, 20);
    let config = tiny(&dir);
    let data_set = format!("distill.data={}", data.display());
    let sets = ["run.mode=distill", &data_set, "distill.holdout=0.2"];
    let output = train(&config, &run, &sets);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("epoch 2:") && stderr.contains("top-1 agreement"), "{stderr}");
    assert_eq!(metric_iterations(&run), [1, 2]);
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
    let held_out = &last["held_out"];
    assert!(held_out["positions"].as_u64().unwrap() > 0, "{last}");
    let agreement = held_out["top1_agreement"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&agreement), "{last}");
    // An epoch covers the training split once: its positions / batch steps.
    let positions = last["train_positions"].as_u64().unwrap();
    assert_eq!(last["train"]["steps"].as_u64().unwrap(), positions.div_ceil(16));
    assert!(run.join("checkpoints/latest.json").exists());

    train(&config, &run, &[&sets[..], &["run.iterations=3"]].concat());
    assert_eq!(metric_iterations(&run), [1, 2, 3]);
    assert_clean(&run);

    // Teacher first, then self-play, in one run: the first epoch distils,
    // the second iteration plays and trains on its own games. Stopped after
    // the epoch (as the CPU recipe's stages are), the run plays nothing yet.
    let phased = dir.join("phased");
    let phases = [&data_set, "distill.holdout=0.2", "distill.epochs=1", "selfplay.games=2"];
    let output = train(&config, &phased, &[&phases[..], &["run.iterations=1"]].concat());
    assert_eq!(metric_iterations(&phased), [1]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("replay buffer") && game_files(&phased).is_empty(), "{stderr}");
    let output = train(&config, &phased, &[&phases[..], &["run.iterations=2"]].concat());
    assert!(String::from_utf8_lossy(&output.stderr).contains("replay buffer"));
    assert_eq!(metric_iterations(&phased), [1, 2]);
    let metrics = std::fs::read_to_string(phased.join("metrics.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = metrics.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines[0].get("held_out").is_some() && lines[1].get("held_out").is_none(), "{metrics}");
    assert!(game_files(&phased).len() >= 2, "the self-play iteration wrote no games");
    // The teacher's training games seeded the replay buffer.
    let (teacher, own) = (lines[0]["train_positions"].as_u64().unwrap(), lines[1]["new_positions"].as_u64().unwrap());
    assert_eq!(lines[1]["buffer_positions"].as_u64(), Some(teacher + own), "{metrics}");

    // A network as the teacher, on a run's own games: a run's network
    // distilled into a smaller architecture without a transformer.
    let played = dir.join("played");
    train(&config, &played, &["run.iterations=1", "selfplay.games=8", "train.steps=1"]);
    let teacher = played.join("nets").join(format!("{}.safetensors", read_latest(&played)));
    let student = dir.join("student");
    let teacher_set = format!("distill.teacher_net={}", teacher.display());
    let played_set = format!("distill.data={}", played.display());
    let from_net = ["run.mode=distill", &played_set, &teacher_set, "distill.holdout=0.3"];
    let smaller = ["net.channels=8", "net.transformer_blocks=0", "net.groups=2"];
    let output = train(&config, &student, &[&from_net[..], &smaller[..]].concat());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("teacher network") && stderr.contains("epoch 2:"), "{stderr}");
    let metrics = std::fs::read_to_string(student.join("metrics.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = metrics.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{metrics}");
    for line in &lines {
        assert!(line["held_out"]["positions"].as_u64().unwrap() > 0, "{line}");
        assert!((0.0..=1.0).contains(&line["held_out"]["top1_agreement"].as_f64().unwrap()), "{line}");
    }
    let net = student.join("nets").join(format!("{}.safetensors", read_latest(&student)));
    let architecture = capa_net::read_net_config(&net).unwrap();
    assert_eq!((architecture.channels, architecture.transformer_blocks), (8, 0));
    let chess_teacher = dir.join("chess.safetensors");
    let chess =
        capa_net::NetConfig { channels: 8, groups: 2, ..capa_net::NetConfig::small(capa_rules::GameKind::Chess) };
    capa_net::save_net(
        &capa_net::Net::<capa_net::burn::backend::Flex>::new(&chess, &Default::default()),
        &chess_teacher,
    )
    .unwrap();
    let other_game = format!("distill.teacher_net={}", chess_teacher.display());
    let stderr = train_expecting_failure(
        &config,
        &dir.join("refused"),
        &["run.mode=distill", &played_set, &other_game, "distill.holdout=0.3"],
    );
    assert!(stderr.contains("distill.teacher_net") && stderr.contains("plays chess"), "{stderr}");

    // A damaged file stops the run with its name.
    std::fs::write(data.join("000003.teacher"), b"not a game").unwrap();
    let stderr = train_expecting_failure(&config, &run, &[&sets[..], &["run.iterations=4"]].concat());
    assert!(stderr.contains("000003.teacher") && stderr.contains("not a capa teacher game"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_distillation_run_measures_its_elo_against_fairy_stockfish() {
    let Some(engine) = capa_uci::engine_for_test("fairy-stockfish") else { return };
    let dir = scratch("distill-eval");
    let (data, run) = (dir.join("data"), dir.join("run"));
    teacher_games(&data, 6);
    let config = tiny(&dir);
    let data_set = format!("distill.data={}", data.display());
    let engine_set = format!("eval.engine={}", engine.display());
    let sets = [
        "run.mode=distill",
        &data_set,
        "run.iterations=1",
        "eval.every=1",
        &engine_set,
        "eval.games=2",
        "eval.simulations=4",
        "eval.nodes=1",
        "eval.max_probes=2",
    ];
    let last_eval = |run: &Path| -> serde_json::Value {
        let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
        serde_json::from_str::<serde_json::Value>(metrics.lines().last().unwrap()).unwrap()["eval"].clone()
    };
    let games =
        |probe: &serde_json::Value| ["wins", "draws", "losses"].map(|k| probe[k].as_u64().unwrap()).iter().sum::<u64>();

    // Bisection over the engine's whole range, 1350 to 2850: the first probe
    // is its middle, the second (if any) the middle of the half it points to.
    let output = train(&config, &run, &sets);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("at UCI_Elo 2100:") && stderr.contains("; Elo "), "{stderr}");
    let eval = last_eval(&run);
    let probes = eval["probes"].as_array().unwrap();
    assert!((1..=2).contains(&probes.len()), "{eval}");
    assert_eq!(probes[0]["uci_elo"], 2100);
    if let Some(second) = probes.get(1) {
        assert!([1725, 2475].contains(&second["uci_elo"].as_i64().unwrap()), "{eval}");
    }
    assert!(probes.iter().all(|p| games(p) == 2), "{eval}");
    assert!(["value", "at_most", "at_least"].contains(&eval["elo_kind"].as_str().unwrap()), "{eval}");
    let (low, elo, high) = (eval["elo_low"].as_f64(), eval["elo"].as_f64(), eval["elo_high"].as_f64());
    assert!(low <= elo && elo <= high, "{eval}");

    // The quick check: one match at the anchor.
    let anchor = [&sets[..], &["run.iterations=2", "eval.method=anchor", "eval.anchor=1400"]].concat();
    train(&config, &run, &anchor);
    let eval = last_eval(&run);
    assert_eq!(eval["probes"].as_array().unwrap().len(), 1, "{eval}");
    assert_eq!(eval["probes"][0]["uci_elo"], 1400);
    assert_clean(&run);

    // On a ladder: probes against its rungs, named, with their Elo.
    let ladder = dir.join("ladder.toml");
    std::fs::write(&ladder, LADDER.replace("ENGINE", &engine.display().to_string())).unwrap();
    let ladder_set = format!("eval.ladder={}", ladder.display());
    let on_ladder =
        [&sets[..4], &["run.iterations=3", "eval.games=2", "eval.simulations=4", "eval.max_probes=2"]].concat();
    train(&config, &run, &[&on_ladder[..], &[&ladder_set]].concat());
    let eval = last_eval(&run);
    let probes = eval["probes"].as_array().unwrap();
    assert!((1..=2).contains(&probes.len()), "{eval}");
    assert_eq!((probes[0]["rung"].as_str(), probes[0]["rung_elo"].as_f64()), (Some("middle"), Some(1000.0)), "{eval}");
    assert_eq!(eval["opponent"].as_str(), Some(ladder.to_str().unwrap()));
    let uncalibrated = dir.join("uncalibrated.toml");
    std::fs::write(&uncalibrated, LADDER.replace("ENGINE", "x").replace("nodes = 1\nelo = 1000.0\n", "nodes = 1\n"))
        .unwrap();
    let stderr = train_expecting_failure(
        &config,
        &dir.join("refused"),
        &[&on_ladder[..], &[&format!("eval.ladder={}", uncalibrated.display())]].concat(),
    );
    assert!(stderr.contains("rung `middle` is not calibrated"), "{stderr}");

    // Levels the engine cannot play are refused before any work.
    let refused = dir.join("refused");
    let cases: [(&[&str], &[&str]); 3] = [
        (&["eval.method=anchor", "eval.anchor=100"], &["eval.anchor", "outside", "1350 to 2850"]),
        (&["eval.bracket=[1400, 1450]"], &["eval.bracket", "no wider than eval.tolerance"]),
        (&["eval.engine=/no/such/engine"], &["[eval] engine `/no/such/engine`"]),
    ];
    for (extra, expected) in cases {
        let stderr = train_expecting_failure(&config, &refused, &[&sets[..], extra].concat());
        for part in expected {
            assert!(stderr.contains(part), "{extra:?}: expected {part:?} in:\n{stderr}");
        }
        assert!(!refused.exists(), "{extra:?} started work");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
