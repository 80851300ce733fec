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
//! - [`Ladder`]: fixed opponents calibrated on one Elo scale that reaches
//!   below the engine's weakest level; [`calibrate`] fits it
//!   ([`fit_ratings`]), [`place`] puts a player on it.

#![deny(missing_docs)]

mod elo;
mod gtp_player;
mod ladder;
mod matches;
mod player;
mod rating;
mod uci_player;

pub use elo::{
    Bisection, EloEstimate, EstimateKind, FitError, MatchScore, Pairing, Rating, Sprt, SprtVerdict, elo_difference,
    expected_score, fit_ratings,
};
pub use gtp_player::GtpPlayer;
pub use ladder::{Calibration, Ladder, LadderProbe, PairPlayed, Placement, Rung, RungMatch, calibrate, place};
pub use matches::{GameEnd, MatchSettings, Openings, play_match};
pub use player::{Answer, Clock, Player, SearchPlayer, Turn};
pub use rating::{Bracket, EloProbe, rate};
pub use uci_player::{MoveLimit, UciPlayer};
