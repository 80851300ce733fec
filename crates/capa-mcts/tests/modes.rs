//! Tree reuse, the KLD stop, determinism, analysis mode, noise and bad evaluators.

use capa_mcts::{
    DirichletNoise, EvalError, Evaluations, Evaluator, KldStop, LeafRequest, Limits, RandomEvaluator, SearchError,
    SearchParams, StopReason, Tree, UniformEvaluator,
};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::{Game, History};

use crate::common::{params, search, tree};

#[test]
fn tree_reuse_keeps_the_childs_visits() {
    let mut tree = Tree::new(History::new(Capablanca::startpos()), params(), 1).unwrap();
    let result = search(&mut tree, &RandomEvaluator, 4_000);
    let best = result.best().unwrap().clone();
    assert!(best.visits > 100);
    tree.advance(best.mv).unwrap();
    assert_eq!(tree.root_visits(), best.visits);
    let again = tree.search(&RandomEvaluator, Limits::visits(best.visits + 500)).unwrap();
    assert_eq!(again.visits, best.visits + 500);
    assert_eq!(again.playouts, 500);
    let child = again.moves.iter().find(|m| Some(&m.mv) == best.pv.get(1)).unwrap();
    assert!(child.visits > 0, "the reused subtree is the one below the move played");
    assert!(tree.advance(best.mv).is_err(), "{} is not legal for the other side", best.mv);
}

#[test]
fn kld_stop_fires_on_a_settled_tree_only() {
    let kld = KldStop { interval: 100, min_gain_per_node: 1e-4 };
    let settled_params = SearchParams { kld_stop: Some(kld), ..params() };
    let mut settled = Tree::new(History::new(Chess::startpos()), settled_params.clone(), 1).unwrap();
    search(&mut settled, &RandomEvaluator, 20_000);
    // The first search stops on its own long before 20k, once the
    // distribution has settled; a second search on the same tree stops
    // within its first few checks.
    let first = search(&mut settled, &RandomEvaluator, 20_000);
    assert_eq!(first.stop, StopReason::KldGain);
    let again = search(&mut settled, &RandomEvaluator, 20_000);
    assert_eq!(again.stop, StopReason::KldGain);
    assert!(again.playouts <= 400, "stopped after {} playouts", again.playouts);
    assert!(again.kld_gain.unwrap() < 1e-4);
    // Sliced into searches of one interval and a playout, as `capa uci`
    // slices a search on a slow machine: the check on the last round counts.
    for slice in 1.. {
        let result = settled.search(&RandomEvaluator, Limits::playouts(kld.interval + 1)).unwrap();
        if result.stop == StopReason::KldGain {
            break;
        }
        assert!(slice < 4, "no KLD stop in {slice} slices: gain {:?}", result.kld_gain);
    }

    let mut fresh = Tree::new(History::new(Chess::startpos()), settled_params, 1).unwrap();
    let result = search(&mut fresh, &RandomEvaluator, 300);
    assert_eq!(result.stop, StopReason::Limit, "gain {:?}", result.kld_gain);
}

#[test]
fn same_seed_same_search() {
    for noise in [None, Some(DirichletNoise::default())] {
        let p = SearchParams { noise, ..params() };
        let run = || {
            let mut tree = Tree::new(History::new(Capablanca::startpos()), p.clone(), 42).unwrap();
            search(&mut tree, &RandomEvaluator, 3_000).moves
        };
        assert_eq!(run(), run(), "noise {noise:?}");
    }
}

#[test]
fn noise_changes_the_root_priors() {
    let quiet = search(&mut tree::<Chess>(&Chess::startpos().fen(), params()), &UniformEvaluator, 500);
    let p = SearchParams { noise: Some(DirichletNoise::default()), ..params() };
    let noisy = search(&mut tree::<Chess>(&Chess::startpos().fen(), p), &UniformEvaluator, 500);
    let spread = |r: &capa_mcts::SearchResult<Chess>| {
        let priors: Vec<f32> = r.moves.iter().map(|m| m.prior).collect();
        priors.iter().cloned().fold(0.0, f32::max) - priors.iter().cloned().fold(1.0, f32::min)
    };
    assert!(spread(&quiet) < 1e-3, "uniform priors stay uniform without noise");
    assert!(spread(&noisy) > 0.01, "noise spreads them");
    let sum: f32 = noisy.moves.iter().map(|m| m.prior).sum();
    assert!((sum - 1.0).abs() < 1e-2, "noisy priors still sum to 1: {sum}");
}

#[test]
fn analysis_mode_merges_transpositions() {
    let fen = "8/p7/4k3/8/8/4K3/7P/8 w - - 0 1";
    let start = Chess::from_fen(fen).unwrap();
    let line = |moves: &[&str]| {
        let mut game = History::new(start.clone());
        for uci in moves {
            let m = game.current().parse_move(uci).unwrap();
            game.play(m);
        }
        game
    };
    let mut analysis = Tree::analysis(History::new(start.clone()), params(), 1, 1_000_000).unwrap();
    search(&mut analysis, &UniformEvaluator, 30_000);
    analysis.set_history(line(&["e3d3", "a7a6", "h2h3"])).unwrap();
    let via_king_first = analysis.root_visits();
    analysis.set_history(line(&["h2h3", "a7a6", "e3d3"])).unwrap();
    let via_pawn_first = analysis.root_visits();
    assert!(via_king_first > 0);
    assert_eq!(via_king_first, via_pawn_first, "both move orders reach one node");

    // A tree keeps the two apart: each order holds only its own visits.
    let mut plain = Tree::new(History::new(start.clone()), params(), 1).unwrap();
    search(&mut plain, &UniformEvaluator, 30_000);
    let mut king_first = plain.clone();
    king_first.set_history(line(&["e3d3", "a7a6", "h2h3"])).unwrap();
    let mut pawn_first = plain;
    pawn_first.set_history(line(&["h2h3", "a7a6", "e3d3"])).unwrap();
    assert!(king_first.root_visits() + pawn_first.root_visits() <= via_king_first + 1);

    // Above the node limit only what the root reaches is kept.
    let mut small = Tree::analysis(History::new(start.clone()), params(), 1, 2_000).unwrap();
    search(&mut small, &UniformEvaluator, 5_000);
    // After a pawn move no position with the pawn behind is reachable.
    small.set_history(line(&["h2h3"])).unwrap();
    let before = small.node_count();
    let visits = small.root_visits();
    search(&mut small, &UniformEvaluator, 10);
    assert!(small.node_count() < before, "compacted to the root's subgraph");
    assert_eq!(small.root_visits(), visits + 10);
}

/// Answers with one prior too few.
struct ShortEvaluator;

impl<G: Game> Evaluator<G> for ShortEvaluator {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        UniformEvaluator.evaluate(batch, out)?;
        if batch.len() > 1 {
            out.clear();
            for request in batch {
                let n = request.legal_moves().len().saturating_sub(1);
                out.push(std::iter::repeat_n(1.0, n), capa_mcts::Value { wdl: [0.3, 0.4, 0.3], moves_left: 1.0 });
            }
        }
        Ok(())
    }
}

/// Fails after the first batch, as a lost GPU would.
struct FailingEvaluator;

impl<G: Game> Evaluator<G> for FailingEvaluator {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        if batch.len() > 1 {
            return Err("device lost".into());
        }
        UniformEvaluator.evaluate(batch, out)
    }
}

#[test]
fn a_bad_evaluator_is_an_error_not_a_corrupt_tree() {
    let mut tree = tree::<Chess>(&Chess::startpos().fen(), params());
    let err = tree.search(&ShortEvaluator, Limits::playouts(100)).unwrap_err();
    assert!(matches!(err, SearchError::BadEvaluation(_)), "{err}");
    assert!(err.to_string().contains("19 priors for a position with 20 legal moves"), "{err}");
    assert_eq!(tree.in_flight_total(), 0);

    let err = tree.search(&FailingEvaluator, Limits::playouts(100)).unwrap_err();
    assert_eq!(err.to_string(), "the evaluator failed: device lost");
    assert_eq!(tree.in_flight_total(), 0);
    // The failed search is over and is not reported later as if it had ended.
    capa_mcts::search_many(std::slice::from_mut(&mut tree), &UniformEvaluator, 1, |_, _, _| {
        panic!("no search is under way")
    })
    .unwrap();
    // The tree is still usable.
    let result = search(&mut tree, &UniformEvaluator, 100);
    assert_eq!(result.playouts, 100);
}

#[test]
fn bad_parameters_and_finished_games_are_errors() {
    let bad = SearchParams { cpuct: f32::NAN, ..SearchParams::default() };
    let err = Tree::new(History::new(Chess::startpos()), bad, 1).unwrap_err();
    assert_eq!(err.to_string(), "invalid search parameter cpuct: must be a finite number >= 0, got NaN");
    let bad = SearchParams { parallel_sims: 0, ..SearchParams::default() };
    assert!(Tree::new(History::new(Chess::startpos()), bad, 1).is_err());
    let mated =
        tree::<Chess>("k6R/8/1K6/8/8/8/8/8 b - - 0 1", params()).search(&UniformEvaluator, Limits::playouts(10));
    assert_eq!(mated.unwrap_err().to_string(), "the game is over (checkmate): there is nothing to search");
}

#[test]
fn temperature_draws_moves_by_visits() {
    let result = search(&mut tree::<Chess>(&Chess::startpos().fen(), params()), &RandomEvaluator, 2_000);
    let mut rng = capa_rules::Rng::new(9);
    assert_eq!(result.choose(0.0, &mut rng), Some(result.best().unwrap().mv));
    let total: u32 = result.moves.iter().map(|m| m.visits).sum();
    let draws = 20_000;
    let mut counts = std::collections::HashMap::new();
    for _ in 0..draws {
        *counts.entry(result.choose(1.0, &mut rng).unwrap()).or_insert(0u32) += 1;
    }
    for m in &result.moves {
        let expected = f64::from(m.visits) / f64::from(total);
        let seen = f64::from(counts.get(&m.mv).copied().unwrap_or(0)) / f64::from(draws);
        assert!((seen - expected).abs() < 0.02, "{}: drawn {seen:.3}, visit share {expected:.3}", m.mv);
    }
    let shares: f32 = result.visit_distribution().map(|(_, p)| p).sum();
    assert!((shares - 1.0).abs() < 1e-5);
}

/// Priors that are not numbers, or negative: the search falls back to
/// uniform priors rather than steering by garbage.
struct NanPriors;

impl<G: Game> Evaluator<G> for NanPriors {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        for request in batch {
            let n = request.legal_moves().len();
            // Not numbers, negative, or so small that their sum has no reciprocal.
            let priors = (0..n).map(|i| [f32::NAN, -1.0, 1e-45][i % 3]);
            out.push(priors, capa_mcts::Value { wdl: [0.2, 0.5, 0.3], moves_left: f32::INFINITY });
        }
        Ok(())
    }
}

/// A WDL that is not a distribution.
struct NanValue;

impl<G: Game> Evaluator<G> for NanValue {
    fn evaluate(&self, batch: &[LeafRequest<G>], out: &mut Evaluations) -> Result<(), EvalError> {
        for request in batch {
            let priors = std::iter::repeat_n(1.0, request.legal_moves().len());
            out.push(priors, capa_mcts::Value { wdl: [f32::NAN, 0.5, 0.5], moves_left: 10.0 });
        }
        Ok(())
    }
}

#[test]
fn garbage_priors_fall_back_to_uniform_and_garbage_values_are_errors() {
    let mut garbage = tree::<Capablanca>(&Capablanca::startpos().fen(), params());
    let result = search(&mut garbage, &NanPriors, 500);
    let uniform = 1.0 / result.moves.len() as f32;
    assert!(result.moves.iter().all(|m| (m.prior - uniform).abs() < 1e-3), "uniform priors");
    assert!(result.q.is_finite() && result.m.is_finite(), "q {} m {}", result.q, result.m);

    let err = tree::<Capablanca>(&Capablanca::startpos().fen(), params())
        .search(&NanValue, Limits::playouts(100))
        .unwrap_err();
    assert!(err.to_string().contains("WDL [NaN, 0.5, 0.5] is not a distribution"), "{err}");
}
