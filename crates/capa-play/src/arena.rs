//! A small arena: a network plays another network, or a UCI engine, to
//! tell whether training made it stronger.
//!
//! Games come in pairs: both start from the same few random plies, with
//! the colours swapped, so an opening's bias cancels out. All games run
//! at once: a network searches every game where it is to move together,
//! each move a fresh search (no tree reuse); an engine answers them one
//! by one.

use anyhow::{Result, anyhow};
use capa_mcts::mix;
use capa_mcts::{Evaluator, Limits, Rng, SearchParams, Tree, random_opening, search_many};
use capa_rules::{Color, Game, GameResult, History};

use crate::elo::MatchScore;
use crate::engine::EnginePlayer;

/// How the arena plays.
#[derive(Clone, Debug)]
pub struct ArenaSettings {
    /// Games, rounded up to an even number.
    pub games: u32,
    /// Random plies before the players take over.
    pub random_plies: u32,
    /// Plies after which a game is a draw.
    pub ply_cap: u32,
    /// Seeds the openings and the searches.
    pub seed: u64,
}

/// One side of the arena: chooses the moves of several games at once.
pub trait Player<G: Game> {
    /// The move at the end of each of `games`; `seeds` (one per game) seed
    /// any random choice.
    ///
    /// # Errors
    /// A failed search or engine.
    fn moves(&mut self, games: &[&History<G>], seeds: &[u64]) -> Result<Vec<G::Move>>;
}

/// A network searching `simulations` playouts per move, without noise.
pub struct NetworkPlayer<'a, E> {
    /// The network.
    pub evaluator: &'a E,
    /// Playouts per move.
    pub simulations: u32,
    /// The search.
    pub params: SearchParams,
}

impl<G: Game, E: Evaluator<G>> Player<G> for NetworkPlayer<'_, E> {
    fn moves(&mut self, games: &[&History<G>], seeds: &[u64]) -> Result<Vec<G::Move>> {
        let mut trees = games
            .iter()
            .zip(seeds)
            .map(|(&history, &seed)| {
                let mut tree = Tree::new(history.clone(), self.params.clone(), seed)?;
                tree.start(Limits::playouts(self.simulations), false)?;
                Ok(tree)
            })
            .collect::<Result<Vec<_>, capa_mcts::SearchError>>()
            .map_err(|e| anyhow!("{e}"))?;
        let mut chosen = vec![None; trees.len()];
        let groups = 2.min(trees.len());
        search_many(&mut trees, self.evaluator, groups, |i, _, result| chosen[i] = result.best().map(|b| b.mv))
            .map_err(|e| anyhow!("arena search failed: {e}"))?;
        chosen.into_iter().map(|m| m.ok_or_else(|| anyhow!("a search found no move"))).collect()
    }
}

impl<G: Game> Player<G> for EnginePlayer {
    fn moves(&mut self, games: &[&History<G>], _: &[u64]) -> Result<Vec<G::Move>> {
        games.iter().map(|history| self.best_move(history)).collect()
    }
}

/// Plays `first` against `second`; the score is `first`'s.
///
/// # Errors
/// A player's failure.
pub fn arena<G: Game>(
    first: &mut dyn Player<G>,
    second: &mut dyn Player<G>,
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
            let positions: Vec<&History<G>> = playing.iter().map(|&g| &games[g].0).collect();
            let seeds: Vec<u64> =
                playing.iter().map(|&g| mix(settings.seed ^ 0x0061_7265_6e61, plies + g as u64)).collect();
            let player: &mut dyn Player<G> = if first_moves { &mut *first } else { &mut *second };
            let chosen = player.moves(&positions, &seeds)?;
            plies += 1;
            for (&g, m) in playing.iter().zip(chosen) {
                let (history, first_color) = &mut games[g];
                history.play(m);
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
        let settings = ArenaSettings { games: 6, random_plies: 4, ply_cap: 30, seed: 3 };
        let params = SearchParams { parallel_sims: 4, ..SearchParams::default() };
        let mut first = NetworkPlayer { evaluator: &UniformEvaluator, simulations: 8, params: params.clone() };
        let mut second = NetworkPlayer { evaluator: &RandomEvaluator, simulations: 8, params };
        let mut reported = 0;
        let score = arena::<Capablanca>(&mut first, &mut second, &settings, |_| reported += 1).unwrap();
        assert_eq!((score.games(), reported), (6, 6));
    }
}
