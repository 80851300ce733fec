//! Openings files, as `capa match` and `capa distill gen` read them: one
//! opening per line, either UCI moves from the start position (optionally
//! after `moves`) or a FEN optionally followed by `moves ...`; blank lines
//! and lines starting with `#` are skipped.

use std::path::{Path, PathBuf};

use capa_rules::{FenError, Game, History, MoveListError};

/// An openings file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OpeningsError {
    /// The file cannot be read.
    #[error("cannot read the openings {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not an opening.
    #[error("{} line {line}: `{text}`: {problem}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// The line as written.
        text: String,
        /// What is wrong with it.
        problem: Box<OpeningError>,
    },
    /// Nothing but comments and blank lines.
    #[error("{} holds no openings", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// One line that is not an opening.
#[derive(Debug, thiserror::Error)]
pub enum OpeningError {
    /// The FEN is not a position of the game.
    #[error("bad FEN: {0}")]
    Fen(#[from] FenError),
    /// A move is malformed or illegal.
    #[error("{0}")]
    Move(#[from] MoveListError),
    /// The moves end the game.
    #[error("the game is already over ({0})")]
    Over(String),
}

/// Reads every opening of the file at `path`.
///
/// # Errors
/// An unreadable file, a bad line (with its number), or no opening at all.
pub fn read_openings<G: Game>(path: &Path) -> Result<Vec<History<G>>, OpeningsError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| OpeningsError::Read { path: path.to_path_buf(), source })?;
    let mut openings = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let opening = parse_opening::<G>(line).map_err(|problem| OpeningsError::Line {
            path: path.to_path_buf(),
            line: number + 1,
            text: line.to_string(),
            problem: Box::new(problem),
        })?;
        openings.push(opening);
    }
    if openings.is_empty() {
        return Err(OpeningsError::Empty { path: path.to_path_buf() });
    }
    Ok(openings)
}

/// One opening: a FEN, optionally followed by `moves ...`, or UCI moves
/// from the start position.
///
/// # Errors
/// A bad FEN, a bad move, or moves that end the game.
pub fn parse_opening<G: Game>(line: &str) -> Result<History<G>, OpeningError> {
    let (start, moves) = if line.contains('/') {
        let (fen, moves) = line.split_once(" moves ").unwrap_or((line, ""));
        (G::from_fen(fen.trim())?, moves)
    } else {
        (G::startpos(), line.strip_prefix("moves ").unwrap_or(line))
    };
    let mut history = History::new(start);
    history.play_moves(moves.split_whitespace())?;
    if let Some(outcome) = history.outcome() {
        return Err(OpeningError::Over(outcome.reason.to_string()));
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use capa_rules::chess::Chess;

    use super::*;

    #[test]
    fn openings_parse_and_bad_ones_say_why() {
        let h = parse_opening::<Chess>("e2e4 e7e5").unwrap();
        assert_eq!(h.moves().len(), 2);
        let h = parse_opening::<Chess>("moves d2d4").unwrap();
        assert_eq!(h.moves().len(), 1);
        let h = parse_opening::<Chess>("4k3/8/8/8/8/8/8/4K2R w K - 0 1 moves e1g1").unwrap();
        assert_eq!(h.moves().len(), 1);
        let err = parse_opening::<Chess>("e2e4 e2e4").unwrap_err();
        assert!(err.to_string().contains("move 2"), "{err}");
        assert!(parse_opening::<Chess>("8/8/8 w - - 0 1").is_err());
        assert!(parse_opening::<Chess>("f2f3 e7e5 g2g4 d8h4").is_err(), "a finished game is no opening");
    }
}
