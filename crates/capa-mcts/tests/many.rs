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
