//! Text shared by every board size: FEN fields, square names, UCI move syntax.

use crate::{Color, FenErrorKind, MoveError};

/// The fields of a FEN, split and checked for syntax; what they mean is the game's business.
#[derive(Debug)]
pub(crate) struct FenFields<'a> {
    /// `(file, rank, piece letter)` for every occupied square, 0-based.
    pub pieces: Vec<(usize, usize, char)>,
    pub turn: Color,
    pub castling: &'a str,
    pub en_passant: &'a str,
    pub halfmove_clock: u32,
    pub fullmove_number: u32,
}

/// Splits a FEN for a `files` x `ranks` board whose piece letters (either case) are `roles`.
/// Missing trailing fields default to `- - 0 1`, as engines accept.
pub(crate) fn split_fen<'a>(
    fen: &'a str,
    files: usize,
    ranks: usize,
    roles: &str,
) -> Result<FenFields<'a>, FenErrorKind> {
    let fields: Vec<&str> = fen.split_ascii_whitespace().collect();
    if !(2..=6).contains(&fields.len()) {
        return Err(FenErrorKind::FieldCount(fields.len()));
    }
    let pieces = parse_placement(fields[0], files, ranks, roles)?;
    let turn = match fields[1] {
        "w" => Color::White,
        "b" => Color::Black,
        other => return Err(FenErrorKind::SideToMove(other.to_string())),
    };
    let field = |i: usize, default: &'a str| fields.get(i).copied().unwrap_or(default);
    let clock = |name: &'static str, value: &str, max: u32| {
        value
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| value.parse::<u32>().ok())
            .flatten()
            .filter(|&n| n <= max)
            .ok_or_else(|| FenErrorKind::Clock { field: name, value: value.to_string(), max })
    };
    // Bounds keep ply arithmetic far from overflow; no real game comes near them.
    let halfmove_clock = clock("halfmove clock", field(4, "0"), 100_000)?;
    let fullmove_number = clock("fullmove number", field(5, "1"), 1_000_000)?.max(1);
    Ok(FenFields { pieces, turn, castling: field(2, "-"), en_passant: field(3, "-"), halfmove_clock, fullmove_number })
}

fn parse_placement(
    placement: &str,
    files: usize,
    ranks: usize,
    roles: &str,
) -> Result<Vec<(usize, usize, char)>, FenErrorKind> {
    let rows: Vec<&str> = placement.split('/').collect();
    if rows.len() != ranks {
        return Err(FenErrorKind::RankCount { found: rows.len(), expected: ranks });
    }
    let mut pieces = Vec::new();
    for (row_index, row) in rows.iter().enumerate() {
        let rank = ranks - 1 - row_index;
        let mut file = 0usize;
        let mut chars = row.char_indices().peekable();
        while let Some((start, c)) = chars.next() {
            if c.is_ascii_digit() {
                let mut end = start + 1;
                while let Some(&(i, d)) = chars.peek() {
                    if !d.is_ascii_digit() {
                        break;
                    }
                    end = i + 1;
                    chars.next();
                }
                let digits = &row[start..end];
                // At most the board's width, so `file` stays small.
                let count = digits
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0 && n <= files && !digits.starts_with('0'))
                    .ok_or_else(|| FenErrorKind::BadEmptyCount { count: digits.to_string(), rank: rank + 1 })?;
                file += count;
            } else if roles.contains(c.to_ascii_lowercase()) && c.is_ascii_alphabetic() {
                if file < files {
                    pieces.push((file, rank, c));
                }
                file += 1;
            } else {
                return Err(FenErrorKind::UnknownPiece { piece: c, rank: rank + 1 });
            }
        }
        if file != files {
            return Err(FenErrorKind::RankWidth { rank: rank + 1, found: file, expected: files });
        }
    }
    Ok(pieces)
}

/// Checks that a castling field is `-` or letters each given once; which
/// letters mean what is the game's business.
pub(crate) fn check_castling_letters(field: &str) -> Result<(), FenErrorKind> {
    let bad = |reason: String| FenErrorKind::Castling { field: field.to_string(), reason };
    if field == "-" {
        return Ok(());
    }
    for (i, c) in field.char_indices() {
        if !c.is_ascii_alphabetic() {
            return Err(bad(format!("'{c}' is not a castling letter")));
        }
        if field[..i].contains(c) {
            return Err(bad(format!("the right '{c}' is given twice")));
        }
    }
    Ok(())
}

/// The name of a square, `a1` style; files run from `a`.
pub(crate) fn square_name(file: usize, rank: usize) -> String {
    format!("{}{}", (b'a' + file as u8) as char, rank + 1)
}

/// Parses a square name on a `files` x `ranks` board (at most 26 files, 9 ranks).
pub(crate) fn parse_square(s: &str, files: usize, ranks: usize) -> Option<(usize, usize)> {
    let bytes = s.as_bytes();
    if bytes.len() != 2 {
        return None;
    }
    let file = bytes[0].checked_sub(b'a')? as usize;
    let rank = bytes[1].checked_sub(b'1')? as usize;
    (file < files && rank < ranks).then_some((file, rank))
}

/// A UCI move split into squares and an optional promotion letter.
pub(crate) struct UciParts {
    pub from: (usize, usize),
    pub to: (usize, usize),
    pub promotion: Option<char>,
}

/// Splits `uci` (`e2e4`, `a7a8q`) for a board of `files` x `ranks` with promotion letters `promotions`.
pub(crate) fn split_uci(uci: &str, files: usize, ranks: usize, promotions: &str) -> Result<UciParts, MoveError> {
    let malformed = |reason: String| MoveError::Malformed { uci: uci.to_string(), reason };
    if !uci.is_ascii() || !(4..=5).contains(&uci.len()) {
        return Err(malformed(
            "expected from-square, to-square and an optional promotion letter, like e2e4 or a7a8q".to_string(),
        ));
    }
    let square = |s: &str| {
        parse_square(s, files, ranks).ok_or_else(|| {
            malformed(format!(
                "'{s}' is not a square of this {files}x{ranks} board (files a-{}, ranks 1-{ranks})",
                (b'a' + files as u8 - 1) as char
            ))
        })
    };
    let from = square(&uci[0..2])?;
    let to = square(&uci[2..4])?;
    let promotion = match uci[4..].chars().next() {
        None => None,
        Some(p) if promotions.contains(p) => Some(p),
        Some(p) => {
            return Err(malformed(format!("'{p}' is not a promotion piece here (one of '{promotions}')")));
        }
    };
    Ok(UciParts { from, to, promotion })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_counts_multi_digit_runs() {
        let f = split_fen("k9/10/10/10/10/10/10/9K w - - 0 1", 10, 8, "kpnbrqac").unwrap();
        assert_eq!(f.pieces, vec![(0, 7, 'k'), (9, 0, 'K')]);
    }

    #[test]
    fn placement_rejects_wide_and_narrow_ranks() {
        let wide = split_fen("k10/10/10/10/10/10/10/9K w", 10, 8, "k").unwrap_err();
        assert_eq!(wide, FenErrorKind::RankWidth { rank: 8, found: 11, expected: 10 });
        let narrow = split_fen("k8/10/10/10/10/10/10/9K w", 10, 8, "k").unwrap_err();
        assert_eq!(narrow, FenErrorKind::RankWidth { rank: 8, found: 9, expected: 10 });
        let zero = split_fen("k09/10/10/10/10/10/10/9K w", 10, 8, "k").unwrap_err();
        assert!(matches!(zero, FenErrorKind::BadEmptyCount { .. }));
        // A count that would overflow `usize` once a piece is added (found by review).
        let huge = split_fen("18446744073709551615Rk9/10/10/10/10/10/10/9K w", 10, 8, "kr").unwrap_err();
        assert!(matches!(huge, FenErrorKind::BadEmptyCount { rank: 8, .. }), "{huge:?}");
        let wide = split_fen("11/10/10/10/10/10/10/9K w", 10, 8, "k").unwrap_err();
        assert!(matches!(wide, FenErrorKind::BadEmptyCount { rank: 8, .. }), "{wide:?}");
    }

    #[test]
    fn clocks_are_plain_numbers_in_range() {
        let clock = |h: &str, f: &str| {
            split_fen(&format!("k9/10/10/10/10/10/10/9K w - - {h} {f}"), 10, 8, "k").map(|fields| fields.halfmove_clock)
        };
        assert!(clock("0", "1").is_ok());
        assert!(matches!(clock("+5", "1").unwrap_err(), FenErrorKind::Clock { .. }));
        assert!(matches!(clock("5", "-1").unwrap_err(), FenErrorKind::Clock { .. }));
        let too_big = clock("100001", "1").unwrap_err();
        assert_eq!(too_big.to_string(), "halfmove clock '100001' is not a number from 0 to 100000");
    }

    #[test]
    fn castling_letters_once_each() {
        assert!(check_castling_letters("-").is_ok());
        assert!(check_castling_letters("KQkq").is_ok());
        assert!(check_castling_letters("KKq").is_err());
        assert!(check_castling_letters("K-").is_err());
    }

    #[test]
    fn uci_syntax() {
        assert!(split_uci("j7j8c", 10, 8, "qrbnac").is_ok());
        assert!(split_uci("k1k2", 10, 8, "qrbnac").is_err());
        assert!(split_uci("a7a8x", 10, 8, "qrbnac").is_err());
        assert!(split_uci("a9a8", 10, 8, "qrbnac").is_err());
        assert!(split_uci("é2e4", 10, 8, "qrbnac").is_err());
    }
}
