//! Input planes: what the network sees of a position and its history.
//!
//! Every plane is drawn from the side to move's point of view: "ours" are
//! the mover's pieces, and when black is to move the ranks are mirrored so
//! that the mover always plays up the board. History slots use the current
//! mover's frame too (Lc0's convention), so slot 1 shows the opponent's
//! pieces as "theirs" although the opponent was to move there.
//!
//! Slots older than the game's first position follow Lc0's default
//! `HistoryFill = fen_only`: zero for a game from the standard start, copies
//! of the first position otherwise (with a just double-pushed pawn drawn back
//! on its start square, which tells the network that the en passant capture
//! is legal). This makes the chess planes bit-exact with what Lc0 feeds its
//! networks and what its V6 training data holds.

use capa_rules::capablanca::{self, Capablanca};
use capa_rules::chess::Chess;
use capa_rules::{Color, Game};
use rayon::prelude::*;

use capa_mcts::HISTORY_LEN;

/// A game whose positions the network can read.
pub trait NetGame: Game {
    /// Input planes per position.
    const PLANES: usize;

    /// Floats per encoded position: planes x ranks x files.
    const INPUT_LEN: usize = Self::PLANES * Self::RANKS * Self::FILES;

    /// Writes the planes of the last position of `history` into `out`
    /// (`INPUT_LEN` floats, plane-major, each plane rank-major from the
    /// mover's first rank).
    ///
    /// `history` holds up to [`HISTORY_LEN`] positions, oldest first; fewer
    /// means the first one started the game. `repeated[i]` says whether
    /// `history[i]` occurred earlier in the game.
    ///
    /// # Panics
    /// If `history` is empty, the slices' lengths differ, or `out` has the
    /// wrong length: callers size them from the same request.
    fn encode(history: &[Self], repeated: &[bool], out: &mut [f32]) {
        assert!(!history.is_empty() && history.len() == repeated.len() && out.len() == Self::INPUT_LEN);
        out.fill(0.0);
        let current = history.last().expect("not empty");
        let frame = current.turn();
        let square_count = Self::RANKS * Self::FILES;
        let per_slot = Self::PIECE_PLANES + 1;
        let fill = history.len() < HISTORY_LEN && history[0].hash() != Self::startpos().hash();
        for slot in 0..HISTORY_LEN {
            let (position, was_repeated, is_fill) = match history.len().checked_sub(slot + 1) {
                Some(index) => (&history[index], repeated[index], false),
                None if fill => (&history[0], false, true),
                None => break,
            };
            let base = slot * per_slot * square_count;
            position.draw_pieces(frame, is_fill, &mut out[base..base + Self::PIECE_PLANES * square_count]);
            if was_repeated {
                let plane = base + Self::PIECE_PLANES * square_count;
                out[plane..plane + square_count].fill(1.0);
            }
        }
        let aux = HISTORY_LEN * per_slot * square_count;
        current.draw_aux(&mut out[aux..]);
    }

    /// Piece planes per history slot: the mover's piece types, then the
    /// opponent's.
    #[doc(hidden)]
    const PIECE_PLANES: usize;

    /// Draws this position's pieces in `frame`'s point of view into
    /// `PIECE_PLANES` zeroed planes; `undo_double_push` draws a pawn that
    /// just double-pushed back on its start square.
    #[doc(hidden)]
    fn draw_pieces(&self, frame: Color, undo_double_push: bool, out: &mut [f32]);

    /// Draws the planes after the history (castling, clock, constants) into
    /// zeroed planes, from the mover's point of view.
    #[doc(hidden)]
    fn draw_aux(&self, out: &mut [f32]);
}

/// Encodes a batch in parallel: `out` holds `histories.len()` inputs back to back.
///
/// # Panics
/// As [`NetGame::encode`], for any entry, and when `out` is shorter than the batch.
pub fn encode_batch<'a, G: NetGame>(
    histories: impl IndexedParallelIterator<Item = (&'a [G], &'a [bool])>,
    out: &mut [f32],
) {
    assert!(out.len() >= histories.len() * G::INPUT_LEN, "the output is too short for the batch");
    histories.zip(out.par_chunks_mut(G::INPUT_LEN)).for_each(|((history, repeated), input)| {
        G::encode(history, repeated, input);
    });
}

/// The plane offset of a square at (`file`, `rank`) seen from `frame`.
#[inline]
fn frame_offset(file: usize, rank: usize, frame: Color, files: usize, ranks: usize) -> usize {
    let rank = if frame == Color::White { rank } else { ranks - 1 - rank };
    rank * files + file
}

impl NetGame for Capablanca {
    /// 8 history slots x (8 + 8 piece planes + repetition) + castling, clock, ones.
    const PLANES: usize = HISTORY_LEN * 17 + 3;
    const PIECE_PLANES: usize = 16;

    fn draw_pieces(&self, frame: Color, undo_double_push: bool, out: &mut [f32]) {
        let squares = capablanca::SQUARES;
        let pushed = if undo_double_push { self.ep_square() } else { None };
        for (side, color) in [frame, !frame].into_iter().enumerate() {
            for role in capablanca::Role::ALL {
                let plane = &mut out[(side * 8 + role.index()) * squares..][..squares];
                for square in self.pieces(color, role) {
                    let (file, mut rank) = (square.file(), square.rank());
                    // The pawn that passed over the en passant square stands one
                    // rank beyond it; drawn back, it stands one rank before.
                    if let Some(ep) = pushed.filter(|ep| role == capablanca::Role::Pawn && ep.file() == file) {
                        if color == Color::White && rank == ep.rank() + 1 {
                            rank = ep.rank() - 1;
                        } else if color == Color::Black && rank + 1 == ep.rank() {
                            rank = ep.rank() + 1;
                        }
                    }
                    plane[frame_offset(file, rank, frame, capablanca::FILES, capablanca::RANKS)] = 1.0;
                }
            }
        }
    }

    fn draw_aux(&self, out: &mut [f32]) {
        let squares = capablanca::SQUARES;
        let frame = self.turn();
        // One plane marks the corner of every rook that may still castle.
        for color in Color::ALL {
            let rank = if color == Color::White { 0 } else { capablanca::RANKS - 1 };
            for (kingside, file) in [(false, 0), (true, capablanca::FILES - 1)] {
                if self.can_castle(color, kingside) {
                    out[frame_offset(file, rank, frame, capablanca::FILES, capablanca::RANKS)] = 1.0;
                }
            }
        }
        out[squares..2 * squares].fill(self.halfmove_clock() as f32 / 100.0);
        out[2 * squares..3 * squares].fill(1.0);
    }
}

impl NetGame for Chess {
    /// Lc0's classical input: 8 history slots x 13 + 8 auxiliary planes.
    const PLANES: usize = HISTORY_LEN * 13 + 8;
    const PIECE_PLANES: usize = 12;

    fn draw_pieces(&self, frame: Color, undo_double_push: bool, out: &mut [f32]) {
        // The same bitboards Lc0's V6 training records store (capa-data's
        // writer), so a network sees what those records hold.
        for (plane, bits) in out.chunks_exact_mut(64).zip(self.lc0_piece_bitboards(frame, undo_double_push)) {
            let mut bits = bits;
            while bits != 0 {
                plane[bits.trailing_zeros() as usize] = 1.0;
                bits &= bits - 1;
            }
        }
    }

    fn draw_aux(&self, out: &mut [f32]) {
        use shakmaty::{CastlingSide, Position};
        let position = self.position();
        let us = shakmaty_color(self.turn());
        let castles = position.castles();
        let rights = [
            castles.has(us, CastlingSide::QueenSide),
            castles.has(us, CastlingSide::KingSide),
            castles.has(!us, CastlingSide::QueenSide),
            castles.has(!us, CastlingSide::KingSide),
            self.turn() == Color::Black,
        ];
        for (plane, set) in out.chunks_exact_mut(64).zip(rights) {
            if set {
                plane.fill(1.0);
            }
        }
        // Input format 1 scales the clock by 1/99 (format 4 and later by 1/100).
        out[5 * 64..6 * 64].fill(self.halfmove_clock() as f32 / 99.0);
        out[7 * 64..8 * 64].fill(1.0);
    }
}

fn shakmaty_color(color: Color) -> shakmaty::Color {
    match color {
        Color::White => shakmaty::Color::White,
        Color::Black => shakmaty::Color::Black,
    }
}
