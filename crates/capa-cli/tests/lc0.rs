//! `capa lc0` as a user runs it: convert, verify, finish-games, rescore, dedup, pack.

use std::path::{Path, PathBuf};

use super::{capa, stderr, stdout};

fn sample(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../capa-lc0/tests/data").join(name).display().to_string()
}

fn fresh(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-cli-lc0-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn convert_then_verify_a_sample_with_bad_games_among_good_ones() {
    let dir = fresh("convert");
    let bad = dir.join("mixed.pgn");
    let good = std::fs::read_to_string(sample("sf_selfplay_played_out.pgn")).unwrap();
    let broken = "[Event \"bad\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qxf7 1-0\n\n[Variant \"Chess960\"]\n[Result \"1-0\"]\n\n1. e4 1-0\n\n";
    std::fs::write(&bad, format!("{broken}{good}")).unwrap();
    let out_dir = dir.join("out");
    let out = capa(&[
        "lc0",
        "convert",
        bad.to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
        "--name",
        "fishtest",
        "--files-per-dir",
        "10",
        "--threads",
        "2",
        "--pgn-eval-mode",
        "--visit-budget",
        "850",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("mixed.pgn: game 1 (line 1): skipped: line 4: move 2.Qxf7: not legal"), "{err}");
    assert!(err.contains("game 2 (line 6): skipped: variant \"Chess960\""), "{err}");
    let summary = stdout(&out);
    assert!(summary.contains("26 games read, 24 written") && summary.contains("2 skipped"), "{summary}");
    assert!(out_dir.join("fishtest-2/game_000023.gz").is_file(), "24 games in folders of 10");
    let verified = capa(&["lc0", "verify", out_dir.to_str().unwrap()]);
    assert!(verified.status.success(), "{}", stderr(&verified));
    let report = stdout(&verified);
    assert!(report.contains("24 files, ") && report.trim_end().ends_with(" 0 problems in 0 files"), "{report}");
    let first = report.lines().nth(1).unwrap();
    assert!(first.contains("   0 w ") && first.contains("played b2b3"), "the first game opens 1. b3: {first}");
    let second = report.lines().nth(2).unwrap();
    assert!(second.contains("played g7g6") && second.contains("castling KQkq"), "black's g6, mirrored back: {second}");
    // Converting into the same folder again is refused, naming it.
    let again = capa(&[
        "lc0",
        "convert",
        bad.to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
        "--name",
        "fishtest",
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("fishtest-0 already exists"), "{}", stderr(&again));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn verify_flags_a_damaged_file_and_fails() {
    let dir = fresh("verify");
    let out = capa(&[
        "lc0",
        "convert",
        &sample("sf_selfplay_played_out.pgn"),
        "--output-dir",
        dir.to_str().unwrap(),
        "--max-games",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = dir.join("supervised-0/game_000001.gz");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let verified = capa(&["lc0", "verify", "--quiet", dir.to_str().unwrap()]);
    assert_eq!(verified.status.code(), Some(2));
    let report = stdout(&verified);
    assert!(report.contains("! ") && report.contains("game_000001.gz"), "{report}");
    assert!(report.contains("2 files,"), "{report}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn convert_refuses_bad_arguments_before_writing() {
    let dir = fresh("args");
    let pgn = sample("sf_selfplay_played_out.pgn");
    let out_dir = dir.join("out");
    for (args, message) in [
        (vec!["--wdl-scale", "0"], "--wdl-scale must be a positive number"),
        (vec!["--wdl-spread", "nan"], "--wdl-spread must be a positive number"),
        (vec!["--name", "a/b"], "--name must be a plain folder prefix"),
    ] {
        let mut all = vec!["lc0", "convert", &pgn, "--output-dir", out_dir.to_str().unwrap()];
        all.extend(args);
        let out = capa(&all);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(message), "{}", stderr(&out));
    }
    let missing = capa(&["lc0", "convert", "/nonexistent.pgn", "--output-dir", out_dir.to_str().unwrap()]);
    assert!(stderr(&missing).contains("/nonexistent.pgn is not a file"), "{}", stderr(&missing));
    assert!(!out_dir.exists(), "nothing written");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn fit_wdl_and_draw_rate_read_the_comment_evals_of_real_games() {
    let fishtest = sample("sf_selfplay_a.pgn");
    let fit = capa(&["lc0", "fit-wdl", &fishtest]);
    assert!(fit.status.success(), "{}", stderr(&fit));
    let report = stdout(&fit);
    let last = report.lines().last().unwrap();
    let field = |name: &str| -> f32 {
        let words: Vec<&str> = last.split_whitespace().collect();
        let at = words.iter().position(|w| *w == name).unwrap();
        words[at + 1].trim_end_matches(',').parse().unwrap()
    };
    assert!(last.starts_with("scale "), "{report}");
    let (scale, spread, rmse) = (field("scale"), field("spread"), field("rmse"));
    assert!((0.5..=3.0).contains(&scale) && (0.05..=1.0).contains(&spread) && rmse.is_finite(), "{last}");
    assert!(report.contains("Lc0 cp") && report.contains("+0.00..+0.25"), "{report}");
    let draws = capa(&["lc0", "draw-rate", &fishtest, "--limit", "3000"]);
    assert!(draws.status.success(), "{}", stderr(&draws));
    let last = stdout(&draws).lines().last().unwrap().to_string();
    assert!(last.starts_with("draw rate ") && last.contains("spread 1/ln((1+R)/(1-R)) = "), "{last}");
    // Human games without evals: an error that says what the comments need.
    let none = capa(&["lc0", "fit-wdl", &sample("sf_selfplay_played_out.pgn"), "--limit", "5"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr(&none).contains("no band has 20"), "{}", stderr(&none));
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn finish_convert_rescore_dedup_and_pack_as_a_user_chains_them() {
    let dir = fresh("chain");
    let finished = dir.join("finished");
    let finish = |extra: &[&str]| {
        let pgn = sample("sf_selfplay_a.pgn");
        let mut args = vec!["lc0", "finish-games", &pgn, "--engine", "stockfish", "--depth", "4"];
        args.extend(["--limit", "4", "--workers", "1", "--output-dir", path(&finished)]);
        args.extend(extra);
        capa(&args)
    };
    let out = finish(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("4 games in 1 files: "), "{}", stdout(&out));
    let pgn = finished.join("sf_selfplay_a-finished.pgn");
    assert!(pgn.is_file());
    let again = finish(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("sf_selfplay_a-finished.pgn exists"), "{}", stderr(&again));
    let resumed = finish(&["--resume"]);
    assert!(resumed.status.success() && stderr(&resumed).contains("skipping"), "{}", stderr(&resumed));

    let chunks = dir.join("chunks");
    let convert = capa(&["lc0", "convert", path(&pgn), "--pgn-eval-mode", "--output-dir", path(&chunks)]);
    assert!(convert.status.success(), "{}", stderr(&convert));
    assert!(stdout(&convert).contains("4 games read, 4 written"), "{}", stdout(&convert));

    let tables = Path::new(env!("CARGO_MANIFEST_DIR")).join("../capa-lc0/tests/data/syzygy");
    let rescore = capa(&["lc0", "rescore", path(&chunks), "--syzygy", path(&tables)]);
    assert!(rescore.status.success(), "{}", stderr(&rescore));
    assert!(stdout(&rescore).starts_with("4 files rescored, 0 skipped"), "{}", stdout(&rescore));
    assert!(chunks.join("supervised-0/game_000000_rescored.gz").is_file());
    let no_tables = capa(&["lc0", "rescore", path(&chunks), "--syzygy", path(&dir)]);
    assert!(stderr(&no_tables).contains("no Syzygy table"), "{}", stderr(&no_tables));

    let deduped = dir.join("deduped");
    let dedup = capa(&["lc0", "dedup", path(&chunks), "--output-dir", path(&deduped), "--chunks-per-file", "100"]);
    assert!(dedup.status.success(), "{}", stderr(&dedup));
    let verified = capa(&["lc0", "verify", "--records-only", "--quiet", path(&deduped)]);
    assert!(verified.status.success(), "{}", stdout(&verified));

    let archives = dir.join("archives");
    let pack = capa(&["lc0", "pack", path(&chunks), "--output-dir", path(&archives)]);
    assert!(pack.status.success(), "{}", stderr(&pack));
    let listing = std::process::Command::new("tar").arg("-tf").arg(archives.join("supervised-0.tar")).output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    // After a rescore without --replace, the twins stand for their originals.
    let members: Vec<&str> = listing.lines().collect();
    assert_eq!(members.len(), 4, "{listing}");
    assert!(members.iter().all(|m| m.ends_with("_rescored.gz")), "{listing}");
    let repack = capa(&["lc0", "pack", path(&chunks), "--output-dir", path(&archives)]);
    assert!(stderr(&repack).contains("supervised-0.tar already exists"), "{}", stderr(&repack));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn engine_flags_are_checked_before_any_work() {
    let dir = fresh("engine-flags");
    let pgn = sample("sf_selfplay_played_out.pgn");
    let out_dir = dir.join("out");
    for (args, message) in [
        (vec!["--stockfish", "stockfish", "--pgn-eval-mode"], "cannot be used with"),
        (vec!["--sf-depth", "5"], "--stockfish"),
        (vec!["--stockfish", "/nonexistent/stockfish"], "cannot start engine `/nonexistent/stockfish`"),
    ] {
        let mut all = vec!["lc0", "convert", &pgn, "--output-dir", path(&out_dir)];
        all.extend(args);
        let out = capa(&all);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(message), "{}", stderr(&out));
    }
    let finish = capa(&["lc0", "finish-games", &pgn, &pgn, "--engine", "stockfish", "--output", path(&out_dir)]);
    assert!(stderr(&finish).contains("--output names one file"), "{}", stderr(&finish));
    let twice = capa(&["lc0", "finish-games", &pgn, &pgn, "--engine", "stockfish", "--output-dir", path(&out_dir)]);
    assert!(stderr(&twice).contains("would both be written to"), "{}", stderr(&twice));
    assert!(!out_dir.exists(), "nothing written");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn pgn_to_v6_to_a_supervised_network_that_answers_uci() {
    let dir = fresh("supervised");
    let v6 = dir.join("v6");
    let out = capa(&[
        "lc0",
        "convert",
        &sample("sf_selfplay_played_out.pgn"),
        "--output-dir",
        v6.to_str().unwrap(),
        "--pgn-eval-mode",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The same games packed as Lc0 ships runs: the trainer reads both forms.
    let tars = dir.join("tars");
    let out = capa(&["lc0", "pack", v6.to_str().unwrap(), "--output-dir", tars.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run_dir = dir.join("run");
    let config = |data: &Path, iterations: u64| {
        let text = format!(
            "[run]\ndir = {:?}\nmode = \"supervised\"\niterations = {iterations}\n[game]\nname = \"chess\"\n\
             [net]\nchannels = 16\nblocks = 1\ntransformer_blocks = 1\nheads = 2\ngroups = 2\n\
             [supervised]\ndata = [{:?}]\nholdout = 0.2\nshuffle_buffer = 32\nreaders = 1\nheld_out_positions = 64\n\
             [train]\nbatch = 16\nsteps = 4\n",
            run_dir.display().to_string(),
            data.display().to_string()
        );
        capa_train::RunConfig::parse(&text, &[]).unwrap()
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    assert_eq!(capa_train::run(&config(&tars, 1), &stop).unwrap(), capa_train::Finish::Completed);
    // Resumed from the commit: the second iteration goes on in the same epoch.
    assert_eq!(capa_train::run(&config(&tars, 2), &stop).unwrap(), capa_train::Finish::Completed);
    let metrics = std::fs::read_to_string(run_dir.join("metrics.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = metrics.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{metrics}");
    let epochs = |i: usize| lines[i]["epochs"].as_f64().unwrap();
    assert!(epochs(0) > 0.0 && epochs(1) > epochs(0) && epochs(1) < 1.0, "{metrics}");
    assert_eq!(lines[1]["train"]["steps"], 4, "{metrics}");
    assert_eq!(lines[1]["held_out"]["positions"], 64, "{metrics}");
    let latest = std::fs::read_to_string(run_dir.join("checkpoints/latest.json")).unwrap();
    assert!(latest.contains("\"data_position\""), "{latest}");

    // The network plays chess over UCI.
    let hash = std::fs::read_to_string(run_dir.join("LATEST")).unwrap();
    let net = run_dir.join("nets").join(format!("{}.safetensors", hash.trim()));
    let plays_chess = |net: &Path| {
        let command = format!("{} uci --net {}", env!("CARGO_BIN_EXE_capa"), net.display());
        let mut engine = capa_uci::UciEngine::start(&command).unwrap();
        engine.new_game().unwrap();
        let answer = engine.go("startpos moves e2e4", capa_uci::Go::Nodes(16)).unwrap();
        let best = answer.best.expect("a move");
        let mut game = capa_rules::History::new(<capa_rules::chess::Chess as capa_rules::Game>::startpos());
        game.play_moves(["e2e4", best.as_str()]).unwrap_or_else(|e| panic!("{best} is not legal after 1. e4: {e}"));
    };
    plays_chess(&net);

    // `capa net info` on the network, the checkpoint and a file that is neither.
    let info = capa(&["net", "info", net.to_str().unwrap()]);
    assert!(info.status.success(), "{}", stderr(&info));
    let text = stdout(&info);
    assert!(text.contains("kind        network file") && text.contains("game        chess"), "{text}");
    assert!(text.contains("16 channels; 1 residual blocks") && text.contains("dense policy head"), "{text}");
    let checkpoint = run_dir.join("checkpoints/iter-000002.safetensors");
    let info = capa(&["net", "info", checkpoint.to_str().unwrap()]);
    let text = stdout(&info);
    assert!(text.contains("training checkpoint after 8 steps, with EMA weights"), "{text}{}", stderr(&info));
    let parameters = |text: &str| text.lines().find(|l| l.starts_with("parameters")).map(str::to_string);
    assert_eq!(parameters(&text), parameters(&stdout(&capa(&["net", "info", net.to_str().unwrap()]))));
    let stranger = v6.join("supervised-0/game_000000.gz");
    let refused = capa(&["net", "info", stranger.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("game_000000.gz"), "{}", stderr(&refused));

    // `capa net slim`: the checkpoint's EMA weights in f16, which play.
    let slim = dir.join("slim.safetensors");
    let out = capa(&["net", "slim", checkpoint.to_str().unwrap(), "--out", path(&slim), "--precision", "f16"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("slim network file, from a checkpoint after 8 steps"), "{text}");
    assert!(text.contains("precision   f16"), "{text}");
    assert_eq!(parameters(&text), parameters(&stdout(&capa(&["net", "info", net.to_str().unwrap()]))));
    plays_chess(&slim);
    let refused = capa(&["net", "slim", stranger.to_str().unwrap(), "--out", path(&dir.join("never"))]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("not a safetensors file"), "{}", stderr(&refused));
    assert!(!dir.join("never").exists());

    // A folder with nothing readable is refused before training.
    let junk = dir.join("junk");
    std::fs::create_dir_all(&junk).unwrap();
    std::fs::write(junk.join("game_000000.gz"), b"not gzip").unwrap();
    std::fs::write(junk.join("game_000001.gz"), b"neither").unwrap();
    let mut refused = config(&junk, 1);
    refused.run.dir = dir.join("junk-run");
    refused.supervised.holdout = 0.0;
    let error = format!("{:#}", capa_train::run(&refused, &stop).unwrap_err());
    assert!(error.contains("nothing readable in 2 training chunks"), "{error}");
    std::fs::remove_dir_all(dir).unwrap();
}
