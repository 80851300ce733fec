//! Squares, pieces and bitboards of the 10x8 board.

use std::fmt;

use crate::Color;

/// Board width.
pub const FILES: usize = 10;
/// Board height.
pub const RANKS: usize = 8;
/// Number of squares.
pub const SQUARES: usize = FILES * RANKS;

/// A square of the 10x8 board, `a1 = 0, b1 = 1, …, j1 = 9, a2 = 10, …, j8 = 79`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

impl Square {
    /// The square on `file` (0 = a) and `rank` (0 = first rank).
    ///
    /// # Panics
    /// If the coordinates are off the board.
    #[track_caller]
    pub const fn new(file: usize, rank: usize) -> Square {
        assert!(file < FILES && rank < RANKS, "square off the 10x8 board");
        Square((rank * FILES + file) as u8)
    }

    /// The square with index `index` (`rank * 10 + file`), if on the board.
    pub const fn from_index(index: usize) -> Option<Square> {
        if index < SQUARES { Some(Square(index as u8)) } else { None }
    }

    /// Caller guarantees `index < 80`.
    #[inline]
    pub(crate) const fn from_index_unchecked(index: u32) -> Square {
        debug_assert!(index < SQUARES as u32);
        Square(index as u8)
    }

    /// `rank * 10 + file`.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// 0 for the a-file, 9 for the j-file.
    #[inline]
    pub const fn file(self) -> usize {
        self.0 as usize % FILES
    }

    /// 0 for the first rank, 7 for the eighth.
    #[inline]
    pub const fn rank(self) -> usize {
        self.0 as usize / FILES
    }

    /// The same file on the mirrored rank (`a1` <-> `a8`).
    #[inline]
    pub const fn flip_vertical(self) -> Square {
        Square::new(self.file(), RANKS - 1 - self.rank())
    }

    /// The single-square set.
    #[inline]
    pub const fn bb(self) -> Bitboard {
        Bitboard(1u128 << self.0)
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::notation::square_name(self.file(), self.rank()))
    }
}

impl fmt::Debug for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A set of squares: bit `i` is the square with index `i`; bits 80..128 are always zero.
///
/// ```text
/// rank 8  70 71 72 73 74 75 76 77 78 79
/// …
/// rank 1   0  1  2  3  4  5  6  7  8  9
///          a  b  c  d  e  f  g  h  i  j
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct Bitboard(pub u128);

impl Bitboard {
    /// No squares.
    pub const EMPTY: Bitboard = Bitboard(0);
    /// All 80 squares.
    pub const ALL: Bitboard = Bitboard((1u128 << SQUARES) - 1);

    /// The squares of rank `rank` (0-based).
    pub const fn rank(rank: usize) -> Bitboard {
        Bitboard(((1u128 << FILES) - 1) << (rank * FILES))
    }

    /// Whether `sq` is in the set.
    #[inline]
    pub const fn contains(self, sq: Square) -> bool {
        self.0 & (1u128 << sq.0) != 0
    }

    /// Whether the set is empty.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the set has two or more squares.
    #[inline]
    pub const fn more_than_one(self) -> bool {
        self.0 & self.0.wrapping_sub(1) != 0
    }

    /// The number of squares.
    #[inline]
    pub const fn count(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The lowest square, if any.
    #[inline]
    pub const fn first(self) -> Option<Square> {
        if self.0 == 0 { None } else { Some(Square::from_index_unchecked(self.0.trailing_zeros())) }
    }

    /// The only square of a set known to hold exactly one.
    #[inline]
    pub(crate) const fn single(self) -> Square {
        debug_assert!(self.0 != 0 && !self.more_than_one());
        Square::from_index_unchecked(self.0.trailing_zeros())
    }

    /// Removes and returns the lowest square.
    #[inline]
    pub fn pop(&mut self) -> Option<Square> {
        let sq = self.first();
        self.0 &= self.0.wrapping_sub(1);
        sq
    }

    /// The squares of the set, moved up (`+`) or down (`-`) by `delta` indices,
    /// dropping those that leave the board. Callers mask file wrap-around.
    #[inline]
    pub(crate) const fn shift(self, delta: i32) -> Bitboard {
        if delta >= 0 { Bitboard((self.0 << delta) & Bitboard::ALL.0) } else { Bitboard(self.0 >> -delta) }
    }
}

impl Iterator for Bitboard {
    type Item = Square;
    #[inline]
    fn next(&mut self) -> Option<Square> {
        self.pop()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.count(), Some(self.count()))
    }
}

macro_rules! bit_op {
    ($tr:ident, $f:ident, $tra:ident, $fa:ident, $op:tt) => {
        impl std::ops::$tr for Bitboard {
            type Output = Bitboard;
            #[inline]
            fn $f(self, rhs: Bitboard) -> Bitboard { Bitboard(self.0 $op rhs.0) }
        }
        impl std::ops::$tra for Bitboard {
            #[inline]
            fn $fa(&mut self, rhs: Bitboard) { self.0 = self.0 $op rhs.0; }
        }
    };
}
bit_op!(BitAnd, bitand, BitAndAssign, bitand_assign, &);
bit_op!(BitOr, bitor, BitOrAssign, bitor_assign, |);
bit_op!(BitXor, bitxor, BitXorAssign, bitxor_assign, ^);

impl std::ops::Not for Bitboard {
    type Output = Bitboard;
    #[inline]
    fn not(self) -> Bitboard {
        Bitboard(!self.0 & Bitboard::ALL.0)
    }
}

impl fmt::Debug for Bitboard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for rank in (0..RANKS).rev() {
            for file in 0..FILES {
                let c = if self.contains(Square::new(file, rank)) { '1' } else { '.' };
                write!(f, "{c}{}", if file + 1 < FILES { " " } else { "\n" })?;
            }
        }
        Ok(())
    }
}

/// A kind of piece. The order is the network's plane order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Pawn.
    Pawn = 0,
    /// Knight.
    Knight = 1,
    /// Bishop.
    Bishop = 2,
    /// Rook.
    Rook = 3,
    /// Queen.
    Queen = 4,
    /// King.
    King = 5,
    /// Archbishop: bishop + knight.
    Archbishop = 6,
    /// Chancellor: rook + knight.
    Chancellor = 7,
}

impl Role {
    /// All roles in plane order.
    pub const ALL: [Role; 8] = [
        Role::Pawn,
        Role::Knight,
        Role::Bishop,
        Role::Rook,
        Role::Queen,
        Role::King,
        Role::Archbishop,
        Role::Chancellor,
    ];

    /// What a pawn may promote to, in policy-map order for the suffixed
    /// entries (the knight, which uses the plain entry, comes last).
    pub const PROMOTIONS: [Role; 6] =
        [Role::Queen, Role::Rook, Role::Bishop, Role::Archbishop, Role::Chancellor, Role::Knight];

    /// The lowercase FEN letter.
    pub const fn char(self) -> char {
        match self {
            Role::Pawn => 'p',
            Role::Knight => 'n',
            Role::Bishop => 'b',
            Role::Rook => 'r',
            Role::Queen => 'q',
            Role::King => 'k',
            Role::Archbishop => 'a',
            Role::Chancellor => 'c',
        }
    }

    /// The conventional value in pawns (the king 0): see [`Game::material`](crate::Game::material).
    pub const fn value(self) -> u32 {
        match self {
            Role::Pawn => 1,
            Role::Knight | Role::Bishop => 3,
            Role::Rook => 5,
            Role::Archbishop => 7,
            Role::Chancellor => 8,
            Role::Queen => 9,
            Role::King => 0,
        }
    }

    /// The role of a FEN letter, either case.
    pub fn from_char(c: char) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.char() == c.to_ascii_lowercase())
    }

    /// `0..8`, for per-role arrays.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A piece: a role and its owner.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    /// Owner.
    pub color: Color,
    /// Kind.
    pub role: Role,
}

impl Piece {
    /// The FEN letter: uppercase for white.
    pub const fn char(self) -> char {
        let c = self.role.char();
        match self.color {
            Color::White => c.to_ascii_uppercase(),
            Color::Black => c,
        }
    }
}
