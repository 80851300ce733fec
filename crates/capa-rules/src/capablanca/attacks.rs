//! Leaping and sliding attacks on 10x8, from tables built at compile time.
//!
//! Sliders use rays: the ray from a square in one direction, cut after its
//! first blocker (found with one `trailing_zeros` or `leading_zeros` on the
//! u128). Magic bitboards would need 80-bit products; rays are branch-light
//! and small enough to stay in cache.

use super::types::{Bitboard, FILES, RANKS, SQUARES, Square};
use crate::Color;

const fn on_board(file: i32, rank: i32) -> bool {
    file >= 0 && rank >= 0 && file < FILES as i32 && rank < RANKS as i32
}

const fn leaper_table(deltas: &[(i32, i32)]) -> [u128; SQUARES] {
    let mut table = [0u128; SQUARES];
    let mut sq = 0;
    while sq < SQUARES {
        let (file, rank) = ((sq % FILES) as i32, (sq / FILES) as i32);
        let mut i = 0;
        while i < deltas.len() {
            let (f, r) = (file + deltas[i].0, rank + deltas[i].1);
            if on_board(f, r) {
                table[sq] |= 1u128 << (r as usize * FILES + f as usize);
            }
            i += 1;
        }
        sq += 1;
    }
    table
}

static KNIGHT: [u128; SQUARES] =
    leaper_table(&[(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)]);
static KING: [u128; SQUARES] = leaper_table(&[(0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1)]);
static PAWN: [[u128; SQUARES]; 2] = [leaper_table(&[(-1, 1), (1, 1)]), leaper_table(&[(-1, -1), (1, -1)])];

/// Ray directions. The first four raise the square index, the last four lower it.
const DIRECTIONS: [(i32, i32); 8] = [(0, 1), (1, 0), (1, 1), (-1, 1), (0, -1), (-1, 0), (-1, -1), (1, -1)];
const NORTH: usize = 0;
const EAST: usize = 1;
const NORTH_EAST: usize = 2;
const NORTH_WEST: usize = 3;
const SOUTH: usize = 4;
const WEST: usize = 5;
const SOUTH_WEST: usize = 6;
const SOUTH_EAST: usize = 7;

const fn ray_table() -> [[u128; SQUARES]; 8] {
    let mut table = [[0u128; SQUARES]; 8];
    let mut dir = 0;
    while dir < 8 {
        let mut sq = 0;
        while sq < SQUARES {
            let (mut f, mut r) = ((sq % FILES) as i32, (sq / FILES) as i32);
            loop {
                f += DIRECTIONS[dir].0;
                r += DIRECTIONS[dir].1;
                if !on_board(f, r) {
                    break;
                }
                table[dir][sq] |= 1u128 << (r as usize * FILES + f as usize);
            }
            sq += 1;
        }
        dir += 1;
    }
    table
}

static RAYS: [[u128; SQUARES]; 8] = ray_table();

/// `BETWEEN[a][b]`: squares strictly between aligned `a` and `b`;
/// `LINE[a][b]`: the whole line through them, both included. Empty if not aligned.
const fn line_tables() -> ([[u128; SQUARES]; SQUARES], [[u128; SQUARES]; SQUARES]) {
    let rays = ray_table();
    let mut between = [[0u128; SQUARES]; SQUARES];
    let mut line = [[0u128; SQUARES]; SQUARES];
    let mut a = 0;
    while a < SQUARES {
        let mut dir = 0;
        while dir < 8 {
            let opposite = (dir + 4) % 8;
            let full = rays[dir][a] | rays[opposite][a] | (1u128 << a);
            let (mut f, mut r) = ((a % FILES) as i32, (a / FILES) as i32);
            let mut passed = 0u128;
            loop {
                f += DIRECTIONS[dir].0;
                r += DIRECTIONS[dir].1;
                if !on_board(f, r) {
                    break;
                }
                let b = r as usize * FILES + f as usize;
                between[a][b] = passed;
                line[a][b] = full;
                passed |= 1u128 << b;
            }
            dir += 1;
        }
        a += 1;
    }
    (between, line)
}

static LINES: ([[u128; SQUARES]; SQUARES], [[u128; SQUARES]; SQUARES]) = line_tables();

/// Squares a knight on `sq` attacks.
#[inline]
pub fn knight_attacks(sq: Square) -> Bitboard {
    Bitboard(KNIGHT[sq.index()])
}

/// Squares a king on `sq` attacks.
#[inline]
pub fn king_attacks(sq: Square) -> Bitboard {
    Bitboard(KING[sq.index()])
}

/// Squares a pawn of `color` on `sq` attacks.
#[inline]
pub fn pawn_attacks(color: Color, sq: Square) -> Bitboard {
    Bitboard(PAWN[color.index()][sq.index()])
}

#[inline]
fn ray_up(dir: usize, sq: Square, occupied: u128) -> u128 {
    let ray = RAYS[dir][sq.index()];
    let blockers = ray & occupied;
    if blockers == 0 { ray } else { ray ^ RAYS[dir][blockers.trailing_zeros() as usize] }
}

#[inline]
fn ray_down(dir: usize, sq: Square, occupied: u128) -> u128 {
    let ray = RAYS[dir][sq.index()];
    let blockers = ray & occupied;
    if blockers == 0 { ray } else { ray ^ RAYS[dir][127 - blockers.leading_zeros() as usize] }
}

/// Squares a rook on `sq` attacks, given the occupied squares.
#[inline]
pub fn rook_attacks(sq: Square, occupied: Bitboard) -> Bitboard {
    let o = occupied.0;
    Bitboard(ray_up(NORTH, sq, o) | ray_up(EAST, sq, o) | ray_down(SOUTH, sq, o) | ray_down(WEST, sq, o))
}

/// Squares a bishop on `sq` attacks, given the occupied squares.
#[inline]
pub fn bishop_attacks(sq: Square, occupied: Bitboard) -> Bitboard {
    let o = occupied.0;
    Bitboard(
        ray_up(NORTH_EAST, sq, o)
            | ray_up(NORTH_WEST, sq, o)
            | ray_down(SOUTH_WEST, sq, o)
            | ray_down(SOUTH_EAST, sq, o),
    )
}

/// Squares strictly between `a` and `b` if they share a rank, file or diagonal.
#[inline]
pub fn between(a: Square, b: Square) -> Bitboard {
    Bitboard(LINES.0[a.index()][b.index()])
}

/// The full line through `a` and `b` (edge to edge) if aligned, else empty.
#[inline]
pub fn line(a: Square, b: Square) -> Bitboard {
    Bitboard(LINES.1[a.index()][b.index()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sq(name: &str) -> Square {
        let b = name.as_bytes();
        Square::new((b[0] - b'a') as usize, (b[1] - b'1') as usize)
    }

    #[test]
    fn leapers_respect_edges() {
        assert_eq!(knight_attacks(sq("a1")).count(), 2);
        assert_eq!(knight_attacks(sq("j8")).count(), 2);
        assert_eq!(knight_attacks(sq("e4")).count(), 8);
        assert_eq!(king_attacks(sq("j1")).count(), 3);
        assert_eq!(pawn_attacks(Color::White, sq("a2")), sq("b3").bb());
        assert_eq!(pawn_attacks(Color::Black, sq("j7")), sq("i6").bb());
    }

    #[test]
    fn sliders_stop_at_blockers() {
        let empty = Bitboard::EMPTY;
        assert_eq!(rook_attacks(sq("a1"), empty).count(), 9 + 7);
        assert_eq!(bishop_attacks(sq("a1"), empty).count(), 7);
        let blockers = sq("d1").bb() | sq("a3").bb();
        let r = rook_attacks(sq("a1"), blockers);
        assert_eq!(r, sq("b1").bb() | sq("c1").bb() | sq("d1").bb() | sq("a2").bb() | sq("a3").bb());
        let b = bishop_attacks(sq("f4"), sq("h6").bb() | sq("d2").bb());
        assert!(b.contains(sq("h6")) && !b.contains(sq("i7")) && b.contains(sq("d2")) && !b.contains(sq("c1")));
    }

    #[test]
    fn between_and_line() {
        assert_eq!(between(sq("f1"), sq("j1")), sq("g1").bb() | sq("h1").bb() | sq("i1").bb());
        assert_eq!(between(sq("a1"), sq("c2")), Bitboard::EMPTY);
        assert_eq!(line(sq("b2"), sq("c3")).count(), 8);
        assert!(line(sq("a1"), sq("c2")).is_empty());
    }
}
