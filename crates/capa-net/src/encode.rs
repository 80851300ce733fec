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
use capa_rules::go::Go;
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
    fn encode(history: &[Self], repeated: &[bool], out: &mut [f32]);

    /// The ownership target of a game's final position, for the ownership
    /// and score heads: each square's owner under area scoring, as 1 for
    /// `perspective`, -1 for its opponent and 0 for neither, written into
    /// `out` (one per square, in the input planes' order). Returns false,
    /// and leaves `out` alone, for a game without owners (chess).
    fn final_owners(&self, perspective: Color, out: &mut [f32]) -> bool {
        let _ = (perspective, out);
        false
    }
}

/// The planes of a chess game: per history slot its pieces and a repetition
/// plane, then the game's auxiliary planes.
trait ChessPlanes: Game {
    /// Piece planes per history slot: the mover's piece types, then the
    /// opponent's.
    const PIECE_PLANES: usize;

    /// Draws this position's pieces in `frame`'s point of view into
    /// `PIECE_PLANES` zeroed planes; `undo_double_push` draws a pawn that
    /// just double-pushed back on its start square.
    fn draw_pieces(&self, frame: Color, undo_double_push: bool, out: &mut [f32]);

    /// Draws the planes after the history (castling, clock, constants) into
    /// zeroed planes, from the mover's point of view.
    fn draw_aux(&self, out: &mut [f32]);
}

/// [`NetGame::encode`] for the chess games.
fn encode_chess<G: ChessPlanes + NetGame>(history: &[G], repeated: &[bool], out: &mut [f32]) {
    assert!(!history.is_empty() && history.len() == repeated.len() && out.len() == G::INPUT_LEN);
    out.fill(0.0);
    let current = history.last().expect("not empty");
    let frame = current.turn();
    let square_count = G::RANKS * G::FILES;
    let per_slot = G::PIECE_PLANES + 1;
    let fill = history.len() < HISTORY_LEN && history[0].hash() != G::startpos().hash();
    for slot in 0..HISTORY_LEN {
        let (position, was_repeated, is_fill) = match history.len().checked_sub(slot + 1) {
            Some(index) => (&history[index], repeated[index], false),
            None if fill => (&history[0], false, true),
            None => break,
        };
        let base = slot * per_slot * square_count;
        position.draw_pieces(frame, is_fill, &mut out[base..base + G::PIECE_PLANES * square_count]);
        if was_repeated {
            let plane = base + G::PIECE_PLANES * square_count;
            out[plane..plane + square_count].fill(1.0);
        }
    }
    let aux = HISTORY_LEN * per_slot * square_count;
    current.draw_aux(&mut out[aux..]);
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

    fn encode(history: &[Self], repeated: &[bool], out: &mut [f32]) {
        encode_chess(history, repeated, out);
    }
}

impl ChessPlanes for Capablanca {
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

    fn encode(history: &[Self], repeated: &[bool], out: &mut [f32]) {
        encode_chess(history, repeated, out);
    }
}

impl ChessPlanes for Chess {
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

/// Moves of the recent past that Go's planes mark.
const GO_RECENT_MOVES: usize = 5;

/// Go's planes, in KataGo's spirit, from the mover's point of view (the
/// board is not mirrored: Go has no direction): ones (the board's extent),
/// the mover's stones, the opponent's, stones whose group has 1, 2, 3 or
/// more liberties, the point the mover may not retake (ko), the last
/// five moves' points (newest first), two planes filled when the last move
/// and the one before were passes, and the komi from the mover's side / 15.
impl<const N: usize> NetGame for Go<N> {
    const PLANES: usize = 1 + 2 + 3 + 1 + GO_RECENT_MOVES + 2 + 1;

    fn encode(history: &[Self], repeated: &[bool], out: &mut [f32]) {
        assert!(!history.is_empty() && history.len() == repeated.len() && out.len() == Self::INPUT_LEN);
        out.fill(0.0);
        let points = N * N;
        let current = history.last().expect("not empty");
        let us = current.turn();
        let mut planes = out.chunks_exact_mut(points);
        let mut next = || planes.next().expect("PLANES counts every plane");
        next().fill(1.0);
        let (ours, theirs) = (next(), next());
        let mut liberties = [0u16; 19 * 19];
        current.liberty_counts(&mut liberties[..points]);
        let (one, two, more) = (next(), next(), next());
        for point in 0..points {
            match current.cell(point).color() {
                Some(color) if color == us => ours[point] = 1.0,
                Some(_) => theirs[point] = 1.0,
                None => continue,
            }
            match liberties[point] {
                1 => one[point] = 1.0,
                2 => two[point] = 1.0,
                _ => more[point] = 1.0,
            }
        }
        let ko = next();
        if let Some(point) = current.ko_point() {
            ko[point] = 1.0;
        }
        // The last moves, newest first; a pass marks no point, and the two
        // newest passes fill planes of their own.
        let recent: Vec<_> = history.iter().rev().map_while(Go::last_move).take(GO_RECENT_MOVES).collect();
        for back in 0..GO_RECENT_MOVES {
            let plane = next();
            if let Some(point) = recent.get(back).and_then(|m| m.point()) {
                plane[point] = 1.0;
            }
        }
        let passes = [0, 1].map(|back| recent.get(back).is_some_and(|m| m.is_pass()));
        for passed in passes {
            let plane = next();
            if passed {
                plane.fill(1.0);
            }
        }
        let komi = if us == Color::White { current.komi() } else { -current.komi() };
        next().fill(komi / 15.0);
    }

    fn final_owners(&self, perspective: Color, out: &mut [f32]) -> bool {
        let mut owners = [None; 19 * 19];
        let owners = &mut owners[..N * N];
        self.owners(owners);
        for (target, owner) in out.iter_mut().zip(owners.iter()) {
            *target = match owner {
                Some(color) if *color == perspective => 1.0,
                Some(_) => -1.0,
                None => 0.0,
            };
        }
        true
    }
}

fn shakmaty_color(color: Color) -> shakmaty::Color {
    match color {
        Color::White => shakmaty::Color::White,
        Color::Black => shakmaty::Color::Black,
    }
}
