//! Lc0 V6 conversion: the formulas against the seed's tables, the record
//! layout against Lc0's offsets, the planes against Lc0's published
//! layout, the real sample PGNs, and bad input of every kind.

use std::path::{Path, PathBuf};

use capa_lc0::{
    self, ADJUDICATED, CommentEval, ConvertError, ConvertEvent, ConvertJob, ConvertSettings, EvalSource, PgnReader,
    SkipReason, SourceGame, V6_SIZE, V6Record, WdlModel, comment_eval, convert_game, r50_damp, wdl_rescale,
};
use capa_rules::chess::Chess;
use capa_rules::{Game, History};
use proptest::prelude::*;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn games(text: &str) -> Vec<SourceGame> {
    let mut reader = PgnReader::new(text.as_bytes());
    std::iter::from_fn(|| reader.next_game().unwrap()).collect()
}

fn one(text: &str, settings: &ConvertSettings) -> Result<capa_lc0::ConvertedGame, SkipReason> {
    convert_game(&games(text)[0], settings, None)
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
}

fn close(a: f32, b: f32, tolerance: f32) -> bool {
    (a - b).abs() <= tolerance
}

#[test]
fn the_wdl_model_reproduces_the_seed_tables() {
    let model = WdlModel::default();
    // "Resulting draw probability D at a given eval", k = 1.13, spread 0.21.
    for (eval, d) in [(0.0, 0.983), (0.25, 0.966), (0.5, 0.888), (0.75, 0.674), (1.0, 0.350), (1.5, 0.035)] {
        assert!(close(model.q_d(eval).1, d, 5e-4), "D at {eval}: {:?}", model.q_d(eval));
    }
    for (scale, eval, d) in [(1.4, 0.5, 0.806), (1.8, 0.5, 0.617), (2.8, 0.5, 0.130), (1.4, 1.0, 0.130)] {
        let got = WdlModel { scale, spread: 0.21 }.q_d(eval).1;
        assert!(close(got, d, 5e-4), "D at {eval}, scale {scale}: {got}");
    }
    // "Q at eval 0.78" by scale.
    for (scale, q) in [(1.13, 0.362), (1.3, 0.517), (1.4, 0.608), (1.8, 0.873)] {
        let (got_q, got_d) = WdlModel { scale, spread: 0.21 }.q_d(0.78);
        assert!(close(got_q, q, 5e-4), "Q at 0.78, scale {scale}: {got_q}");
        assert!(close(got_q + got_d, 1.0, 2e-3), "W + D is nearly 1 at 0.78: {got_q} {got_d}");
    }
    // Spread sets the draw rate at equality.
    // (The seed's table prints 0.805 for spread 0.45, where the formula gives 0.8044.)
    for (spread, d) in [(0.14, 0.998), (0.30, 0.931), (0.45, 0.805)] {
        assert!(close(WdlModel { scale: 1.13, spread }.q_d(0.0).1, d, 1e-3), "spread {spread}");
    }
    // Symmetric, and a mate is certain.
    assert!(close(model.q_d(-0.78).0, -0.362, 5e-4));
    assert_eq!(model.q_d(capa_lc0::MATE_PAWNS), (1.0, 0.0));
}

#[test]
fn lc0_rescale_is_the_identity_at_neutral_settings_and_moves_the_centre_otherwise() {
    for eval in [-2.0, -0.7, -0.1, 0.0, 0.3, 0.9, 1.6] {
        let model = WdlModel { scale: 1.0, spread: 0.45 };
        let mu = eval;
        let w = 1.0 / (1.0 + (-(mu - 1.0f32) / 0.45).exp());
        let l = 1.0 / (1.0 + (-(-mu - 1.0f32) / 0.45).exp());
        let (q, d) = model.q_d(eval);
        assert!(close(q, w - l, 1e-4) && close(d, 1.0 - w - l, 1e-4), "eval {eval}");
    }
    let (q, d) = (0.2, 0.6);
    let (q2, _) = wdl_rescale(q, d, 1.0, 0.1);
    assert!(q2 > q, "a positive diff favours the side to move: {q2}");
    let (_, d2) = wdl_rescale(q, d, 1.5, 0.0);
    assert!(d2 < d, "a wider logistic draws less: {d2}");
}

#[test]
fn fifty_move_damping_follows_the_worked_example() {
    // Rook up (Q 1, D 0), damping from clock 40.
    for (clock, q, d) in [(61, 0.650, 0.350), (63, 0.617, 0.383), (65, 0.583, 0.417), (0, 1.0, 0.0), (2, 1.0, 0.0)] {
        let (got_q, got_d) = r50_damp(1.0, 0.0, clock, 40);
        assert!(close(got_q, q, 1e-3) && close(got_d, d, 1e-3), "clock {clock}: {got_q} {got_d}");
    }
    assert_eq!(r50_damp(0.8, 0.1, 100, 40), (0.0, 1.0), "the limit is a certain draw");
}

#[test]
fn static_mode_damps_a_won_ending_by_the_clock() {
    // White a rook up, shuffling with the clock at 60.
    let pgn = "[FEN \"6k1/8/8/8/8/8/6K1/R7 w - - 60 80\"]\n[Result \"1-0\"]\n\n80. Rh1 Kf7 81. Rh2 Kg6 1-0\n";
    let game = one(pgn, &ConvertSettings::default()).unwrap();
    let first = &game.records[0];
    let (undamped_q, _) =
        WdlModel::default().q_d(capa_lc0::static_eval(&Chess::from_fen("6k1/8/8/8/8/8/6K1/R7 w - - 60 80").unwrap()));
    assert!(undamped_q > 0.99, "a rook up is won before damping: {undamped_q}");
    assert!(close(first.best_q, 0.65, 0.01) && close(first.best_d, 0.35, 0.01), "{} {}", first.best_q, first.best_d);
    // The same game converted with damping from 100 on is not damped.
    let off = ConvertSettings { eval: EvalSource::Static { r50_damp_start: 100 }, ..ConvertSettings::default() };
    assert!(one(pgn, &off).unwrap().records[0].best_q > 0.99);
}

#[test]
fn comments_give_evals_in_both_forms() {
    assert_eq!(comment_eval("+0.76/18 1.813s"), Some(CommentEval::Mover(0.76)));
    assert_eq!(comment_eval(" -0.76/18 1.813s "), Some(CommentEval::Mover(-0.76)));
    assert_eq!(comment_eval("0.00/10 0.25s"), Some(CommentEval::Mover(0.0)));
    assert_eq!(comment_eval("-M5/12 0.1s"), Some(CommentEval::Mover(-capa_lc0::MATE_PAWNS)));
    assert_eq!(comment_eval("+1.20/20 0.5s, White wins by adjudication"), Some(CommentEval::Mover(1.2)));
    assert_eq!(comment_eval("[%eval 0.17] [%clk 0:03:00]"), Some(CommentEval::WhiteAfter(0.17)));
    assert_eq!(comment_eval("[%eval #-3]"), Some(CommentEval::WhiteAfter(-capa_lc0::MATE_PAWNS)));
    assert_eq!(comment_eval("[%eval #2]"), Some(CommentEval::WhiteAfter(capa_lc0::MATE_PAWNS)));
    for none in ["book", "", "a/b", "+x/3", "[%clk 0:01:00]", "[%eval abc]"] {
        assert_eq!(comment_eval(none), None, "{none:?}");
    }
}

#[test]
fn the_record_has_lc0s_offsets_and_reads_back() {
    let game = one("1. e4 e5 2. Nf3 1-0\n", &ConvertSettings::default()).unwrap();
    let mut record = game.records[1].clone();
    record.root_q = 0.25;
    record.best_q = -0.5;
    record.plies_left = 7.0;
    record.visits = 850;
    record.rule50_count = 3;
    let mut bytes = Vec::new();
    record.write_to(&mut bytes);
    assert_eq!(bytes.len(), V6_SIZE);
    let f32_at = |at: usize| f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(u32::from_le_bytes(bytes[0..4].try_into().unwrap()), 6);
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), 1);
    assert_eq!(f32_at(8), -1.0, "a1b1 is illegal for black here");
    assert_eq!(bytes[8276], 1, "black to move");
    assert_eq!(bytes[8277], 3);
    assert_eq!(f32_at(8280), 0.25);
    assert_eq!(f32_at(8284), -0.5);
    assert_eq!(f32_at(8304), 7.0);
    assert_eq!(f32_at(8308), -1.0, "white won: black's record");
    assert!(f32_at(8328).is_nan(), "orig_q unknown");
    assert_eq!(u32::from_le_bytes(bytes[8340..8344].try_into().unwrap()), 850);
    let played = u16::from_le_bytes(bytes[8344..8346].try_into().unwrap());
    assert_eq!(capa_lc0::policy_move(played, true), "e7e5");
    let back = V6Record::read(bytes.as_slice().try_into().unwrap()).unwrap();
    assert_eq!(format!("{back:?}"), format!("{record:?}"), "NaN-aware equality");
    // A wrong version and a partial record are errors, not garbage.
    bytes[0] = 5;
    assert!(V6Record::read(bytes.as_slice().try_into().unwrap()).is_err());
    assert!(V6Record::read_all(&bytes[..V6_SIZE - 1]).is_err());
}

#[test]
fn planes_follow_lc0s_published_layout() {
    let game = one("1. e4 e5 1-0\n", &ConvertSettings::default()).unwrap();
    let white = &game.records[0];
    assert_eq!(white.planes[0], 0x0000_0000_0000_FF00, "our pawns on rank 2");
    assert_eq!(white.planes[5], 0x08, "our king on e1: byte 0, bit 3 after the byte reversal");
    assert_eq!(white.planes[6], 0x00FF_0000_0000_0000, "their pawns on rank 7");
    assert!(white.planes[13..].iter().all(|&p| p == 0), "a game from the start: no history");
    assert_eq!(white.castling, [1, 1, 1, 1]);
    let black = &game.records[1];
    assert_eq!(black.planes[5], 0x08, "black's king on e8 seen from black: e1");
    assert_eq!(black.planes[11], 0x0800_0000_0000_0000, "white's king seen from black: e8");
    assert_eq!(
        black.planes[6] & 0x0000_0008_0000_0000,
        0x0000_0008_0000_0000,
        "white's e4 pawn is on e5 seen from black"
    );
    // Slot 1 is the start position, also from black's side.
    assert_eq!(black.planes[13], 0x0000_0000_0000_FF00, "black's pawns, mirrored, on rank 2");
    assert_eq!(black.planes[19], 0x00FF_0000_0000_0000, "white's pawns, mirrored, on rank 7");
    assert_eq!(black.side_to_move_or_enpassant, 1);
}

#[test]
fn a_game_from_a_fen_fills_its_history_with_the_first_position() {
    // Black just double-pushed: the copies draw that pawn back on d7.
    let fen = "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2";
    let game = one(&format!("[FEN \"{fen}\"]\n[Result \"1/2-1/2\"]\n\n2. exd5 1/2-1/2\n"), &ConvertSettings::default())
        .unwrap();
    let record = &game.records[0];
    let black_pawns_now = record.planes[6];
    let black_pawns_before = record.planes[13 + 6];
    assert_ne!(black_pawns_now, black_pawns_before);
    assert_eq!(black_pawns_before, 0x00FF_0000_0000_0000, "all eight on rank 7 in the fill");
    for slot in 2..8 {
        assert_eq!(record.planes[slot * 13..slot * 13 + 12], record.planes[13..25], "slot {slot} repeats the fill");
    }
    assert_eq!(record.result_q, 0.0);
    assert_eq!(record.result_d, 1.0);
}

#[test]
fn repetitions_set_the_repetition_plane() {
    let pgn = "1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 1/2-1/2\n";
    let game = one(pgn, &ConvertSettings::default()).unwrap();
    assert_eq!(game.records[4].planes[12], u64::MAX, "the start position again, with white to move");
    assert_eq!(game.records[4].planes[13 + 12], 0, "the position before it was new");
    assert!(game.records[..4].iter().all(|r| r.planes[12] == 0));
}

#[test]
fn castling_is_king_takes_rook_and_promotions_use_lc0s_entries() {
    let pgn = "1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. O-O Nf6 1-0\n";
    let game = one(pgn, &ConvertSettings::default()).unwrap();
    assert_eq!(capa_lc0::policy_move(game.records[6].played_idx, false), "e1h1");
    let promotion = "[FEN \"8/P6k/8/8/8/8/8/K7 w - - 0 1\"]\n[Result \"1-0\"]\n\n1. a8=N Kg6 2. Kb2 1-0\n";
    let game = one(promotion, &ConvertSettings::default()).unwrap();
    assert_eq!(capa_lc0::policy_move(game.records[0].played_idx, false), "a7a8", "knight promotions have no suffix");
    let queen = "[FEN \"8/P6k/8/8/8/8/8/K7 w - - 0 1\"]\n[Result \"1-0\"]\n\n1. a8=Q Kg6 1-0\n";
    let game = one(queen, &ConvertSettings::default()).unwrap();
    assert_eq!(capa_lc0::policy_move(game.records[0].played_idx, false), "a7a8q");
}

#[test]
fn the_visit_budget_spreads_the_policy() {
    let settings = ConvertSettings { visit_budget: 850, ..ConvertSettings::default() };
    let game = one("1. e4 e5 1-0\n", &settings).unwrap();
    let record = &game.records[0];
    let legal: Vec<f32> = record.probabilities.iter().copied().filter(|&p| p >= 0.0).collect();
    assert_eq!(legal.len(), 20);
    let share = 0.5 + record.best_q.abs() / 2.0;
    assert!(close(record.probabilities[usize::from(record.played_idx)], share, 1e-6));
    assert!(close(legal.iter().sum::<f32>(), 1.0, 1e-5));
    assert_eq!(record.visits, 850);
    let one_hot = one("1. e4 e5 1-0\n", &ConvertSettings::default()).unwrap();
    assert_eq!(one_hot.records[0].probabilities[usize::from(one_hot.records[0].played_idx)], 1.0);
    assert_eq!(one_hot.records[0].visits, 1);
}

#[test]
fn comment_evals_fill_q_and_book_moves_borrow_a_neighbour() {
    let settings = ConvertSettings { eval: EvalSource::PgnComments, ..ConvertSettings::default() };
    // Two book moves, then evals from each mover's side.
    let pgn =
        "[Result \"0-1\"]\n\n1. e4 e5 2. Nf3 {+0.40/12 0.1s} Nc6 {-0.30/12 0.1s} 3. Bb5 {+0.50/12} a6 {+M3/9} 0-1\n";
    let game = one(pgn, &settings).unwrap();
    let model = WdlModel::default();
    let q = |r: &V6Record| r.best_q;
    assert!(close(q(&game.records[2]), model.q_d(0.40).0, 1e-6));
    assert!(close(q(&game.records[3]), model.q_d(-0.30).0, 1e-6), "black's own eval, already from its side");
    assert!(close(q(&game.records[5]), 1.0, 1e-6), "a mate for the mover");
    // 1...e5 had no eval: it borrows 2. Nf3's (+0.40 for white), seen from black.
    assert!(close(q(&game.records[1]), model.q_d(-0.40).0, 1e-6));
    // 1. e4 has no neighbour with an eval: static.
    assert_eq!(game.neighbour_evals, 1);
    assert_eq!(game.static_fallbacks, 1);
    // Lichess: White's eval of the position after the move.
    let lichess = "[Result \"1-0\"]\n\n1. e4 { [%eval 0.3] } 1... e5 { [%eval -0.6] } 2. Qh5 { [%eval 1.2] } 1-0\n";
    let game = one(lichess, &settings).unwrap();
    assert!(close(q(&game.records[1]), model.q_d(-0.3).0, 1e-6), "after 1. e4, from black's side");
    assert!(close(q(&game.records[2]), model.q_d(-0.6).0, 1e-6), "after 1... e5, from white's side");
    assert_eq!(game.static_fallbacks + game.neighbour_evals, 1, "only the start position lacks its own eval");
}

#[test]
fn results_plies_left_and_adjudication() {
    let pgn = "[Result \"1-0\"]\n[Termination \"adjudication\"]\n\n1. e4 e5 2. Nf3 Nc6 1-0\n";
    let game = one(pgn, &ConvertSettings::default()).unwrap();
    let results: Vec<f32> = game.records.iter().map(|r| r.result_q).collect();
    assert_eq!(results, [1.0, -1.0, 1.0, -1.0]);
    let plies: Vec<f32> = game.records.iter().map(|r| r.plies_left).collect();
    assert_eq!(plies, [4.0, 3.0, 2.0, 1.0], "plies to the end, the move to play included");
    assert!(game.records.iter().all(|r| r.invariance_info == ADJUDICATED));
    assert_eq!(game.records[3].played_q, -1.0, "the last move's value is the result");
    assert_eq!(game.records[0].played_q, -game.records[1].best_q);
    assert!(capa_lc0::game_problems(&game.records).is_empty(), "{:?}", capa_lc0::game_problems(&game.records));
    let normal = one("[Termination \"normal\"]\n\n1. e4 e5 1-0\n", &ConvertSettings::default()).unwrap();
    assert_eq!(normal.records[0].invariance_info, 0);
}

#[test]
fn bad_games_are_skipped_with_the_reason_and_the_line() {
    let settings = ConvertSettings::default();
    let reason = |pgn: &str| one(pgn, &settings).unwrap_err();
    match reason("[Event \"x\"]\n\n1. e4 e5\n2. Nf9 Nc6 1-0\n") {
        SkipReason::Move { line: 4, ply: 2, san, .. } => assert_eq!(san, "Nf9"),
        other => panic!("{other:?}"),
    }
    match reason("1. e4 e5 2. Ke3 1-0\n") {
        SkipReason::Move { line: 1, ply: 2, reason, .. } => assert!(reason.contains("not legal"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(reason("[FEN \"8/8/8/8 w - - 0 1\"]\n\n1. e4 1-0\n"), SkipReason::Fen(_)));
    assert!(matches!(reason("[Variant \"Chess960\"]\n\n1. e4 1-0\n"), SkipReason::Variant(_)));
    assert!(matches!(reason("[Variant \"crazyhouse\"]\n\n1. e4 1-0\n"), SkipReason::Variant(_)));
    assert_eq!(reason("1. e4 e5 *\n"), SkipReason::NoResult);
    assert_eq!(reason("[Result \"*\"]\n\n1. e4 e5\n"), SkipReason::NoResult);
    assert!(matches!(reason("1. e4 {never closed e5 1-0\n"), SkipReason::Syntax { line: 1, .. }));
    assert!(one("[Variant \"Standard\"]\n\n1. e4 1-0\n", &settings).is_ok());
    let from_fen = "[FEN \"4k3/8/8/8/8/8/8/4K2R b K - 0 30\"]\n\n30... Kd7 31. Rh9 1-0\n";
    assert!(reason(from_fen).to_string().contains("move 31.Rh9"), "{}", reason(from_fen));
    let message = reason("1. e4 e5 2. Nf9 1-0\n").to_string();
    assert!(message.contains("line 1") && message.contains("2.Nf9"), "{message}");
}

#[test]
fn a_game_without_a_result_before_the_next_ends_at_its_tags() {
    let parsed = games("[Event \"a\"]\n\n1. e4 e5\n\n[Event \"b\"]\n\n1. d4 d5 1-0\n");
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed[0].result_token, None);
    assert_eq!(parsed[1].line, 5);
    assert_eq!(parsed[1].number, 2);
    assert_eq!(parsed[1].moves.len(), 2);
}

/// Converts `inputs` into a fresh folder; the summary and the skip messages.
fn convert(
    inputs: &[PathBuf],
    out: &Path,
    threads: usize,
    settings: ConvertSettings,
) -> (capa_lc0::ConvertSummary, Vec<String>) {
    let job = ConvertJob {
        output_dir: out.to_path_buf(),
        name: "supervised".into(),
        files_per_dir: 40,
        max_games: None,
        settings,
        engine: None,
    };
    let mut skips = Vec::new();
    let summary = capa_lc0::convert_files(inputs, &job, &pool(threads), |event| {
        if let ConvertEvent::Skipped(path, game, reason) = event {
            skips.push(format!("{}: game {} (line {}): {reason}", path.display(), game.number, game.line));
        }
    })
    .unwrap();
    (summary, skips)
}

#[test]
fn the_sample_pgns_convert_with_no_error_and_read_back_move_for_move() {
    let out = tempdir("samples");
    let inputs: Vec<PathBuf> =
        ["sf_selfplay_a.pgn", "sf_selfplay_played_out.pgn", "2008_SCT_LadiesOpen.pgn"].map(data).to_vec();
    let settings = ConvertSettings { eval: EvalSource::PgnComments, ..ConvertSettings::default() };
    let (summary, skips) = convert(&inputs, &out, 2, settings);
    assert!(skips.is_empty(), "{skips:#?}");
    assert_eq!(summary.games_written, 100 + 24 + 226);
    assert!(summary.neighbour_evals > 0 && summary.static_fallbacks > 0, "book moves and human games lack evals");
    // Every file verifies, and the first game replays to the PGN's moves.
    let mut files = 0;
    for number in 0..summary.games_written {
        let path = out.join(format!("supervised-{}", number / 40)).join(format!("game_{number:06}.gz"));
        let records = capa_lc0::read_game_file(&path).unwrap();
        assert!(
            capa_lc0::game_problems(&records).is_empty(),
            "{}: {:?}",
            path.display(),
            capa_lc0::game_problems(&records)
        );
        files += 1;
    }
    assert_eq!(files, 350);
    let text = std::fs::read_to_string(data("sf_selfplay_a.pgn")).unwrap();
    let first = &games(&text)[0];
    let records = capa_lc0::read_game_file(&out.join("supervised-0/game_000000.gz")).unwrap();
    assert_eq!(records.len(), first.moves.len());
    let mut history = History::new(Chess::startpos());
    for (record, source) in records.iter().zip(&first.moves) {
        let san = shakmaty::san::SanPlus::from_ascii(source.san.as_bytes()).unwrap();
        let m = history.current().parse_san(&san.san).unwrap();
        assert_eq!(usize::from(record.played_idx), history.current().policy_index(m), "{}", source.san);
        history.play(m);
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn the_output_is_the_same_whatever_the_thread_count_and_never_mixed_with_an_old_one() {
    let inputs = vec![data("sf_selfplay_played_out.pgn")];
    let (one_thread, two_threads) = (tempdir("t1"), tempdir("t2"));
    let (a, _) = convert(&inputs, &one_thread, 1, ConvertSettings::default());
    let (b, _) = convert(&inputs, &two_threads, 2, ConvertSettings::default());
    assert_eq!((a.games_written, a.positions, a.bytes_written), (b.games_written, b.positions, b.bytes_written));
    for number in 0..a.games_written {
        let name = format!("supervised-{}/game_{number:06}.gz", number / 40);
        assert_eq!(std::fs::read(one_thread.join(&name)).unwrap(), std::fs::read(two_threads.join(&name)).unwrap());
    }
    let job = ConvertJob {
        output_dir: one_thread.clone(),
        name: "supervised".into(),
        files_per_dir: 40,
        max_games: Some(3),
        settings: ConvertSettings::default(),
        engine: None,
    };
    assert!(matches!(capa_lc0::convert_files(&inputs, &job, &pool(1), |_| {}), Err(ConvertError::OutputExists { .. })));
    let limited = ConvertJob { name: "limited".into(), ..job };
    assert_eq!(capa_lc0::convert_files(&inputs, &limited, &pool(1), |_| {}).unwrap().games_written, 3);
    for dir in [one_thread, two_threads] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn compressed_inputs_read_and_a_truncated_one_is_an_error_naming_it() {
    use std::io::Write;
    let dir = tempdir("gz");
    let text = std::fs::read(data("sf_selfplay_played_out.pgn")).unwrap();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&text).unwrap();
    let gz = encoder.finish().unwrap();
    std::fs::write(dir.join("games.pgn.gz"), &gz).unwrap();
    let (summary, _) = convert(&[dir.join("games.pgn.gz")], &dir.join("out"), 2, ConvertSettings::default());
    assert_eq!(summary.games_written, 24);
    let zst = ruzstd::encoding::compress_to_vec(text.as_slice(), ruzstd::encoding::CompressionLevel::Fastest);
    std::fs::write(dir.join("games.pgn.zst"), &zst).unwrap();
    let (summary, _) = convert(&[dir.join("games.pgn.zst")], &dir.join("out-zst"), 2, ConvertSettings::default());
    assert_eq!(summary.games_written, 24);
    std::fs::write(dir.join("cut.pgn.zst"), &zst[..zst.len() / 2]).unwrap();
    let job = ConvertJob {
        output_dir: dir.join("out3"),
        name: "x".into(),
        files_per_dir: 10,
        max_games: None,
        settings: ConvertSettings::default(),
        engine: None,
    };
    match capa_lc0::convert_files(&[dir.join("cut.pgn.zst")], &job, &pool(1), |_| {}) {
        Err(e @ ConvertError::Read { .. }) => assert!(e.to_string().contains("cut.pgn.zst"), "{e}"),
        other => panic!("{other:?}"),
    }
    std::fs::write(dir.join("cut.pgn.gz"), &gz[..gz.len() / 2]).unwrap();
    let job = ConvertJob {
        output_dir: dir.join("out2"),
        name: "x".into(),
        files_per_dir: 10,
        max_games: None,
        settings: ConvertSettings::default(),
        engine: None,
    };
    match capa_lc0::convert_files(&[dir.join("cut.pgn.gz")], &job, &pool(1), |_| {}) {
        Err(e @ ConvertError::Read { .. }) => assert!(e.to_string().contains("cut.pgn.gz"), "{e}"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(dir).unwrap();
}

fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capa-lc0-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any bytes read as PGN and converted: errors or records, never a panic.
    #[test]
    fn any_text_converts_or_is_skipped_without_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut reader = PgnReader::new(bytes.as_slice());
        while let Ok(Some(game)) = reader.next_game() {
            for eval in [EvalSource::Static { r50_damp_start: 40 }, EvalSource::PgnComments] {
                if let Ok(converted) = convert_game(&game, &ConvertSettings { eval, ..ConvertSettings::default() }, None) {
                    prop_assert!(capa_lc0::game_problems(&converted.records).is_empty());
                }
            }
        }
    }

    /// PGN-shaped text built from real tokens, mangled.
    #[test]
    fn mangled_pgn_never_panics(
        tokens in proptest::collection::vec(
            prop::sample::select(vec!["1.", "e4", "e5", "Nf3", "{", "}", "(", ")", "[FEN \"8/8 w\"]", "1-0", "*", "O-O", "exd5", "$1", ";x\n", "\n", "[%eval #-2]", "+0.5/3"]),
            0..60,
        )
    ) {
        let text = tokens.join(" ");
        let mut reader = PgnReader::new(text.as_bytes());
        while let Ok(Some(game)) = reader.next_game() {
            let _ = convert_game(&game, &ConvertSettings { eval: EvalSource::PgnComments, ..ConvertSettings::default() }, None);
        }
    }
}

#[test]
fn evals_are_labelled_for_the_side_to_move_and_the_fit_recovers_a_known_model() {
    let pgn = "[FEN \"4k3/8/8/8/8/8/8/4K2R b K - 0 1\"]\n[Result \"1-0\"]\n\n1... Kd7 {-3.10/12 0.1s} 2. Rh7+ {+3.50/12} Kd6 { [%eval 4.0] } 1-0\n";
    let labelled = capa_lc0::labelled_evals(&games(pgn)[0]);
    let expected = [(-3.1, -1), (3.5, 1), (4.0, 1)];
    assert_eq!(labelled.len(), 3);
    for (got, (eval, result)) in labelled.iter().zip(expected) {
        assert!(close(got.eval, eval, 1e-6) && got.result == result, "{got:?}");
    }
    assert!(capa_lc0::labelled_evals(&games("1. e4 {+0.3/1} *\n")[0]).is_empty(), "no result, no labels");
    // Outcomes drawn exactly from a model are fitted back to it.
    let truth = WdlModel { scale: 1.4, spread: 0.3 };
    let mut bands = capa_lc0::EvalBands::default();
    for step in -120..=120 {
        let eval = step as f32 / 40.0 + 0.003;
        let (q, d) = truth.q_d(eval);
        let (w, l) = ((1.0 + q - d) / 2.0, (1.0 - q - d) / 2.0);
        for (share, result) in [(w, 1), (d, 0), (l, -1)] {
            for _ in 0..(share * 1000.0).round() as usize {
                bands.add(capa_lc0::LabelledEval { eval, result });
            }
        }
    }
    let (fitted, rmse) = bands.fit();
    assert!(rmse < 0.02, "{rmse}");
    assert!(close(fitted.scale, 1.4, 0.1) && close(fitted.spread, 0.3, 0.03), "{fitted:?}");
    let (rate, spread, _) = bands.equal_draw_rate().unwrap();
    assert!(close(spread, capa_lc0::implied_spread(rate), 1e-6));
    // The seed's inversion: spread 0.21 draws 98.3% at equality.
    assert!(close(capa_lc0::implied_spread(0.983), 0.21, 0.005), "{}", capa_lc0::implied_spread(0.983));
    // The seed: "at +0.37 it claims Q=+0.25".
    assert!(close(capa_lc0::lc0_display_q(0.37), 0.25, 2e-3), "{}", capa_lc0::lc0_display_q(0.37));
}

// Packing converted trees into archives, and deduplication.

/// Converts the first `games` games of the sample `pgn` into
/// `<out>/supervised-N/` folders of `per_dir` game files.
fn convert_some(
    pgn: &str,
    out: &Path,
    games: u64,
    per_dir: u64,
    settings: ConvertSettings,
) -> capa_lc0::ConvertSummary {
    let job = ConvertJob {
        output_dir: out.to_path_buf(),
        name: "supervised".into(),
        files_per_dir: per_dir,
        max_games: Some(games),
        settings,
        engine: None,
    };
    capa_lc0::convert_files(&[data(pgn)], &job, &pool(2), |_| {}).unwrap()
}

/// Runs the system `tar` (the oracle) in `dir`; its stdout lines.
fn system_tar(dir: &Path, args: &[&str]) -> Vec<String> {
    let output = std::process::Command::new("tar").args(args).current_dir(dir).output().expect("the tar program");
    assert!(output.status.success(), "tar {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(str::to_string).collect()
}

/// Packs; the summary and the names of the archives written, in order.
fn pack(job: &capa_lc0::PackJob) -> (capa_lc0::PackSummary, Vec<String>) {
    let mut written = Vec::new();
    let summary = capa_lc0::pack_chunks(job, |event| {
        if let capa_lc0::PackEvent::Written { archive, .. } = event {
            written.push(archive.file_name().unwrap().to_string_lossy().into_owned());
        }
    })
    .unwrap();
    (summary, written)
}

/// The names of the files in `dir`.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn packed_archives_list_and_extract_with_tar_as_the_source_tree() {
    let dir = tempdir("pack");
    let src = dir.join("src");
    assert_eq!(convert_some("sf_selfplay_played_out.pgn", &src, 24, 2, ConvertSettings::default()).games_written, 24);
    // Natural order: supervised-10 and -11 come last.
    let members: Vec<String> = (0..24).map(|n| format!("supervised-{}/game_{n:06}.gz", n / 2)).collect();
    let gz = capa_lc0::ArchiveCompression::Gz;
    let cases = [
        (1, capa_lc0::ArchiveCompression::None, (0..12).map(|k| format!("supervised-{k}.tar")).collect::<Vec<_>>()),
        (2, gz, (0..6).map(|k| format!("supervised-{}--supervised-{}.tar.gz", 2 * k, 2 * k + 1)).collect()),
        (
            11,
            capa_lc0::ArchiveCompression::None,
            vec!["supervised-0--supervised-10.tar".to_string(), "supervised-11.tar".to_string()],
        ),
    ];
    for (case, (group, compress, archives)) in cases.into_iter().enumerate() {
        let out = dir.join(format!("out-{case}"));
        let job = capa_lc0::PackJob { group, compress, ..capa_lc0::PackJob::new(&src, &out) };
        let (summary, written) = pack(&job);
        assert_eq!(written, archives, "group {group}");
        assert_eq!(
            (summary.archives_written, summary.archives_skipped, summary.members),
            (archives.len() as u64, 0, 24)
        );
        let mut sorted = archives.clone();
        sorted.sort();
        assert_eq!(file_names(&out), sorted, "no .partial is left");
        let bytes: u64 = archives.iter().map(|a| std::fs::metadata(out.join(a)).unwrap().len()).sum();
        assert_eq!(summary.bytes, bytes);
        let flag = if compress == gz { "-tzf" } else { "-tf" };
        let listed: Vec<String> = archives.iter().flat_map(|a| system_tar(&out, &[flag, a.as_str()])).collect();
        assert_eq!(listed, members, "group {group}");
        let extracted = dir.join(format!("extracted-{case}"));
        std::fs::create_dir_all(&extracted).unwrap();
        for archive in &archives {
            let path = out.join(archive);
            system_tar(&extracted, &["-xf", path.to_str().unwrap()]);
        }
        assert_eq!(file_names(&extracted), file_names(&src));
        for member in &members {
            assert_eq!(std::fs::read(extracted.join(member)).unwrap(), std::fs::read(src.join(member)).unwrap());
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn resuming_skips_existing_archives_and_without_it_an_existing_one_is_an_error() {
    let dir = tempdir("pack-resume");
    let (src, out) = (dir.join("src"), dir.join("out"));
    convert_some("sf_selfplay_played_out.pgn", &src, 6, 1, ConvertSettings::default());
    let job = capa_lc0::PackJob::new(&src, &out);
    assert_eq!(pack(&job).0.archives_written, 6);
    // One archive lost, one replaced by a marker, a killed run's partial left.
    std::fs::remove_file(out.join("supervised-5.tar")).unwrap();
    std::fs::write(out.join("supervised-3.tar"), b"not touched").unwrap();
    std::fs::write(out.join("supervised-5.tar.partial"), b"stale").unwrap();
    match capa_lc0::pack_chunks(&job, |_| {}) {
        Err(e @ capa_lc0::PackError::ArchiveExists { .. }) => {
            assert!(e.to_string().contains("supervised-0.tar"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert!(!out.join("supervised-5.tar").exists(), "nothing is written");
    assert_eq!(std::fs::read(out.join("supervised-5.tar.partial")).unwrap(), b"stale");
    let (summary, written) = pack(&capa_lc0::PackJob { resume: true, ..job });
    assert_eq!((summary.archives_written, summary.archives_skipped, summary.members), (1, 5, 1));
    assert_eq!(written, ["supervised-5.tar"]);
    assert_eq!(std::fs::read(out.join("supervised-3.tar")).unwrap(), b"not touched");
    assert!(!out.join("supervised-5.tar.partial").exists());
    assert_eq!(system_tar(&out, &["-tf", "supervised-5.tar"]), ["supervised-5/game_000005.gz"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn packing_a_missing_file_or_empty_source_is_an_error_naming_it() {
    let dir = tempdir("pack-bad");
    let out = dir.join("out");
    let error =
        |source: &Path| capa_lc0::pack_chunks(&capa_lc0::PackJob::new(source, &out), |_| {}).unwrap_err().to_string();
    assert!(error(&dir.join("nowhere")).contains("nowhere"));
    std::fs::write(dir.join("file.txt"), b"x").unwrap();
    assert!(error(&dir.join("file.txt")).contains("file.txt is not a folder"));
    std::fs::create_dir_all(dir.join("empty/sub")).unwrap();
    std::fs::write(dir.join("empty/sub/notes.txt"), b"x").unwrap();
    std::fs::write(dir.join("empty/loose.gz"), b"x").unwrap();
    let message = error(&dir.join("empty"));
    assert!(message.contains("empty") && message.contains("no chunk folder"), "{message}");
    let zero = capa_lc0::PackJob { group: 0, ..capa_lc0::PackJob::new(dir.join("empty"), &out) };
    assert!(matches!(capa_lc0::pack_chunks(&zero, |_| {}), Err(capa_lc0::PackError::Settings(_))));
    assert!(!out.exists(), "nothing is written");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A deduplication into `out` with the tool's defaults otherwise.
fn dedup_job(out: &Path) -> capa_lc0::DedupJob {
    capa_lc0::DedupJob { output_dir: out.to_path_buf(), ..capa_lc0::DedupJob::default() }
}

/// The records of the `.gz` files of `dirs`, in dedup's reading order.
fn tree_records(dirs: &[&Path]) -> Vec<V6Record> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { walk(&path, out) } else { out.push(path) }
        }
    }
    let mut records = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        walk(dir, &mut files);
        files.sort();
        for file in files {
            records.extend(capa_lc0::read_game_file(&file).unwrap());
        }
    }
    records
}

/// Every output record of `job`, checked against Lc0's invariants.
fn dedup_output(job: &capa_lc0::DedupJob) -> Vec<V6Record> {
    let mut records = Vec::new();
    for number in 0.. {
        let path = job.chunk_path(number);
        if !path.exists() {
            break;
        }
        records.extend(capa_lc0::read_game_file(&path).unwrap());
    }
    for record in &records {
        assert!(record.problems().is_empty(), "{:?}", record.problems());
    }
    records
}

/// The records grouped by position (planes, castling, side to move,
/// rule-50 clock), groups in first-seen order: the test's own dedup.
fn by_position(records: &[V6Record]) -> Vec<Vec<&V6Record>> {
    let mut index = std::collections::HashMap::new();
    let mut groups: Vec<Vec<&V6Record>> = Vec::new();
    for record in records {
        let key = (record.planes.to_vec(), record.castling, record.side_to_move_or_enpassant, record.rule50_count);
        let at = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[at].push(record);
    }
    groups
}

fn mean(group: &[&V6Record], field: impl Fn(&V6Record) -> f32) -> f32 {
    (group.iter().map(|r| f64::from(field(r))).sum::<f64>() / group.len() as f64) as f32
}

#[test]
fn deduplicating_two_conversions_of_the_same_games_merges_them_into_their_means() {
    let dir = tempdir("dedup-twice");
    let (a, b) = (dir.join("a"), dir.join("b"));
    // Games 2 and 3 start from their own FENs: no position repeats.
    let converted = convert_some("sf_selfplay_a.pgn", &a, 3, 40, ConvertSettings::default());
    // Other Q, D and policies for the same positions.
    let other = ConvertSettings { wdl: WdlModel { scale: 1.6, spread: 0.3 }, visit_budget: 50, ..Default::default() };
    convert_some("sf_selfplay_a.pgn", &b, 3, 40, other);
    let job = dedup_job(&dir.join("out"));
    let summary = capa_lc0::dedup_files(&[a.clone(), b.clone()], &job, |_| {}).unwrap();
    let inputs = tree_records(&[&a, &b]);
    let groups = by_position(&inputs);
    assert_eq!(summary.records_read, 2 * converted.positions);
    assert_eq!(summary.records_written, converted.positions, "these games repeat no position: half is left");
    assert_eq!(groups.len() as u64, summary.records_written);
    assert_eq!((summary.merged, summary.mask_mismatches, summary.windows), (converted.positions, 0, 1));
    let output = dedup_output(&job);
    assert_eq!(output.len(), groups.len());
    for (merged, group) in output.iter().zip(&groups) {
        let first = group[0];
        assert_eq!(
            (merged.planes, merged.played_idx, merged.best_idx),
            (first.planes, first.played_idx, first.best_idx)
        );
        assert_eq!(
            (merged.result_q, merged.plies_left, merged.visits),
            (first.result_q, first.plies_left, first.visits)
        );
        for (field, value) in [
            (mean(group, |r| r.best_q), merged.best_q),
            (mean(group, |r| r.root_q), merged.root_q),
            (mean(group, |r| r.best_d), merged.best_d),
            (mean(group, |r| r.root_d), merged.root_d),
        ] {
            assert!(close(field, value, 1e-6), "{field} vs {value}");
        }
        for (i, &p) in merged.probabilities.iter().enumerate() {
            let expected = if first.probabilities[i] == -1.0 { -1.0 } else { mean(group, |r| r.probabilities[i]) };
            assert!(close(p, expected, 1e-6), "policy {i}: {p} vs {expected}");
        }
    }
    assert!(output.iter().zip(&groups).any(|(m, g)| m.best_q != g[0].best_q), "the values differ and are merged");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_q_ratio_of_0_makes_q_the_result() {
    let dir = tempdir("dedup-q");
    let a = dir.join("a");
    convert_some("sf_selfplay_played_out.pgn", &a, 3, 40, ConvertSettings::default());
    let job = capa_lc0::DedupJob { q_ratio: 0.0, ..dedup_job(&dir.join("out")) };
    capa_lc0::dedup_files(std::slice::from_ref(&a), &job, |_| {}).unwrap();
    let inputs = tree_records(&[&a]);
    let groups = by_position(&inputs);
    let output = dedup_output(&job);
    assert_eq!(output.len(), groups.len());
    for (merged, group) in output.iter().zip(&groups) {
        let result = mean(group, |r| r.result_q);
        assert!(close(merged.best_q, result, 1e-6) && close(merged.root_q, result, 1e-6), "{merged:?}");
        if group.len() == 1 {
            assert_eq!((merged.best_q, merged.root_q), (merged.result_q, merged.result_q));
        }
    }
    for q_ratio in [-0.1, 1.5, f64::NAN] {
        let bad = capa_lc0::DedupJob { q_ratio, ..dedup_job(&dir.join("bad")) };
        assert!(matches!(
            capa_lc0::dedup_files(std::slice::from_ref(&a), &bad, |_| {}),
            Err(capa_lc0::DedupError::Settings(_))
        ));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_window_of_one_merges_nothing() {
    let dir = tempdir("dedup-window");
    let a = dir.join("a");
    let converted = convert_some("sf_selfplay_played_out.pgn", &a, 2, 40, ConvertSettings::default());
    let job = capa_lc0::DedupJob { uniq_buffer: 1, ..dedup_job(&dir.join("out")) };
    // The same folder twice: every position is repeated, in another window.
    let summary = capa_lc0::dedup_files(&[a.clone(), a.clone()], &job, |_| {}).unwrap();
    let n = 2 * converted.positions;
    assert_eq!((summary.records_read, summary.records_written, summary.merged, summary.windows), (n, n, 0, n));
    let inputs = tree_records(&[&a, &a]);
    assert_eq!(format!("{:?}", dedup_output(&job)), format!("{inputs:?}"), "unchanged, in order (NaN-aware)");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn chunks_per_file_splits_the_output_into_files_and_folders() {
    let dir = tempdir("dedup-split");
    let a = dir.join("a");
    let converted = convert_some("sf_selfplay_played_out.pgn", &a, 3, 40, ConvertSettings::default());
    let out = dir.join("out");
    let job = capa_lc0::DedupJob { chunks_per_file: 100, files_per_dir: 3, uniq_buffer: 1, ..dedup_job(&out) };
    let summary = capa_lc0::dedup_files(std::slice::from_ref(&a), &job, |_| {}).unwrap();
    let n = converted.positions;
    let files = n.div_ceil(100);
    assert!(files > 3, "more than one folder: {n} records");
    assert_eq!((summary.records_written, summary.files_written), (n, files));
    for number in 0..files {
        let path = out.join(format!("deduped-{}/chunk_{number:06}.gz", number / 3));
        let expected = if number + 1 == files { n - 100 * (files - 1) } else { 100 };
        assert_eq!(capa_lc0::read_game_file(&path).unwrap().len() as u64, expected, "{}", path.display());
    }
    assert_eq!(dedup_output(&job).len() as u64, n);
    let folders = file_names(&out);
    assert_eq!(folders.len() as u64, files.div_ceil(3), "{folders:?}");
    assert!(file_names(&out.join("deduped-0")).iter().all(|name| name.starts_with("chunk_")), "no temporary is left");
    match capa_lc0::dedup_files(std::slice::from_ref(&a), &job, |_| {}) {
        Err(e @ capa_lc0::DedupError::OutputExists { .. }) => assert!(e.to_string().contains("deduped-0"), "{e}"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_truncated_or_partial_v6_file_is_an_error_naming_it() {
    let dir = tempdir("dedup-cut");
    let a = dir.join("a");
    convert_some("sf_selfplay_played_out.pgn", &a, 1, 40, ConvertSettings::default());
    let game = std::fs::read(a.join("supervised-0/game_000000.gz")).unwrap();
    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("cut.gz"), &game[..game.len() / 2]).unwrap();
    let records = capa_lc0::read_game_file(&a.join("supervised-0/game_000000.gz")).unwrap();
    let mut raw = Vec::new();
    records[0].write_to(&mut raw);
    records[1].write_to(&mut raw);
    raw.truncate(V6_SIZE + 100);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &raw).unwrap();
    std::fs::write(bad.join("partial.gz"), encoder.finish().unwrap()).unwrap();
    let job = dedup_job(&dir.join("out"));
    for name in ["cut.gz", "partial.gz"] {
        match capa_lc0::dedup_files(&[a.clone(), bad.join(name)], &job, |_| {}) {
            Err(e @ capa_lc0::DedupError::Read { .. }) => assert!(e.to_string().contains(name), "{e}"),
            other => panic!("{other:?}"),
        }
    }
    assert!(!dir.join("out").exists(), "nothing is written");
    match capa_lc0::dedup_files(&[dir.join("nowhere")], &job, |_| {}) {
        Err(e @ capa_lc0::DedupError::Input { .. }) => assert!(e.to_string().contains("nowhere"), "{e}"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_position_seen_with_other_legal_moves_is_kept_apart() {
    let dir = tempdir("dedup-mask");
    let a = dir.join("a");
    convert_some("sf_selfplay_played_out.pgn", &a, 1, 40, ConvertSettings::default());
    let record = capa_lc0::read_game_file(&a.join("supervised-0/game_000000.gz")).unwrap().remove(3);
    let mut other = record.clone();
    let illegal = other.probabilities.iter().position(|&p| p == -1.0).unwrap();
    other.probabilities[illegal] = 0.0;
    let input = dir.join("mixed.gz");
    std::fs::write(&input, capa_lc0::compress(&[record.clone(), other.clone(), record.clone(), other.clone()]))
        .unwrap();
    let job = dedup_job(&dir.join("out"));
    let summary = capa_lc0::dedup_files(&[input], &job, |_| {}).unwrap();
    assert_eq!((summary.records_read, summary.records_written, summary.merged, summary.mask_mismatches), (4, 2, 2, 1));
    assert_eq!(format!("{:?}", dedup_output(&job)), format!("{:?}", [record, other]));
    std::fs::remove_dir_all(dir).unwrap();
}
