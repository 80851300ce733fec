//! capa's file formats.
//!
//! - [`GameRecord`]: one self-play game in a compact, versioned, checksummed
//!   file of its own: the start position, the moves, and for each ply the
//!   search's visit distribution and values. Positions are rebuilt by
//!   replaying the moves, so a record costs tens of bytes per ply.
//! - [`to_pgn`]: a record as PGN, with the search's evaluation in the
//!   comments.
//! - [`write_atomically`]: how every file of capa is written, so that a
//!   reader sees the old file or the whole new one, never a part.

#![deny(missing_docs)]

mod atomic;
mod pgn;
mod record;

pub use atomic::{TEMPORARY_MARK, remove_stale_temporaries, write_atomically};
pub use pgn::to_pgn;
pub use record::{Ending, GameRecord, PlyRecord, RecordError, Resignation, SearchValues};
