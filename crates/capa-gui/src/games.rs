//! What the page needs of each game beyond the rules: how a result is
//! written, Go's prisoners, and what Go's ownership and score heads add to
//! an analysis. Every game capa plays implements [`GuiGame`], so the
//! server reaches all of them through one `for_game!`.

use anyhow::{Context, Result};
use capa_data::{Replay, SgfGame, SgfMove, SgfVariation};
use capa_mcts::CachedEvaluator;
use capa_net::{NetEvaluator, NetGame, Territory};
use capa_rules::capablanca::Capablanca;
use capa_rules::chess::Chess;
use capa_rules::go::{Go, GoMove, KoRule};
use capa_rules::{Color, Game, History};
use serde::Serialize;

/// The network behind its evaluation cache.
pub type Evaluator<G> = CachedEvaluator<NetEvaluator<G>>;

/// A game the GUI draws, analyses and plays.
pub trait GuiGame: NetGame {
    /// A result as the game's records write it: PGN's `1-0`, `0-1`,
    /// `1/2-1/2` or `*` (unknown), SGF's `B+`, `W+`, `0` or `?`.
    fn result_text(result: Option<Option<Color>>) -> &'static str {
        pgn_result(result)
    }

    /// The result of a game that ended in `position`, won by `winner`
    /// (`None`: a draw): Go's adds the score (`B+3.5`).
    fn ending_text(position: &Self, winner: Option<Color>) -> String {
        let _ = position;
        Self::result_text(Some(winner)).to_string()
    }

    /// Go: the stones each player has taken, black's then white's.
    fn prisoners(history: &History<Self>) -> Option<[u32; 2]> {
        let _ = history;
        None
    }

    /// Go: an SGF game's start (its setup and komi), main line and variations.
    ///
    /// # Errors
    /// Why the game cannot be shown: chess is not written in SGF, and the
    /// board plays alternate moves from its start.
    fn from_sgf(game: &SgfGame) -> Result<SgfLines<Self>, String> {
        let _ = game;
        Err(format!("{} games are not written in SGF", Self::NAME))
    }

    /// Go: the network's score leads at `history`'s position and after
    /// each of `moves`, and (with `ownership`) each point's owner; `None`
    /// for chess, or without the heads.
    ///
    /// # Errors
    /// A failed network call.
    fn territory(
        evaluator: &Evaluator<Self>,
        history: &History<Self>,
        moves: &[Self::Move],
        ownership: bool,
    ) -> Result<Option<Territory>> {
        let _ = (evaluator, history, moves, ownership);
        Ok(None)
    }
}

/// A game read from SGF: its start, its main line's moves and its variations.
pub type SgfLines<G> = (G, Vec<<G as Game>::Move>, Vec<Variation>);

/// A line of a loaded game beside its parent line: it takes the place of
/// the parent's move number `at` (from 0), the moves in GTP's vertices.
#[derive(Clone, Debug, Serialize)]
pub struct Variation {
    /// The parent's moves before it.
    pub at: usize,
    /// Its moves.
    pub moves: Vec<String>,
    /// The lines beside it in turn.
    pub variations: Vec<Variation>,
}

/// A result as PGN writes it: `1-0`, `0-1`, `1/2-1/2`, `*` when unknown.
pub fn pgn_result(result: Option<Option<Color>>) -> &'static str {
    match result {
        Some(Some(Color::White)) => "1-0",
        Some(Some(Color::Black)) => "0-1",
        Some(None) => "1/2-1/2",
        None => "*",
    }
}

impl GuiGame for Capablanca {}

impl GuiGame for Chess {}

impl<const N: usize> GuiGame for Go<N> {
    fn result_text(result: Option<Option<Color>>) -> &'static str {
        match result {
            Some(Some(Color::Black)) => "B+",
            Some(Some(Color::White)) => "W+",
            Some(None) => "0",
            None => "?",
        }
    }

    /// `B+3.5`, `W+0.5` or `0`, by area with komi.
    fn ending_text(position: &Self, _winner: Option<Color>) -> String {
        position.score_text()
    }

    fn from_sgf(game: &SgfGame) -> Result<SgfLines<Self>, String> {
        let replay = game.replay::<N>(KoRule::Simple).map_err(|e| e.to_string())?;
        let start = replay.positions.first().unwrap_or(&replay.end).clone();
        alternates(game, &game.moves, &replay)?;
        let variations = sgf_variations(game, &replay, &game.variations)?;
        Ok((start, replay.moves, variations))
    }

    fn prisoners(history: &History<Self>) -> Option<[u32; 2]> {
        let stones = |position: &Go<N>, color| (0..N * N).filter(|&p| position.cell(p).color() == Some(color)).count();
        // Stones each color has put on the board, by `Color::index`.
        let mut placed = [0; 2];
        for color in Color::ALL {
            placed[color.index()] = stones(history.start(), color);
        }
        for (position, m) in history.positions().iter().zip(history.moves()) {
            if !m.is_pass() {
                placed[position.turn().index()] += 1;
            }
        }
        let now = history.current();
        // A player's prisoners are the opponent's stones that left the board.
        let lost = |color: Color| (placed[color.index()] - stones(now, color)) as u32;
        Some([lost(Color::White), lost(Color::Black)])
    }

    fn territory(
        evaluator: &Evaluator<Self>,
        history: &History<Self>,
        moves: &[GoMove<N>],
        ownership: bool,
    ) -> Result<Option<Territory>> {
        let network = evaluator.inner();
        // The map is drawn only from a network with the head: asking one
        // without it is not an error here.
        let ownership = ownership && network.config().ownership_head;
        let territory =
            network.territory(history, moves, ownership).context("the network's ownership and score heads")?;
        Ok((!territory.leads.is_empty() || !territory.ownership.is_empty()).then_some(territory))
    }
}

/// Checks that `line`'s moves alternate from its start, as the board plays them.
fn alternates<const N: usize>(game: &SgfGame, line: &[SgfMove], replay: &Replay<N>) -> Result<(), String> {
    match replay.positions.windows(2).position(|pair| pair[0].turn() == pair[1].turn()) {
        None => Ok(()),
        Some(i) => Err(format!(
            "game {} (line {}), move {}: a second move in a row by {:?}; the board plays alternate moves",
            game.number,
            line[i + 1].line,
            i + 2,
            replay.positions[i + 1].turn()
        )),
    }
}

/// `variations` of the line `parent` replayed, each replayed from where it
/// leaves it and checked as the main line is.
fn sgf_variations<const N: usize>(
    game: &SgfGame,
    parent: &Replay<N>,
    variations: &[SgfVariation],
) -> Result<Vec<Variation>, String> {
    variations
        .iter()
        .map(|variation| {
            let start = parent.positions.get(variation.at).unwrap_or(&parent.end).clone();
            let turn = start.turn();
            let replay = game.replay_line(start, &variation.moves).map_err(|e| format!("a variation: {e}"))?;
            if replay.positions.first().is_some_and(|first| first.turn() != turn) {
                let line = variation.moves[0].line;
                return Err(format!("game {} (line {line}): a variation starts with the wrong player", game.number));
            }
            alternates(game, &variation.moves, &replay)?;
            Ok(Variation {
                at: variation.at,
                moves: replay.moves.iter().map(ToString::to_string).collect(),
                variations: sgf_variations(game, &replay, &variation.variations)?,
            })
        })
        .collect()
}
