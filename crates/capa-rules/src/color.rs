//! The two sides.

/// A side. In chess games `White` moves first; in Go `Black` does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    /// Chess: moves first, plays up the board. Go: the white stones.
    White = 0,
    /// Chess: moves second, plays down the board. Go: the black stones, first to move.
    Black = 1,
}

impl Color {
    /// Both colors, white first.
    pub const ALL: [Color; 2] = [Color::White, Color::Black];

    /// `0` for white, `1` for black: an index into per-color arrays.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The `w` or `b` of a FEN's side-to-move field.
    pub const fn fen_char(self) -> char {
        match self {
            Color::White => 'w',
            Color::Black => 'b',
        }
    }
}

impl std::ops::Not for Color {
    type Output = Color;
    #[inline]
    fn not(self) -> Color {
        match self {
            Color::White => Color::Black,
            Color::Black => Color::White,
        }
    }
}
