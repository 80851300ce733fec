//! Errors for position and move input (FEN and UCI for the chess games, their counterparts for Go).

use thiserror::Error;

use crate::color::Color;

/// A FEN that could not be turned into a position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid FEN '{fen}': {kind}")]
pub struct FenError {
    /// The FEN as given.
    pub fen: String,
    /// What is wrong with it.
    pub kind: FenErrorKind,
}

/// What is wrong with a FEN.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FenErrorKind {
    /// Not between 2 and 6 space-separated fields.
    #[error("expected 2 to 6 fields (placement, side, castling, en passant, halfmove, fullmove), found {0}")]
    FieldCount(usize),
    /// The placement field does not have one entry per rank.
    #[error("placement has {found} ranks, expected {expected}")]
    RankCount {
        /// Ranks found.
        found: usize,
        /// Ranks the board has.
        expected: usize,
    },
    /// One rank of the placement does not describe exactly the board's width.
    #[error("rank {rank} describes {found} squares, expected {expected}")]
    RankWidth {
        /// The rank, 1-based as on the board.
        rank: usize,
        /// Squares described.
        found: usize,
        /// The board's width.
        expected: usize,
    },
    /// A character that is not a piece of this game nor a digit.
    #[error("unknown piece '{piece}' on rank {rank}")]
    UnknownPiece {
        /// The character.
        piece: char,
        /// The rank, 1-based.
        rank: usize,
    },
    /// A run of empty squares written as 0, with a leading zero, or wider than the board.
    #[error("empty-square count '{count}' on rank {rank} is not a number from 1 to the board's width")]
    BadEmptyCount {
        /// The digits as written.
        count: String,
        /// The rank, 1-based.
        rank: usize,
    },
    /// The side-to-move field is not `w` or `b`.
    #[error("side to move '{0}' is not 'w' or 'b'")]
    SideToMove(String),
    /// A side has no king or more than one.
    #[error("{color:?} has {count} kings, expected exactly 1")]
    KingCount {
        /// Whose kings.
        color: Color,
        /// How many there are.
        count: usize,
    },
    /// A pawn on the first or last rank.
    #[error("pawn on {square}, a back rank")]
    PawnOnBackRank {
        /// The square's name.
        square: String,
    },
    /// The castling field is malformed.
    #[error("castling field '{field}': {reason}")]
    Castling {
        /// The field as written.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The en passant field names a square where no pawn can have just double-stepped.
    #[error("en passant square '{square}': {reason}")]
    EnPassant {
        /// The field as written.
        square: String,
        /// Why it cannot be.
        reason: String,
    },
    /// The side that just moved is in check.
    #[error("the side not to move is in check")]
    OpponentInCheck,
    /// More checkers than any legal move can produce.
    #[error("the side to move is in check in a way no legal move can produce")]
    ImpossibleCheck,
    /// Too many pieces for a legal game (chess: more than 16 per side, say).
    #[error("too much material for a legal position")]
    TooMuchMaterial,
    /// The halfmove or fullmove field is not a number in range.
    #[error("{field} '{value}' is not a number from 0 to {max}")]
    Clock {
        /// `halfmove clock` or `fullmove number`.
        field: &'static str,
        /// The field as written.
        value: String,
        /// The largest value accepted.
        max: u32,
    },
    /// Rejected by shakmaty for a reason the kinds above do not cover.
    #[error("{0}")]
    Invalid(String),
}

/// A move (UCI for the chess games, a GTP vertex for Go) that could not be played.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MoveError {
    /// The text is not a move of this game on this board.
    #[error("'{uci}' is not a move: {reason}")]
    Malformed {
        /// The text as given.
        uci: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A well-formed move that is not legal in the position.
    #[error("'{uci}' is not a legal move in {fen}")]
    Illegal {
        /// The move as given.
        uci: String,
        /// The position it was tried in.
        fen: String,
    },
}

/// A move of a list that could not be played ([`crate::History::play_moves`]).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("move {number} of the list: {source}")]
pub struct MoveListError {
    /// The move's place in the list, from 1.
    pub number: usize,
    /// Why it could not be played.
    pub source: MoveError,
}
