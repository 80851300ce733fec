//! Games between players, and what they say about strength.
//!
//! - [`Player`]: one side of a match, answering every game where it is to
//!   move at once. [`SearchPlayer`] is a network searched in-process;
//!   [`UciPlayer`] is any UCI engine, or a network run as `capa uci`, at a
//!   set strength if asked (`UCI_Elo`).
//! - [`play_match`]: the one match runner: games in pairs, several in
//!   flight, forfeits, clocks, PGN, an optional SPRT. `capa match`,
//!   `capa elo` and the trainer's `[eval]` play through it; its
//!   curriculum's engine is a [`UciPlayer`].
//! - [`rate`]: Elo on an engine's `UCI_Elo` scale, by a [`Bisection`] of
//!   matches; [`MatchScore`], [`Sprt`] and [`Bisection`] are the maths.

#![deny(missing_docs)]

mod elo;
mod matches;
mod player;
mod rating;
mod uci_player;

pub use elo::{Bisection, EloEstimate, EstimateKind, MatchScore, Sprt, SprtVerdict, elo_difference, expected_score};
pub use matches::{GameEnd, MatchSettings, Openings, play_match};
pub use player::{Answer, Clock, Player, SearchPlayer, Turn};
pub use rating::{Bracket, EloProbe, rate};
pub use uci_player::{MoveLimit, UciPlayer};
