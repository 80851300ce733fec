//! The rules of the games capa plays, behind one trait.
//!
//! [`Game`] is what search, encoders, records and tools are generic over: legal
//! moves into a reusable [`MoveList`], `play`, [`Outcome`] with its
//! [`Termination`], an incrementally updated Zobrist hash, FEN and UCI in and
//! out, and the move's index in the game's [`PolicyMap`]. [`History`] adds the
//! earlier positions of a game (repetition, ply cap, the network's history).
//!
//! Two games implement it:
//! - [`capablanca::Capablanca`]: 10x8 with archbishop and chancellor, on u128
//!   bitboards, with Fairy-Stockfish's FEN and UCI conventions.
//! - [`chess::Chess`]: standard chess through shakmaty, with Lc0's 1858-entry
//!   policy map.
//!
//! ```
//! use capa_rules::{Game, History, MoveList, capablanca::Capablanca};
//!
//! let mut game = History::new(Capablanca::startpos());
//! let m = game.current().parse_move("f2f4")?;
//! game.play(m);
//! let mut moves = MoveList::new();
//! game.current().legal_moves(&mut moves);
//! assert_eq!(moves.len(), 28);
//! assert!(game.outcome().is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

pub mod capablanca;
pub mod chess;
mod error;
mod game;
pub mod go;
mod history;
mod notation;
mod perft;
mod policy;

pub use error::{FenError, FenErrorKind, MoveError, MoveListError};
pub use game::{Color, Game, GameResult, MoveList, Outcome, Termination};
pub use history::History;
pub use perft::{divide, perft};
pub use policy::{PolicyMap, PolicyMove};

/// FNV-1a, 64 bits: a stable hash of bytes, for names and splits that must
/// never change between runs or machines (not for hash tables: see the
/// Zobrist keys for positions).
pub fn fnv1a<'a>(bytes: impl IntoIterator<Item = &'a u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
