//! Mates are found, proven and played; stalemate and repetition are draws.
//! Mate distances were confirmed with Stockfish and Fairy-Stockfish
//! (`go depth 20` gives `score mate N`).

use capa_mcts::{Proof, SearchParams, StopReason, UniformEvaluator};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, History};

use crate::common::{FavourEvaluator, MaterialEvaluator, params, search, tree};

/// Searches until the root is proven and checks that the best move is a
/// proven win in `mate_in` moves, and that playing it leaves no escape.
fn proves_mate<G: Game>(fen: &str, mate_in: u16, playouts: u32) {
    for material in [false, true] {
        let mut tree = tree::<G>(fen, params());
        let result = if material {
            search(&mut tree, &MaterialEvaluator, playouts)
        } else {
            search(&mut tree, &UniformEvaluator, playouts)
        };
        let best = result.best().expect("a legal move");
        assert_eq!(result.stop, StopReason::Proven, "{fen}: root not proven after {} playouts", result.playouts);
        assert_eq!(best.proof, Proof::Win { plies: 2 * mate_in - 2 }, "{fen}: best {}", best.mv);
        assert_eq!(best.pv.len(), usize::from(2 * mate_in - 1), "{fen}: the PV is the mating line {:?}", best.pv);
        let mut game = History::new(G::from_fen(fen).unwrap());
        for &m in &best.pv {
            game.play(m);
        }
        let outcome = game.outcome().expect("the PV ends the game");
        assert_eq!(outcome.reason, capa_rules::Termination::Checkmate, "{fen}: PV {:?}", best.pv);
    }
}

#[test]
fn chess_mate_in_1() {
    proves_mate::<Chess>("k7/8/1K6/8/8/8/8/7R w - - 0 1", 1, 10_000);
}

#[test]
fn chess_mate_in_2() {
    proves_mate::<Chess>("k7/8/2K5/8/8/8/8/7R w - - 0 1", 2, 50_000);
}

#[test]
fn chess_mate_in_3() {
    proves_mate::<Chess>("1k6/8/8/2K5/8/8/8/7R w - - 0 1", 3, 400_000);
}

#[test]
fn capablanca_mate_in_1() {
    proves_mate::<Capablanca>("k9/10/1K8/10/10/10/10/9C w - - 0 1", 1, 10_000);
}

#[test]
fn capablanca_mate_in_2() {
    proves_mate::<Capablanca>("k9/10/2K7/10/10/10/10/9R w - - 0 1", 2, 50_000);
}

#[test]
fn capablanca_mate_in_3() {
    proves_mate::<Capablanca>("k9/10/2K7/10/10/10/10/9A w - - 0 1", 3, 400_000);
}

#[test]
fn a_proven_mate_is_played_over_a_move_with_more_visits() {
    // The network loves Kc5, which throws the mate away; Rh8 mates.
    // One leaf per round: Kc5 takes hundreds of visits before Rh8 is tried.
    // Without the mate-in-one proof, which would settle the root at once.
    let one_at_a_time = SearchParams { parallel_sims: 1, prove_mate_in_one: false, ..params() };
    let mut tree = tree::<Chess>("k7/8/1K6/8/8/8/8/7R w - - 0 1", one_at_a_time);
    let result = search(&mut tree, &FavourEvaluator(vec!["b6c5".into()]), 10_000);
    let best = result.best().unwrap();
    assert_eq!(best.mv.to_string(), "h1h8");
    let most_visited = result.moves.iter().max_by_key(|m| m.visits).unwrap();
    assert_eq!(most_visited.mv.to_string(), "b6c5");
    assert!(most_visited.visits > best.visits, "the scenario needs the mate to have fewer visits");
}

#[test]
fn a_mate_in_one_is_proven_however_small_its_prior() {
    // The network loves Ra7, which leaves the back rank to ...Rd1 mate, and
    // after it loves ...h6, so the mate has about 1% of black's prior. One
    // leaf per round, so the test follows a single line of selection.
    let fen = "3r2k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1";
    let sharp = FavourEvaluator(vec!["a1a7".into(), "h7h6".into()]);
    let one_at_a_time = SearchParams { parallel_sims: 1, ..params() };
    let blind = SearchParams { prove_mate_in_one: false, ..one_at_a_time.clone() };
    let result = search(&mut tree::<Chess>(fen, blind), &sharp, 64);
    let blunder = result.best().unwrap();
    assert_eq!(blunder.mv.to_string(), "a1a7", "the scenario needs the search to miss the mate without the proof");
    assert_eq!(blunder.proof, Proof::Unknown);

    let result = search(&mut tree::<Chess>(fen, one_at_a_time), &sharp, 64);
    let ra7 = result.moves.iter().find(|m| m.mv.to_string() == "a1a7").unwrap();
    assert_eq!(ra7.proof, Proof::Loss { plies: 1 });
    assert_eq!(ra7.pv.iter().map(ToString::to_string).collect::<Vec<_>>(), ["a1a7", "d8d1"]);
    assert_ne!(result.best().unwrap().mv.to_string(), "a1a7");
}

#[test]
fn a_root_proven_as_it_is_expanded_teaches_its_mate() {
    // Black mates at once with ...Rd1: the root's expansion proves it, and
    // no child is visited, yet the policy target names the mate.
    let fen = "3r2k1/5ppp/8/8/8/8/R4PPP/6K1 b - - 0 1";
    let mut tree = tree::<Chess>(fen, params());
    let result = search(&mut tree, &UniformEvaluator, 1_000);
    assert_eq!(result.stop, StopReason::Proven);
    assert_eq!(result.playouts, 1, "the root's own evaluation, then the proof");
    let best = result.best().unwrap();
    assert_eq!((best.mv.to_string(), best.proof), ("d8d1".to_string(), Proof::Win { plies: 0 }));
    let target: Vec<(String, f32)> =
        result.visit_distribution().filter(|&(_, p)| p > 0.0).map(|(m, p)| (m.to_string(), p)).collect();
    assert_eq!(target, [("d8d1".to_string(), 1.0)]);
}

#[test]
fn stalemate_is_a_draw() {
    // Qb6 stalemates; Qb7 and Qb8 mate. Without the mate-in-one proof, the
    // root would be settled before Qb6 is searched.
    let searched = SearchParams { prove_mate_in_one: false, ..params() };
    let mut tree = tree::<Chess>("k7/8/2K5/8/8/8/8/1Q6 w - - 0 1", searched);
    let result = search(&mut tree, &UniformEvaluator, 5_000);
    let stalemate = result.moves.iter().find(|m| m.mv.to_string() == "b1b6").unwrap();
    assert_eq!(stalemate.proof, Proof::Draw);
    assert_eq!(stalemate.q, 0.0);
    assert_eq!(stalemate.d, 1.0);
    assert!(matches!(result.best().unwrap().proof, Proof::Win { plies: 0 }));
}

#[test]
fn repetition_is_a_draw() {
    // After 1.Nf3 Nf6 2.Ng1 Ng8 the start position stands for the second time.
    let mut game = History::new(Chess::startpos());
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"] {
        let m = game.current().parse_move(uci).unwrap();
        game.play(m);
    }
    // Two-fold: the knight dance from the root repeats the root (a draw in
    // the tree); without the two-fold rule only a third occurrence is.
    for two_fold in [true, false] {
        let mut p = params();
        p.two_fold_draws = two_fold;
        let mut tree = capa_mcts::Tree::new(game.clone(), p, 1).unwrap();
        search(&mut tree, &UniformEvaluator, 3_000);
        for uci in ["g1f3", "g8f6", "f3g1"] {
            let m = tree.history().current().parse_move(uci).unwrap();
            tree.advance(m).unwrap();
        }
        let result = search(&mut tree, &UniformEvaluator, 3_000);
        let back = result.moves.iter().find(|m| m.mv.to_string() == "f6g8").unwrap();
        // f6g8 now makes the third occurrence of the start position: a draw either way.
        assert_eq!(back.proof, Proof::Draw, "two_fold_draws = {two_fold}");
    }
    // The knight dance from the root brings the root back at depth 4: a
    // draw under the two-fold rule (its visits say d = 1); without it the
    // line goes on to the third occurrence at depth 8, past network
    // evaluations (d = 0.4) on the way.
    let dance = ["g1f3", "g8f6", "f3g1", "f6g8"];
    let draw_share = |two_fold, analysis: bool| {
        let p = SearchParams { two_fold_draws: two_fold, ..params() };
        let game = History::new(Chess::startpos());
        let mut tree = if analysis {
            capa_mcts::Tree::analysis(game, p, 1, 1_000_000).unwrap()
        } else {
            capa_mcts::Tree::new(game, p, 1).unwrap()
        };
        let result = search(&mut tree, &FavourEvaluator(dance.map(String::from).to_vec()), 3_000);
        let first = result.moves.iter().find(|m| m.mv.to_string() == "g1f3").unwrap();
        assert_eq!(first.pv.iter().take(4).map(ToString::to_string).collect::<Vec<_>>(), dance);
        first.d
    };
    let (with, without) = (draw_share(true, false), draw_share(false, false));
    assert!(with > 0.9, "two-fold: d = {with}");
    assert!(without < with - 0.1, "no two-fold: d = {without}, two-fold: d = {with}");
    // Analysis mode shares the start position's node, so the dance leads back
    // into it: a path-only draw at the repetition, never stored in the node.
    let shared = draw_share(true, true);
    assert!(shared > 0.85, "analysis, two-fold: d = {shared}");

    // Every move loses: a temperature still plays one.
    let mut lost = tree::<Chess>("k7/8/1K6/8/8/8/8/7R b - - 0 1", params());
    let result = search(&mut lost, &UniformEvaluator, 1_000);
    assert!(result.moves.iter().all(|m| matches!(m.proof, Proof::Loss { .. })));
    assert_eq!(result.choose(1.0, &mut capa_rules::Rng::new(1)), Some(result.best().unwrap().mv));
}

#[test]
fn material_wins_a_hanging_piece() {
    // A rook takes an undefended queen (chess) or chancellor (Capablanca).
    let cases = [("4k3/8/8/3q4/8/8/8/3RK3 w - - 0 1", "d1d5"), ("4k5/10/10/4r5/10/10/10/4C1K3 b - - 0 1", "e5e1")];
    let chess = search(&mut tree::<Chess>(cases[0].0, params()), &MaterialEvaluator, 3_000);
    assert_eq!(chess.best().unwrap().mv.to_string(), cases[0].1);
    // A rook against nothing: tanh(5 / 10) = 0.46.
    assert!(chess.best().unwrap().q > 0.4, "a rook up: q = {}", chess.best().unwrap().q);
    let capablanca = search(&mut tree::<Capablanca>(cases[1].0, params()), &MaterialEvaluator, 3_000);
    assert_eq!(capablanca.best().unwrap().mv.to_string(), cases[1].1);
}

#[test]
fn a_third_occurrence_through_the_game_history_is_a_proven_draw_in_both_modes() {
    // The start position stands twice (plies 0 and 4); Black's knight
    // returning to g8 makes the third occurrence on every path.
    let mut game = History::new(Chess::startpos());
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"] {
        let m = game.current().parse_move(uci).unwrap();
        game.play(m);
    }
    for analysis in [false, true] {
        let mut tree = if analysis {
            capa_mcts::Tree::analysis(game.clone(), params(), 1, 1_000_000).unwrap()
        } else {
            capa_mcts::Tree::new(game.clone(), params(), 1).unwrap()
        };
        let result = search(&mut tree, &FavourEvaluator(vec!["f6g8".into()]), 3_000);
        let back = result.moves.iter().find(|m| m.mv.to_string() == "f6g8").unwrap();
        assert_eq!(back.proof, Proof::Draw, "analysis {analysis}");
        assert!(back.visits > 100, "analysis {analysis}: the drawing move gets its visits ({})", back.visits);
        assert_eq!(back.d, 1.0, "analysis {analysis}");
    }
}
