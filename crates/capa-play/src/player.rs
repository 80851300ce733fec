//! A player: what chooses the moves of one side in several games at once,
//! and the in-process one, a network searched by capa's MCTS.

use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use capa_mcts::{Evaluator, Limits, SearchParams, Tree, search_many};
use capa_rules::{Game, History};

/// The players' clocks in a timed game, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// White's time left.
    pub white: u64,
    /// Black's time left.
    pub black: u64,
    /// Time added after each move.
    pub increment: u64,
}

/// One game where a player is to move.
#[derive(Clone, Copy, Debug)]
pub struct Turn<'a, G: Game> {
    /// The game's slot in the match, from 0 to its concurrency - 1: a
    /// player with a process per game answers on the slot's process.
    pub slot: usize,
    /// The game so far.
    pub history: &'a History<G>,
    /// Seeds any random choice of this move.
    pub seed: u64,
    /// The clocks, in a timed match.
    pub clock: Option<Clock>,
}

/// A player's answer to one turn.
#[derive(Clone, Debug)]
pub struct Answer<M> {
    /// A legal move, or why the player forfeits this game (its engine
    /// crashed, hung, or answered an illegal move).
    pub played: Result<M, String>,
    /// How long it thought, for the clock.
    pub thinking: Duration,
}

/// One side of a match.
pub trait Player<G: Game> {
    /// Its name in PGN tags and summaries.
    fn name(&self) -> &str;

    /// A new game starts in `slot` (a UCI engine with a process per game
    /// hears `ucinewgame`).
    fn new_game(&mut self, slot: usize) {
        let _ = slot;
    }

    /// An answer per turn, in order.
    ///
    /// # Errors
    /// A failure that stops the match (an engine that cannot be started
    /// again, a failing search), as opposed to one that forfeits one game.
    fn moves(&mut self, turns: &[Turn<'_, G>]) -> Result<Vec<Answer<G::Move>>>;
}

/// A network searched in-process, `simulations` playouts per move without
/// noise, every game where it is to move in one [`search_many`] so that the
/// network's batches stay full. Each move is a fresh search (no tree reuse).
pub struct SearchPlayer<'a, E> {
    /// Its name.
    pub name: String,
    /// The network.
    pub evaluator: &'a E,
    /// Playouts per move.
    pub simulations: u32,
    /// The search.
    pub params: SearchParams,
}

impl<G: Game, E: Evaluator<G>> Player<G> for SearchPlayer<'_, E> {
    fn name(&self) -> &str {
        &self.name
    }

    fn moves(&mut self, turns: &[Turn<'_, G>]) -> Result<Vec<Answer<G::Move>>> {
        let started = Instant::now();
        let mut trees = turns
            .iter()
            .map(|turn| {
                let mut tree = Tree::new(turn.history.clone(), self.params.clone(), turn.seed)?;
                tree.start(Limits::playouts(self.simulations), false)?;
                Ok(tree)
            })
            .collect::<Result<Vec<_>, capa_mcts::SearchError>>()
            .map_err(|e| anyhow!("{}: {e}", self.name))?;
        let mut chosen = vec![None; trees.len()];
        let groups = 2.min(trees.len());
        search_many(&mut trees, self.evaluator, groups, |i, _, result| {
            chosen[i] = result.gumbel.as_ref().map(|g| g.choice).or_else(|| result.best().map(|b| b.mv))
        })
        .map_err(|e| anyhow!("{}: the search failed: {e}", self.name))?;
        let thinking = started.elapsed();
        Ok(chosen
            .into_iter()
            .map(|m| Answer { played: m.ok_or_else(|| "its search found no move".to_string()), thinking })
            .collect())
    }
}
