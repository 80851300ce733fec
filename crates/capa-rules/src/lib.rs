//! The rules of the games capa plays, behind one trait.
//!
//! [`Game`] is what search, encoders, records and tools are generic over: legal
//! moves into a reusable [`MoveList`], `play`, [`Outcome`] with its
//! [`Termination`], an incrementally updated Zobrist hash, FEN and UCI in and
//! out, and the move's index in the game's [`PolicyMap`]. [`History`] adds the
//! earlier positions of a game (repetition, ply cap, the network's history).
//!
//! Three games implement it, and [`GameKind`] names them (the one list of
//! games in capa; [`for_game!`] turns a value into the game's type):
//! - [`capablanca::Capablanca`]: 10x8 with archbishop and chancellor, on u128
//!   bitboards, with Fairy-Stockfish's FEN and UCI conventions.
//! - [`chess::Chess`]: standard chess through shakmaty, with Lc0's 1858-entry
//!   policy map.
//! - [`go::Go`]: Go on 9x9, 13x13 and 19x19, area scoring with komi.
//!
//! [`Rng`] and [`mix`] are the seeded randomness every crate shares.
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
mod color;
mod error;
mod facts;
mod game;
pub mod go;
mod hash;
mod history;
mod kind;
mod notation;
mod perft;
mod policy;
mod rng;

pub use color::Color;
pub use error::{FenError, FenErrorKind, MoveError, MoveListError};
pub use game::{Game, GameResult, MoveList, Outcome, Termination};
pub use hash::fnv1a;
pub use history::History;
pub use kind::{GameKind, UnknownGame};
pub use perft::{divide, perft};
pub use policy::{PolicyMap, PolicyMove};
pub use rng::{Rng, mix, random_opening};
