//! Lc0's classical 112-plane input as a V6 record stores it: 104
//! bitboards plus the castling, side-to-move and rule-50 bytes.

use capa_rules::chess::Chess;
use capa_rules::{Color, Game};
use shakmaty::{
    Bitboard, Board, CastlingMode, CastlingSide, File, FromSetup, Piece, Position, PositionError, Rank, Role, Setup,
    Square,
};

use super::record::{CLASSICAL_INPUT, PLANE_COUNT, V6Record};

/// History slots.
const HISTORY: usize = 8;

/// A position's input fields of a V6 record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lc0Input {
    /// 8 slots x 13 bitboards, bits reversed within each byte as Lc0 stores them.
    pub planes: [u64; PLANE_COUNT],
    /// Ours queen side, ours king side, theirs queen side, theirs king side.
    pub castling: [u8; 4],
    /// 1 when black is to move.
    pub black_to_move: u8,
    /// The halfmove clock (saturating at 255).
    pub rule50: u8,
}

/// Encodes the last position of `history` (oldest first, at most the last
/// 8 positions of the game; fewer means `history[0]` started the game).
/// `repeated[i]` says whether `history[i]` occurred earlier in the game.
///
/// History slots older than the game's start stay empty when the game began
/// on the standard start board, and otherwise repeat the first position
/// with a just-double-pushed pawn drawn back (Lc0's `FEN_ONLY` fill).
///
/// # Panics
/// If `history` is empty or the slices' lengths differ.
pub fn encode(history: &[Chess], repeated: &[bool]) -> Lc0Input {
    assert!(!history.is_empty() && history.len() == repeated.len(), "a history and a flag per position");
    let current = history.last().expect("not empty");
    let frame = current.turn();
    let fill = history.len() < HISTORY && history[0].position().board() != &Board::default();
    let mut planes = [0u64; PLANE_COUNT];
    for slot in 0..HISTORY {
        let (position, was_repeated, is_fill) = match history.len().checked_sub(slot + 1) {
            Some(index) => (&history[index], repeated[index], false),
            None if fill => (&history[0], false, true),
            None => break,
        };
        let base = slot * 13;
        for (plane, bits) in planes[base..base + 12].iter_mut().zip(position.lc0_piece_bitboards(frame, is_fill)) {
            *plane = reverse_bits_in_bytes(bits);
        }
        if was_repeated {
            planes[base + 12] = u64::MAX;
        }
    }
    let castles = current.position().castles();
    let us = current.position().turn();
    let right = |color, side| u8::from(castles.has(color, side));
    Lc0Input {
        planes,
        castling: [
            right(us, CastlingSide::QueenSide),
            right(us, CastlingSide::KingSide),
            right(!us, CastlingSide::QueenSide),
            right(!us, CastlingSide::KingSide),
        ],
        black_to_move: u8::from(frame == Color::Black),
        rule50: current.halfmove_clock().min(255) as u8,
    }
}

/// Lc0 stores each bitboard with the bits of every byte reversed, so that
/// reading the bytes in order, each from its top bit, gives a1, b1, ... h8.
#[inline]
pub fn reverse_bits_in_bytes(bits: u64) -> u64 {
    u64::from_le_bytes(bits.to_le_bytes().map(u8::reverse_bits))
}

/// The position a record's input encodes (slot 0), for probing
/// tablebases: the pieces, the side to move, the castling rights, the
/// halfmove clock, and the en-passant square, which format 1 does not
/// store but slot 1 shows (a pawn of the side that just moved, gone from
/// its start square and two ranks on). `None` for another input format
/// than the classical one (whose side-to-move byte means something else),
/// and when the planes are not a legal position.
pub fn decode_position(record: &V6Record) -> Option<shakmaty::Chess> {
    if record.input_format != CLASSICAL_INPUT {
        return None;
    }
    const ROLES: [Role; 6] = [Role::Pawn, Role::Knight, Role::Bishop, Role::Rook, Role::Queen, Role::King];
    let black = record.side_to_move_or_enpassant == 1;
    let us = if black { shakmaty::Color::Black } else { shakmaty::Color::White };
    // Bitboards in the frame of the side to move, then on the real board.
    let framed = |plane: usize| Bitboard(reverse_bits_in_bytes(record.planes[plane]));
    let real = |frame: Bitboard| if black { frame.flip_vertical() } else { frame };
    let mut board = Board::empty();
    for (side, color) in [us, !us].into_iter().enumerate() {
        for (index, role) in ROLES.into_iter().enumerate() {
            for square in real(framed(side * 6 + index)) {
                if board.piece_at(square).is_some() {
                    return None;
                }
                board.set_piece_at(square, Piece { color, role });
            }
        }
    }
    let (theirs_now, theirs_before) = (framed(6), framed(13 + 6));
    let ep_square = (0..8).map(File::new).find_map(|file| {
        let at = |rank: u32| Square::from_coords(file, Rank::new(rank));
        let pushed = theirs_before.contains(at(6))
            && !theirs_now.contains(at(6))
            && theirs_now.contains(at(4))
            && !theirs_before.contains(at(4));
        pushed.then(|| if black { at(5).flip_vertical() } else { at(5) })
    });
    let [our_long, our_short, their_long, their_short] = record.castling;
    let mut castling_rights = Bitboard::EMPTY;
    for (on, color, file) in
        [(our_long, us, File::A), (our_short, us, File::H), (their_long, !us, File::A), (their_short, !us, File::H)]
    {
        if on != 0 {
            castling_rights = castling_rights.with(Square::from_coords(file, color.backrank()));
        }
    }
    let setup = Setup {
        board,
        turn: us,
        castling_rights,
        ep_square,
        halfmoves: u32::from(record.rule50_count),
        ..Setup::empty()
    };
    shakmaty::Chess::from_setup(setup, CastlingMode::Standard).or_else(PositionError::ignore_invalid_ep_square).ok()
}
