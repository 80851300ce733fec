//! `capa distill gen` with the real engines: the files it writes, their
//! targets, resume after a kill, the errors a user can run into, and a
//! distillation epoch of the trainer on what it wrote.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use capa_data::{PolicyTarget, TeacherGame, policy_target};
use capa_rules::Game;
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_uci::engine_for_test;

use crate::{capa, scratch, stderr, stdout};

/// The teacher files in `dir`, sorted; none while it does not exist.
fn teacher_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "teacher")).collect();
    files.sort();
    files
}

/// Checks every game in `dir`: candidates legal (the reader checks),
/// at most `multipv`, the played move the engine's best after the opening
/// (all but `explored` of them), and soft targets that sum to 1 in the order
/// of the scores. The positions.
fn check_games<G: Game>(dir: &Path, multipv: usize, opening_plies: usize) -> usize {
    check_explored_games::<G>(dir, multipv, opening_plies, 0)
}

fn check_explored_games<G: Game>(dir: &Path, multipv: usize, opening_plies: usize, explored: usize) -> usize {
    let mut positions = 0;
    let mut not_best = 0;
    for file in teacher_files(dir) {
        let game = TeacherGame::<G>::read(&file).unwrap();
        assert!(game.moves.len() > opening_plies, "{}", file.display());
        for (ply, (candidates, played)) in game.candidates.iter().zip(&game.moves).enumerate() {
            assert!((1..=multipv).contains(&candidates.len()), "{candidates:?}");
            if ply >= opening_plies && candidates[0].mv != *played {
                not_best += 1;
            }
            let shares = policy_target(candidates, PolicyTarget::Soft { temperature: 1.0 });
            assert!((shares.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{shares:?}");
        }
        positions += game.moves.len();
    }
    assert_eq!(not_best, explored, "moves after the opening other than the engine's best");
    positions
}

fn gen_args<'a>(engine: &'a str, variant: &'a str, out: &'a str, games: &'a str) -> Vec<&'a str> {
    vec![
        "distill",
        "gen",
        "--engine",
        engine,
        "--variant",
        variant,
        "--out",
        out,
        "--games",
        games,
        "--depth",
        "3",
        "--multipv",
        "4",
        "--random-plies",
        "2",
        "--ply-cap",
        "40",
    ]
}

#[test]
fn stockfish_teaches_chess_on_two_workers_and_a_generation_resumes() {
    let Some(engine) = engine_for_test("stockfish") else { return };
    let engine = engine.to_str().unwrap();
    let out = scratch("distill-chess");
    let _ = std::fs::remove_dir_all(&out);
    let out_s = out.to_str().unwrap();
    let run = capa(&[&gen_args(engine, "chess", out_s, "3")[..], &["--workers", "2"]].concat());
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stdout(&run).contains("3 games, "), "{}", stdout(&run));
    assert!(stdout(&run).contains("positions/s"), "{}", stdout(&run));
    assert_eq!(teacher_files(&out).len(), 3);
    let positions = check_games::<Chess>(&out, 4, 2);
    assert!(positions >= 9, "{positions} positions");

    // The same folder again: refused without --resume, and with other settings.
    let again = capa(&gen_args(engine, "chess", out_s, "3"));
    assert!(!again.status.success() && stderr(&again).contains("--resume"), "{}", stderr(&again));
    let mut other = gen_args(engine, "chess", out_s, "4");
    other[11] = "5";
    let other = capa(&[&other[..], &["--resume"]].concat());
    assert!(!other.status.success() && stderr(&other).contains("other settings"), "{}", stderr(&other));

    // A resume plays only the missing games; the old ones stay as they were.
    let first = std::fs::read(&teacher_files(&out)[0]).unwrap();
    let more = capa(&[&gen_args(engine, "chess", out_s, "4")[..], &["--resume"]].concat());
    assert!(more.status.success(), "{}", stderr(&more));
    assert!(stderr(&more).contains("1 of 4 games to play"), "{}", stderr(&more));
    assert_eq!(teacher_files(&out).len(), 4);
    assert_eq!(std::fs::read(&teacher_files(&out)[0]).unwrap(), first);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn explored_games_play_random_moves_and_keep_the_engines_analysis() {
    let Some(engine) = engine_for_test("stockfish") else { return };
    let out = scratch("distill-explore");
    let _ = std::fs::remove_dir_all(&out);
    let args =
        [&gen_args(engine.to_str().unwrap(), "chess", out.to_str().unwrap(), "2")[..], &["--explore", "0.5"]].concat();
    let run = capa(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    // Half the moves after the opening are drawn at random; a random move
    // is the engine's best about once in twenty or thirty.
    let mut random = 0;
    let mut after_opening = 0;
    for file in teacher_files(&out) {
        let game = TeacherGame::<Chess>::read(&file).unwrap();
        for (candidates, played) in game.candidates.iter().zip(&game.moves).skip(2) {
            after_opening += 1;
            random += usize::from(candidates[0].mv != *played);
        }
    }
    assert!(
        after_opening >= 20 && random * 5 >= after_opening && random * 5 <= after_opening * 4,
        "{random} of {after_opening}"
    );
    check_explored_games::<Chess>(&out, 4, 2, random);
    let settings = std::fs::read_to_string(out.join("generation.txt")).unwrap();
    assert!(settings.ends_with("explore 0.5\n"), "{settings}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_killed_generation_resumes_with_nothing_half_written() {
    let Some(engine) = engine_for_test("stockfish") else { return };
    let engine = engine.to_str().unwrap();
    let out = scratch("distill-kill");
    let _ = std::fs::remove_dir_all(&out);
    let out_s = out.to_str().unwrap();
    let args = gen_args(engine, "chess", out_s, "40");
    let mut child = Command::new(env!("CARGO_BIN_EXE_capa")).args(&args).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while teacher_files(&out).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let written = teacher_files(&out).len();
    assert!((1..40).contains(&written), "{written} games before the kill");
    check_games::<Chess>(&out, 4, 2);
    // A temporary file as a kill during a write leaves it.
    std::fs::write(out.join(".000039.teacher.tmp-99999999-0"), b"half").unwrap();
    let resumed = capa(&[&args[..], &["--resume"]].concat());
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert!(stderr(&resumed).contains("removed 1 temporary"), "{}", stderr(&resumed));
    assert_eq!(teacher_files(&out).len(), 40);
    check_games::<Chess>(&out, 4, 2);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn fairy_stockfish_teaches_capablanca() {
    let Some(engine) = engine_for_test("fairy-stockfish") else { return };
    let out = scratch("distill-capablanca");
    let _ = std::fs::remove_dir_all(&out);
    let run = capa(&gen_args(engine.to_str().unwrap(), "capablanca", out.to_str().unwrap(), "1"));
    assert!(run.status.success(), "{}", stderr(&run));
    let positions = check_games::<Capablanca>(&out, 4, 2);
    assert!(positions > 2);

    // The trainer learns from it through the normal path: one epoch of a
    // tiny network, every position in the training split.
    let run_dir = scratch("distill-capablanca-run");
    let _ = std::fs::remove_dir_all(&run_dir);
    let config = format!(
        "[run]\ndir = {:?}\nmode = \"distill\"\niterations = 1\n[game]\nname = \"capablanca\"\n\
         [net]\nchannels = 16\nblocks = 1\ntransformer_blocks = 1\nheads = 2\ngroups = 2\n\
         [distill]\ndata = {:?}\nholdout = 0.0\n[train]\nbatch = 16\n",
        run_dir.display().to_string(),
        out.display().to_string()
    );
    let config = capa_train::RunConfig::parse(&config, &[]).unwrap();
    let finish = capa_train::run(&config, &std::sync::atomic::AtomicBool::new(false)).unwrap();
    assert_eq!(finish, capa_train::Finish::Completed);
    let metrics = std::fs::read_to_string(run_dir.join("metrics.jsonl")).unwrap();
    let expected = format!("\"train_positions\":{positions},");
    assert!(metrics.lines().count() == 1 && metrics.contains(&expected), "{metrics}");
    assert!(metrics.contains(&format!("\"steps\":{},", positions.div_ceil(16))), "{metrics}");
    std::fs::remove_dir_all(&run_dir).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn generation_errors_are_clear() {
    let out = scratch("distill-errors");
    let _ = std::fs::remove_dir_all(&out);
    let out_s = out.to_str().unwrap();
    let missing = capa(&gen_args("/no/such/engine", "chess", out_s, "1"));
    assert!(!missing.status.success());
    assert!(stderr(&missing).contains("cannot start engine `/no/such/engine`"), "{}", stderr(&missing));
    let fresh = scratch("distill-nothing");
    let _ = std::fs::remove_dir_all(&fresh);
    let resume = capa(&[&gen_args("stockfish", "chess", fresh.to_str().unwrap(), "1")[..], &["--resume"]].concat());
    assert!(stderr(&resume).contains("holds no generation to continue"), "{}", stderr(&resume));
    let zero = capa(&gen_args("stockfish", "chess", out_s, "0"));
    assert!(stderr(&zero).contains("must each be at least 1"), "{}", stderr(&zero));
    let explore = capa(&[&gen_args("stockfish", "chess", out_s, "1")[..], &["--explore", "1.5"]].concat());
    assert!(stderr(&explore).contains("--explore is a probability"), "{}", stderr(&explore));
    if let Some(engine) = engine_for_test("stockfish") {
        let chess_only = capa(&gen_args(engine.to_str().unwrap(), "capablanca", out_s, "1"));
        assert!(stderr(&chess_only).contains("cannot play capablanca"), "{}", stderr(&chess_only));
    }
    for s in [&stderr(&missing), &stderr(&resume), &stderr(&zero), &stderr(&explore)] {
        assert!(!s.contains("panicked"), "{s}");
    }
}
