//! Many games searched together, in pipelined groups.

use capa_mcts::{Limits, RandomEvaluator, Tree, search_many};
use capa_rules::capablanca::Capablanca;
use capa_rules::{Game, History};

use crate::common::params;

#[test]
fn groups_play_whole_games_and_leave_nothing_in_flight() {
    for groups in [1, 3] {
        let mut trees: Vec<Tree<Capablanca>> = (0..10)
            .map(|seed| Tree::new(History::new(Capablanca::startpos()).with_ply_cap(6), params(), seed).unwrap())
            .collect();
        for tree in &mut trees {
            tree.start(Limits::playouts(200), true).unwrap();
        }
        let mut reports = vec![0; trees.len()];
        search_many(&mut trees, &RandomEvaluator, groups, |i, tree, result| {
            reports[i] += 1;
            assert_eq!(result.playouts, 200);
            assert_eq!(tree.in_flight_total(), 0);
            tree.advance(result.best().unwrap().mv).unwrap();
            if tree.history().outcome().is_none() {
                tree.start(Limits::playouts(200), true).unwrap();
            }
        })
        .unwrap();
        assert_eq!(reports, vec![6; 10], "groups = {groups}");
        for tree in &trees {
            assert_eq!(tree.history().moves().len(), 6);
            assert_eq!(tree.in_flight_total(), 0);
        }
    }
}

#[test]
fn grouping_does_not_change_results() {
    let run = |groups| {
        let mut trees: Vec<Tree<Capablanca>> =
            (0..6).map(|seed| Tree::new(History::new(Capablanca::startpos()), params(), seed).unwrap()).collect();
        for tree in &mut trees {
            tree.start(Limits::playouts(500), true).unwrap();
        }
        let mut results = vec![None; trees.len()];
        search_many(&mut trees, &RandomEvaluator, groups, |i, _, r| results[i] = Some(r.moves)).unwrap();
        results
    };
    assert_eq!(run(1), run(4));
}

#[test]
fn a_search_that_ends_as_it_starts_is_reported() {
    // Mate in 2: once White's first search proves it, every later search
    // starts on a proven root and ends at once; each must still be reported.
    let start = capa_rules::chess::Chess::from_fen("k7/8/2K5/8/8/8/8/7R w - - 0 1").unwrap();
    let mut trees = vec![Tree::new(History::new(start), params(), 1).unwrap()];
    trees[0].start(Limits::playouts(50_000), true).unwrap();
    let mut playouts = Vec::new();
    search_many(&mut trees, &RandomEvaluator, 1, |_, tree, result| {
        playouts.push(result.playouts);
        tree.advance(result.best().unwrap().mv).unwrap();
        if tree.history().outcome().is_none() {
            tree.start(Limits::playouts(50_000), true).unwrap();
        }
    })
    .unwrap();
    assert_eq!(trees[0].history().outcome().unwrap().reason, capa_rules::Termination::Checkmate);
    assert_eq!(playouts.len(), trees[0].history().moves().len(), "one report per move: {playouts:?}");
    assert!(playouts.contains(&0), "some searches end as they start: {playouts:?}");
}
