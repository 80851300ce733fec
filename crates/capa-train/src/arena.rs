//! A small arena: two networks play each other at an equal search budget,
//! to tell whether training made a network stronger.
//!
//! Games come in pairs: both start from the same few random plies, with
//! the colours swapped, so an opening's bias cancels out. Every move is a
//! fresh search of `simulations` playouts (no tree reuse), all games of a
//! side searched together.

use anyhow::{Result, anyhow};
use capa_mcts::{Evaluator, Limits, Rng, SearchParams, Tree, search_many};
use capa_rules::{Color, Game, GameResult, History, MoveList};

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

/// The arena's result, from the first network's side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Score {
    /// Games the first network won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games the first network lost.
    pub losses: u32,
}

impl Score {
    /// Games played.
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// Points per game, 0 to 1.
    pub fn fraction(&self) -> f64 {
        (f64::from(self.wins) + 0.5 * f64::from(self.draws)) / f64::from(self.games().max(1))
    }

    /// The Elo difference the score implies, with its 95% interval (from
    /// the per-game score's standard error), clamped to +-1000.
    pub fn elo(&self) -> (f64, f64, f64) {
        let n = f64::from(self.games().max(1));
        let s = self.fraction();
        let variance = (f64::from(self.wins) * (1.0 - s).powi(2)
            + f64::from(self.draws) * (0.5 - s).powi(2)
            + f64::from(self.losses) * s.powi(2))
            / n;
        let margin = 1.96 * (variance / n).sqrt();
        let elo = |p: f64| {
            let p = p.clamp(1e-9, 1.0 - 1e-9);
            (-400.0 * (1.0 / p - 1.0).log10()).clamp(-1000.0, 1000.0)
        };
        (elo(s), elo(s - margin), elo(s + margin))
    }
}

/// Plays `first` against `second`.
///
/// # Errors
/// A search or evaluator failure.
pub fn arena<G: Game, A: Evaluator<G>, B: Evaluator<G>>(
    first: &A,
    second: &B,
    settings: &ArenaSettings,
    mut on_game: impl FnMut(&Score),
) -> Result<Score> {
    let pairs = settings.games.div_ceil(2);
    let mut games: Vec<(History<G>, Color)> = Vec::new();
    for pair in 0..pairs {
        let opening = random_opening::<G>(settings.random_plies, mix(settings.seed, u64::from(pair)));
        let start = || opening.clone().with_ply_cap(settings.ply_cap);
        games.push((start(), Color::White));
        games.push((start(), Color::Black));
    }
    let mut score = Score::default();
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

/// `plies` uniformly random legal moves from the start (fewer if the game ends).
fn random_opening<G: Game>(plies: u32, seed: u64) -> History<G> {
    let mut rng = Rng::new(seed);
    let mut history = History::new(G::startpos());
    let mut legal = MoveList::new();
    for _ in 0..plies {
        history.current().legal_moves(&mut legal);
        if legal.is_empty() || history.outcome().is_some() {
            break;
        }
        history.play(legal[(rng.next_u64() % legal.len() as u64) as usize]);
    }
    // Openings that end the game are not played: start from the beginning.
    if history.outcome().is_some() { History::new(G::startpos()) } else { history }
}

#[cfg(test)]
mod tests {
    use capa_mcts::{RandomEvaluator, UniformEvaluator};
    use capa_rules::capablanca::Capablanca;

    use super::*;

    #[test]
    fn elo_follows_the_score() {
        let even = Score { wins: 10, draws: 10, losses: 10 };
        let (elo, low, high) = even.elo();
        assert!(elo.abs() < 1e-9 && low < 0.0 && high > 0.0);
        let (elo, low, _) = Score { wins: 60, draws: 0, losses: 40 }.elo();
        assert!((elo - 70.4).abs() < 0.1 && low > 0.0, "{elo} {low}");
    }

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
