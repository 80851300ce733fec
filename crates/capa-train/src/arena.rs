//! A small arena: two networks play each other at an equal search budget,
//! to tell whether training made a network stronger.
//!
//! Games come in pairs: both start from the same few random plies, with
//! the colours swapped, so an opening's bias cancels out. Every move is a
//! fresh search of `simulations` playouts (no tree reuse), all games of a
//! side searched together.

use anyhow::{Result, anyhow};
use capa_data::MatchScore;
use capa_mcts::{Evaluator, Limits, Rng, SearchParams, Tree, random_opening, search_many};
use capa_rules::{Color, Game, GameResult, History};

use crate::selfplay::mix;

/// How the arena plays.
#[derive(Clone, Debug)]
pub struct ArenaSettings {
    /// Games, rounded up to an even number.
    pub games: u32,
    /// Playouts per move, the same for both.
    pub simulations: u32,
    /// Random plies before the networks take over.
    pub random_plies: u32,
    /// Plies after which a game is a draw.
    pub ply_cap: u32,
    /// Seeds the openings.
    pub seed: u64,
    /// The search (no noise: both play their best).
    pub params: SearchParams,
}

/// Plays `first` against `second`.
///
/// # Errors
/// A search or evaluator failure.
pub fn arena<G: Game, A: Evaluator<G>, B: Evaluator<G>>(
    first: &A,
    second: &B,
    settings: &ArenaSettings,
    mut on_game: impl FnMut(&MatchScore),
) -> Result<MatchScore> {
    let pairs = settings.games.div_ceil(2);
    let mut games: Vec<(History<G>, Color)> = Vec::new();
    for pair in 0..pairs {
        let opening = random_opening::<G>(settings.random_plies, &mut Rng::new(mix(settings.seed, u64::from(pair))));
        let start = || opening.clone().with_ply_cap(settings.ply_cap);
        games.push((start(), Color::White));
        games.push((start(), Color::Black));
    }
    let mut score = MatchScore::default();
    let mut over = vec![false; games.len()];
    let mut plies = 0u64;
    while over.iter().any(|o| !o) {
        for first_moves in [true, false] {
            let playing: Vec<usize> = (0..games.len())
                .filter(|&g| !over[g] && (games[g].0.current().turn() == games[g].1) == first_moves)
                .collect();
            if playing.is_empty() {
                continue;
            }
            let mut trees = playing
                .iter()
                .map(|&g| {
                    let seed = mix(settings.seed ^ 0x0061_7265_6e61, plies + g as u64);
                    let mut tree = Tree::new(games[g].0.clone(), settings.params.clone(), seed)?;
                    tree.start(Limits::playouts(settings.simulations), false)?;
                    Ok(tree)
                })
                .collect::<Result<Vec<_>, capa_mcts::SearchError>>()
                .map_err(|e| anyhow!("{e}"))?;
            let mut chosen = vec![None; trees.len()];
            let groups = 2.min(trees.len());
            let searched = if first_moves {
                search_many(&mut trees, first, groups, |i, _, result| chosen[i] = result.best().map(|b| b.mv))
            } else {
                search_many(&mut trees, second, groups, |i, _, result| chosen[i] = result.best().map(|b| b.mv))
            };
            searched.map_err(|e| anyhow!("arena search failed: {e}"))?;
            plies += 1;
            for (&g, m) in playing.iter().zip(chosen) {
                let (history, first_color) = &mut games[g];
                history.play(m.ok_or_else(|| anyhow!("a search found no move"))?);
                if let Some(outcome) = history.outcome() {
                    over[g] = true;
                    let to_move = history.current().turn();
                    match (outcome.result, to_move == *first_color) {
                        (GameResult::Draw, _) => score.draws += 1,
                        (GameResult::Win, true) | (GameResult::Loss, false) => score.wins += 1,
                        _ => score.losses += 1,
                    }
                    on_game(&score);
                }
            }
        }
    }
    Ok(score)
}

#[cfg(test)]
mod tests {
    use capa_mcts::{RandomEvaluator, UniformEvaluator};
    use capa_rules::capablanca::Capablanca;

    use super::*;

    #[test]
    fn every_game_is_counted_and_colours_alternate() {
        let settings = ArenaSettings {
            games: 6,
            simulations: 8,
            random_plies: 4,
            ply_cap: 30,
            seed: 3,
            params: SearchParams { parallel_sims: 4, ..SearchParams::default() },
        };
        let mut reported = 0;
        let score =
            arena::<Capablanca, _, _>(&UniformEvaluator, &RandomEvaluator, &settings, |_| reported += 1).unwrap();
        assert_eq!((score.games(), reported), (6, 6));
    }
}
