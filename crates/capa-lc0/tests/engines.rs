//! The parts of `capa lc0` that run a UCI engine, against the real ones:
//! Stockfish (which reports a WDL) and Fairy-Stockfish (which does not).

use std::path::{Path, PathBuf};

use capa_lc0::{
    self, ConvertError, ConvertJob, ConvertSettings, EngineSpec, EvalSource, PgnReader, SourceGame, WdlModel,
    convert_game,
};
use capa_uci::{Go, UciEngine, UciScore, engine_for_test};

/// The engine `name` searching to `depth`; `None` skips the test (see
/// [`engine_for_test`]).
fn spec(name: &str, depth: u32) -> Option<EngineSpec> {
    Some(EngineSpec { program: engine_for_test(name)?, depth, hash_mb: 16, threads: 1 })
}

fn games(text: &str) -> Vec<SourceGame> {
    let mut reader = PgnReader::new(text.as_bytes());
    std::iter::from_fn(|| reader.next_game().unwrap()).collect()
}

fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-lc0-engines-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const ENGINE_MODE: ConvertSettings =
    ConvertSettings { eval: EvalSource::Engine, wdl: WdlModel { scale: 1.13, spread: 0.21 }, visit_budget: 0 };

/// What the engine itself says of the start position at `depth` after a
/// `ucinewgame`: (score, WDL, nodes, best move), asked without capa's
/// evaluator.
fn ask(engine: &EngineSpec, show_wdl: bool) -> (UciScore, Option<[u32; 3]>, Option<u64>, String) {
    let depth = engine.depth;
    let mut engine = UciEngine::start(&engine.program.to_string_lossy()).unwrap();
    engine.set_option("Threads", "1").unwrap();
    engine.set_option("Hash", "16").unwrap();
    if show_wdl {
        engine.set_option("UCI_ShowWDL", "true").unwrap();
    }
    engine.new_game().unwrap();
    let output = engine.go("startpos", Go::Depth(depth)).unwrap();
    let line = &output.lines[0];
    (line.score, line.wdl, line.nodes, output.best.unwrap())
}

#[test]
fn stockfish_mode_takes_the_engines_wdl_best_move_and_nodes() {
    // Black mates with Qh4 on its second move: the engine must find it.
    let Some(stockfish) = spec("stockfish", 8) else { return };
    let game = &games("1. f3 e5 2. g4 Qh4# 0-1\n")[0];
    let mut evaluator = capa_lc0::EngineEvaluator::start(&stockfish).unwrap();
    assert!(evaluator.shows_wdl());
    let converted = convert_game(game, &ENGINE_MODE, Some(&mut evaluator)).unwrap();
    assert_eq!(converted.model_evals, 0);
    let records = &converted.records;
    assert_eq!(records.len(), 4);
    assert!(capa_lc0::game_problems(records).is_empty(), "{:?}", capa_lc0::game_problems(records));

    let (_, wdl, nodes, best) = ask(&stockfish, true);
    let [w, d, l] = wdl.unwrap();
    let first = &records[0];
    assert_eq!(first.root_q, (w as f32 - l as f32) / 1000.0);
    assert_eq!(first.root_d, d as f32 / 1000.0);
    assert_eq!((first.best_q, first.best_d), (first.root_q, first.root_d));
    assert_eq!(u64::from(first.visits), nodes.unwrap());
    assert_eq!(capa_lc0::policy_move(first.best_idx, false), best);
    // The mate: black to move, certain, and its move (mirrored for black).
    let last = &records[3];
    assert_eq!((last.root_q, last.root_d), (1.0, 0.0));
    assert_eq!(capa_lc0::policy_move(last.best_idx, true), "d8h4");
    assert_eq!(last.best_idx, last.played_idx);
    // The played move's value is the next position's, from this side.
    assert_eq!(records[2].played_q, -last.best_q);
}

#[test]
fn an_engine_without_wdl_falls_back_to_the_model_on_its_score() {
    let Some(fairy) = spec("fairy-stockfish", 6) else { return };
    let game = &games("1. e4 e5 2. Nf3 1/2-1/2\n")[0];
    let mut evaluator = capa_lc0::EngineEvaluator::start(&fairy).unwrap();
    assert!(!evaluator.shows_wdl());
    let converted = convert_game(game, &ENGINE_MODE, Some(&mut evaluator)).unwrap();
    assert_eq!(converted.model_evals, 3);
    let (score, wdl, _, _) = ask(&fairy, false);
    assert_eq!(wdl, None);
    let UciScore::Cp(cp) = score else { panic!("a mate at the start? {score:?}") };
    let (q, d) = WdlModel::default().q_d(cp as f32 / 100.0);
    assert_eq!((converted.records[0].root_q, converted.records[0].root_d), (q, d));
}

#[test]
fn engine_mode_writes_the_same_files_whatever_the_thread_count() {
    let Some(stockfish) = spec("stockfish", 4) else { return };
    let dir = tempdir("threads");
    let pgn = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/2008_SCT_LadiesOpen.pgn");
    let mut outputs = Vec::new();
    for threads in [1, 2] {
        let job = ConvertJob {
            output_dir: dir.join(format!("out{threads}")),
            name: "sf".into(),
            files_per_dir: 100,
            max_games: Some(3),
            settings: ConvertSettings { visit_budget: 0, ..ENGINE_MODE },
            engine: Some(stockfish.clone()),
        };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let summary = capa_lc0::convert_files(std::slice::from_ref(&pgn), &job, &pool, |_| {}).unwrap();
        assert_eq!((summary.games_written, summary.model_evals), (3, 0));
        outputs.push(job);
    }
    for number in 0..3 {
        let (a, b) = (outputs[0].game_path(number), outputs[1].game_path(number));
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "{}", a.display());
        let records = capa_lc0::read_game_file(&a).unwrap();
        assert!(records.iter().all(|r| r.visits > 1), "visits are the engine's nodes");
        assert!(capa_lc0::game_problems(&records).is_empty());
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_missing_engine_is_an_error_before_anything_is_written() {
    let dir = tempdir("missing");
    let pgn = dir.join("games.pgn");
    std::fs::write(&pgn, "1. e4 e5 1-0\n").unwrap();
    let job = ConvertJob {
        output_dir: dir.join("out"),
        name: "sf".into(),
        files_per_dir: 100,
        max_games: None,
        settings: ENGINE_MODE,
        engine: Some(EngineSpec { program: "/nonexistent/stockfish".into(), depth: 4, hash_mb: 16, threads: 1 }),
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    match capa_lc0::convert_files(std::slice::from_ref(&pgn), &job, &pool, |_| {}) {
        Err(e @ ConvertError::Engine(_)) => assert!(e.to_string().contains("/nonexistent/stockfish"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(!dir.join("out").exists());
    let without = ConvertJob { engine: None, ..job };
    assert!(matches!(capa_lc0::convert_files(&[pgn], &without, &pool, |_| {}), Err(ConvertError::NoEngine)));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Stockfish at `depth` plays the games out; `None` skips the test.
fn finish_settings(depth: u32) -> Option<capa_lc0::FinishSettings> {
    Some(capa_lc0::FinishSettings {
        engine: spec("stockfish", depth)?,
        max_extra_plies: 400,
        terminations: vec!["adjudication".into()],
        include_draws: false,
        limit: None,
    })
}

/// The games of a PGN file, text kept.
fn read_games(path: &Path) -> Vec<SourceGame> {
    let mut reader = PgnReader::new(capa_lc0::open_pgn(path).unwrap()).keeping_text();
    std::iter::from_fn(|| reader.next_game().unwrap()).collect()
}

#[test]
fn finish_games_plays_adjudicated_games_to_a_real_end_and_copies_the_rest() {
    let Some(settings) = finish_settings(5) else { return };
    let dir = tempdir("finish");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sf_selfplay_a.pgn");
    let output = dir.join("finished.pgn");
    // A killed run's leftover is replaced, never read.
    std::fs::write(capa_lc0::partial_path(&output), "half a game").unwrap();
    let settings = capa_lc0::FinishSettings { limit: Some(8), ..settings };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let mut events = Vec::new();
    let summary = capa_lc0::finish_files(&[(source.clone(), output.clone())], &settings, &pool, |event| {
        if let capa_lc0::FinishEvent::Game(_, game, outcome, _) = event {
            events.push((game.number, outcome.clone()));
        }
    })
    .unwrap();
    assert!(!capa_lc0::partial_path(&output).exists());
    assert_eq!((summary.games, summary.files, summary.failed), (8, 1, 0));
    assert_eq!(events.iter().map(|(n, _)| *n).collect::<Vec<_>>(), (1..=8).collect::<Vec<_>>(), "input order");

    let originals = read_games(&source);
    let finished = read_games(&output);
    assert_eq!(finished.len(), 8);
    let mut concluded = 0;
    for ((original, done), (_, outcome)) in originals.iter().zip(&finished).zip(&events) {
        match outcome {
            capa_lc0::FinishOutcome::Concluded { plies, result, .. } => {
                concluded += 1;
                assert_eq!(done.moves.len(), original.moves.len() + *plies as usize);
                assert_eq!(done.winner(), games(&format!("{result}\n"))[0].winner());
                assert_eq!(done.tag("Termination"), Some("normal"));
                assert!(done.tag("FinishedBy").is_some());
                // The old moves stay as they were; the new ones carry evals
                // that --pgn-eval-mode reads, and end the game by the rules.
                let written = |moves: &[capa_lc0::SourceMove]| -> Vec<(String, String)> {
                    moves.iter().map(|m| (m.san.clone(), m.comment.clone())).collect()
                };
                assert_eq!(written(&done.moves[..original.moves.len()]), written(&original.moves));
                for added in &done.moves[original.moves.len()..] {
                    assert!(capa_lc0::comment_eval(&added.comment).is_some(), "{:?}", added.comment);
                }
                let eval_mode = ConvertSettings { eval: EvalSource::PgnComments, ..ConvertSettings::default() };
                let records = convert_game(done, &eval_mode, None).unwrap().records;
                assert_eq!(records.last().unwrap().plies_left, 1.0);
            }
            capa_lc0::FinishOutcome::NotChosen => assert_eq!(done.text, original.text, "copied byte for byte"),
            other => panic!("game {}: {other:?}", original.number),
        }
    }
    assert!(concluded >= 4, "{events:?}");
    // The output is plain PGN that converts with no skipped game.
    let job = ConvertJob {
        output_dir: dir.join("chunks"),
        name: "finished".into(),
        files_per_dir: 100,
        max_games: None,
        settings: ConvertSettings { eval: EvalSource::PgnComments, ..ConvertSettings::default() },
        engine: None,
    };
    let converted = capa_lc0::convert_files(&[output], &job, &pool, |_| {}).unwrap();
    assert_eq!((converted.games_written, converted.skipped.len()), (8, 0));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn finish_games_plays_from_the_side_to_move_and_numbers_its_moves() {
    // Adjudicated with black to move in a won ending: KQ v K from a FEN.
    let text = "[Event \"t\"]\n[FEN \"8/8/8/8/8/5k2/8/4QK2 b - - 0 60\"]\n[Result \"1-0\"]\n[PlyCount \"0\"]\n\
                [Termination \"adjudication\"]\n\n1-0\n";
    let Some(settings) = finish_settings(8) else { return };
    let dir = tempdir("finish-fen");
    let (input, output) = (dir.join("one.pgn"), dir.join("one-finished.pgn"));
    std::fs::write(&input, text).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let summary = capa_lc0::finish_files(&[(input, output.clone())], &settings, &pool, |_| {}).unwrap();
    assert_eq!(summary.concluded, 1, "{summary:?}");
    let written = std::fs::read_to_string(&output).unwrap();
    assert!(written.contains("\n60... K"), "{written}");
    let done = &read_games(&output)[0];
    assert_eq!(done.winner(), Some(Some(capa_rules::Color::White)));
    assert_eq!(done.tag("PlyCount"), Some(done.moves.len().to_string().as_str()));
    // White mates: the last comment is a mate score, the mover's.
    assert!(done.moves.last().unwrap().comment.starts_with("+M1/"), "{written}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn cutechess_comments_read_back_as_the_movers_eval() {
    use capa_lc0::CommentEval::Mover;
    let comment = |score| capa_lc0::cutechess_comment(score, 10, 0.0123);
    assert_eq!(comment(UciScore::Cp(76)), "+0.76/10 0.012s");
    assert_eq!(comment(UciScore::Cp(-5)), "-0.05/10 0.012s");
    assert_eq!(comment(UciScore::Cp(0)), "0.00/10 0.012s");
    assert_eq!(comment(UciScore::Mate(5)), "+M5/10 0.012s");
    assert_eq!(comment(UciScore::Mate(-3)), "-M3/10 0.012s");
    assert_eq!(capa_lc0::comment_eval(&comment(UciScore::Cp(76))), Some(Mover(0.76)));
    assert_eq!(capa_lc0::comment_eval(&comment(UciScore::Mate(-3))), Some(Mover(-capa_lc0::MATE_PAWNS)));
}

#[test]
fn finish_games_keeps_a_game_whole_when_its_moves_follow_the_tags_directly() {
    let text = "[Event \"t\"]\n[FEN \"8/8/8/8/8/5k2/8/4QK2 b - - 0 60\"]\n[Result \"1-0\"]\n\
                [Termination \"adjudication\"]\n60... Kg4 61. Kf2 1-0\n";
    let Some(settings) = finish_settings(6) else { return };
    let dir = tempdir("finish-no-blank");
    let (input, output) = (dir.join("one.pgn"), dir.join("one-finished.pgn"));
    std::fs::write(&input, text).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let summary = capa_lc0::finish_files(&[(input, output.clone())], &settings, &pool, |_| {}).unwrap();
    assert_eq!(summary.concluded, 1, "{summary:?}");
    let written = std::fs::read_to_string(&output).unwrap();
    assert!(!written.trim_end().contains("\n\n"), "one paragraph of tags and moves: {written}");
    let finished = read_games(&output);
    assert_eq!(finished.len(), 1, "{written}");
    assert!(finished[0].moves.len() > 2 && finished[0].moves[..2].iter().map(|m| &m.san).eq(["Kg4", "Kf2"]));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn only_termination_and_include_draws_choose_the_games_played_out() {
    let text = "[Event \"drawn\"]\n[FEN \"r7/8/8/4k3/8/8/8/R3K3 w - - 0 1\"]\n[Result \"1/2-1/2\"]\n\
                [Termination \"adjudication\"]\n\n1/2-1/2\n\n\
                [Event \"flagged\"]\n[FEN \"8/8/8/8/8/5k2/8/4QK2 b - - 0 60\"]\n[Result \"1-0\"]\n\
                [Termination \"time forfeit\"]\n\n1-0\n";
    let dir = tempdir("finish-choice");
    let input = dir.join("two.pgn");
    std::fs::write(&input, text).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let outcomes = |settings: &capa_lc0::FinishSettings, name: &str| {
        let mut outcomes = Vec::new();
        capa_lc0::finish_files(&[(input.clone(), dir.join(name))], settings, &pool, |event| {
            if let capa_lc0::FinishEvent::Game(_, _, outcome, _) = event {
                outcomes.push(matches!(outcome, capa_lc0::FinishOutcome::Concluded { .. }));
            }
        })
        .unwrap();
        outcomes
    };
    let Some(base) = finish_settings(4) else { return };
    assert_eq!(outcomes(&base, "default.pgn"), [false, false], "a drawn adjudication, another termination");
    let draws = capa_lc0::FinishSettings { include_draws: true, ..base.clone() };
    assert_eq!(outcomes(&draws, "draws.pgn"), [true, false]);
    let forfeits = capa_lc0::FinishSettings { terminations: vec!["Time Forfeit".into()], ..base };
    assert_eq!(outcomes(&forfeits, "forfeits.pgn"), [false, true]);
    std::fs::remove_dir_all(dir).unwrap();
}
