//! capa's file formats.
//!
//! - [`GameRecord`]: one self-play game in a compact, versioned, checksummed
//!   file of its own: the start position, the moves, and for each ply the
//!   search's visit distribution and values. Positions are rebuilt by
//!   replaying the moves, so a record costs tens of bytes per ply.
//! - [`TeacherGame`]: one game of a UCI engine against itself with its
//!   multipv candidates at every ply, the data of distillation, and
//!   [`policy_target`], which turns the candidates' scores into a target.
//! - [`generate`]: teacher games from a UCI engine playing itself, written
//!   as they end; an interrupted generation resumes.
//! - [`read_openings`]: openings files, as matches and generations use them.
//! - [`to_pgn`]: a record as PGN, with the search's evaluation in the
//!   comments.
//! - [`centipawns`]: Lc0's mapping from an expected score to centipawns.
//! - [`write_atomically`]: how every file of capa is written, so that a
//!   reader sees the old file or the whole new one, never a part.
//! - [`read_sgf`], [`convert_sgf`], [`spot_check`]: Go's SGF game records,
//!   their moves as training examples, and a sample of those to look at.
//! - [`input_files`]: the files of the paths a user names, folders searched.

#![deny(missing_docs)]

mod atomic;
mod frame;
mod generate;
mod input;
mod openings;
mod pgn;
mod record;
mod sgf;
mod sgf_convert;
mod spot_check;
mod teacher;

pub use atomic::{
    TEMPORARY_MARK, remove_stale_temporaries, rename_durably, write_atomically, write_new_atomically, writer_gone,
};
pub use frame::RecordError;
pub use generate::{Generation, GenerationEvent, GenerationSummary, generate};
pub use input::{InputError, input_files};
pub use openings::{OpeningError, OpeningsError, parse_opening, read_openings};
pub use pgn::{PgnTags, centipawns, q_from_centipawns, to_pgn, wdl_per_mille, write_pgn};
pub use record::{Ending, GameRecord, PlyRecord, RECORD_EXTENSION, Resignation, SearchValues, plies_to_end};
pub use sgf::{Replay, SgfError, SgfGame, SgfMove, SgfResult, SgfVariation, read_sgf, read_sgf_file};
pub use sgf_convert::{ConvertOptions, ConvertSummary, Tactics, convert_sgf};
pub use spot_check::{SpotExample, SpotSummary, spot_check};
pub use teacher::{
    Candidate, MATE_CENTIPAWNS, PolicyTarget, TEACHER_EXTENSION, TeacherGame, policy_target, score_centipawns,
};
