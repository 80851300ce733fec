//! Games between players, and what they say about strength.
//!
//! - [`arena`]: a network searched in-process plays another network or a
//!   UCI engine, every game at once so the network's batches stay full
//!   (the trainer's `[eval]` and its curriculum).
//! - [`EnginePlayer`]: a UCI engine at a set strength (`UCI_Elo`).
//! - [`matches::play`]: a match between two UCI processes, a network
//!   running as `capa uci` or any engine, several games at a time, with a
//!   PGN and an optional SPRT (`capa match`).
//! - [`rating::rate`]: a network's Elo on an engine's `UCI_Elo` scale by
//!   bisection (`capa elo`).
//! - [`MatchScore`], [`Sprt`] and [`Bisection`]: the maths. Every Elo
//!   bisection, in-process or over processes, is driven by
//!   [`Bisection::drive`].

#![deny(missing_docs)]

mod arena;
mod elo;
mod engine;
pub mod matches;
pub mod rating;

pub use arena::{ArenaSettings, NetworkPlayer, Player, arena};
pub use elo::{Bisection, EloEstimate, EstimateKind, MatchScore, Sprt, SprtVerdict, elo_difference, expected_score};
pub use engine::EnginePlayer;
