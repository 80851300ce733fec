//! capa's file formats.
//!
//! - [`GameRecord`]: one self-play game in a compact, versioned, checksummed
//!   file of its own: the start position, the moves, and for each ply the
//!   search's visit distribution and values. Positions are rebuilt by
//!   replaying the moves, so a record costs tens of bytes per ply.
//! - [`TeacherGame`]: one game of a UCI engine against itself with its
//!   multipv candidates at every ply, the data of distillation, and
//!   [`policy_target`], which turns the candidates' scores into a target.
//! - [`to_pgn`]: a record as PGN, with the search's evaluation in the
//!   comments.
//! - [`UciEngine`]: a client for UCI engines (Fairy-Stockfish, Stockfish,
//!   capa itself): options, searches with `info` lines, deadlines on every
//!   wait, clear errors when the engine dies.
//! - [`MatchScore`] and [`Sprt`]: what a match's results say about the
//!   Elo difference.
//! - [`centipawns`]: Lc0's mapping from an expected score to centipawns.
//! - [`lc0`]: Lc0's V6 training records from PGN games (`capa lc0`).
//! - [`write_atomically`]: how every file of capa is written, so that a
//!   reader sees the old file or the whole new one, never a part.

#![deny(missing_docs)]

mod atomic;
mod elo;
mod frame;
pub mod lc0;
mod pgn;
mod record;
mod teacher;
mod uci;

pub use atomic::{TEMPORARY_MARK, remove_stale_temporaries, rename_durably, write_atomically};
pub use elo::{Bisection, EloEstimate, EstimateKind, MatchScore, Sprt, SprtVerdict, elo_difference, expected_score};
pub use pgn::{PgnTags, centipawns, q_from_centipawns, to_pgn, write_pgn};
pub use record::{Ending, GameRecord, PlyRecord, RecordError, Resignation, SearchValues};
pub use teacher::{
    Candidate, MATE_CENTIPAWNS, PolicyTarget, TEACHER_EXTENSION, TeacherGame, policy_target, score_centipawns,
};
pub use uci::{
    DEFAULT_TIMEOUT, EngineOption, Go, OptionKind, PvLine, SearchOutput, UciEngine, UciError, UciScore, find_program,
    parse_info, parse_option, position_command,
};
