//! A game in progress: its positions, for repetition, the ply cap and the network's history planes.

use crate::{Game, MoveListError, Outcome, Termination};

/// The positions of one game from its start, with the moves between them.
///
/// Search, encoders and game records share this type. Positions are stored
/// whole (a Capablanca position is 352 bytes), so the encoder reads the last
/// eight without replaying anything.
#[derive(Clone, Debug)]
pub struct History<G: Game> {
    positions: Vec<G>,
    moves: Vec<G::Move>,
    ply_cap: Option<u32>,
}

impl<G: Game> History<G> {
    /// A game starting at `start`, with no ply cap.
    pub fn new(start: G) -> History<G> {
        History { positions: vec![start], moves: Vec::new(), ply_cap: None }
    }

    /// The same game, adjudicated a draw once `cap` moves have been played in it.
    pub fn with_ply_cap(mut self, cap: u32) -> History<G> {
        self.ply_cap = Some(cap);
        self
    }

    /// The move count at which the game is adjudicated a draw, if any.
    pub fn ply_cap(&self) -> Option<u32> {
        self.ply_cap
    }

    /// The position now.
    #[inline]
    pub fn current(&self) -> &G {
        self.positions.last().expect("a history always holds its start")
    }

    /// The starting position.
    pub fn start(&self) -> &G {
        &self.positions[0]
    }

    /// Every position, oldest first; the last is [`History::current`].
    pub fn positions(&self) -> &[G] {
        &self.positions
    }

    /// The moves played, oldest first.
    pub fn moves(&self) -> &[G::Move] {
        &self.moves
    }

    /// Plays moves in UCI notation one after the other, each checked for
    /// legality; on an error the moves before the bad one stay played.
    ///
    /// # Errors
    /// The first move that is malformed or illegal, with its place in the list.
    pub fn play_moves<'a>(&mut self, moves: impl IntoIterator<Item = &'a str>) -> Result<(), MoveListError> {
        for (i, text) in moves.into_iter().enumerate() {
            let m = self.current().parse_move(text).map_err(|source| MoveListError { number: i + 1, source })?;
            self.play(m);
        }
        Ok(())
    }

    /// Plays a legal move of the current position.
    pub fn play(&mut self, m: G::Move) {
        let mut next = self.current().clone();
        next.play(m);
        self.positions.push(next);
        self.moves.push(m);
    }

    /// Takes back the last move, returning it; `None` at the start.
    pub fn undo(&mut self) -> Option<G::Move> {
        let m = self.moves.pop()?;
        self.positions.pop();
        Some(m)
    }

    /// How many times the current position occurred earlier in the game
    /// (same pieces, side to move, castling rights and en passant).
    pub fn repetitions(&self) -> usize {
        let current = self.current();
        let last = self.positions.len() - 1;
        // Only positions since the last capture or pawn move can repeat.
        let window = (current.halfmove_clock() as usize).min(last);
        (2..=window).step_by(2).filter(|&back| self.positions[last - back].hash() == current.hash()).count()
    }

    /// Whether the game is over, and how: checkmate and stalemate first, then
    /// insufficient material, the 50-move rule, threefold repetition, and the
    /// ply cap. The result is for the side to move in the current position.
    pub fn outcome(&self) -> Option<Outcome> {
        if let Some(outcome) = self.current().outcome() {
            return Some(outcome);
        }
        if self.repetitions() >= 2 {
            return Some(Outcome::draw(Termination::ThreefoldRepetition));
        }
        match self.ply_cap {
            Some(cap) if self.moves.len() >= cap as usize => Some(Outcome::draw(Termination::PlyCap)),
            _ => None,
        }
    }
}
