//! Zobrist keys for 10x8, generated at compile time from a fixed seed.

use super::types::{Piece, SQUARES};
use crate::Color;

const fn splitmix64(state: u64) -> (u64, u64) {
    let state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (state, z ^ (z >> 31))
}

struct Keys {
    pieces: [[u64; SQUARES]; 16],
    castling: [u64; 16],
    en_passant_file: [u64; 10],
    black_to_move: u64,
}

const fn keys() -> Keys {
    let mut state = 0x0c0f_fee0_ca9a_b1a4;
    let mut k = Keys { pieces: [[0; SQUARES]; 16], castling: [0; 16], en_passant_file: [0; 10], black_to_move: 0 };
    let mut piece = 0;
    while piece < 16 {
        let mut sq = 0;
        while sq < SQUARES {
            let (s, v) = splitmix64(state);
            state = s;
            k.pieces[piece][sq] = v;
            sq += 1;
        }
        piece += 1;
    }
    // Castling keys are XOR-combinations of one key per right, so that
    // dropping one right changes the hash by that right's key alone.
    let mut rights = [0u64; 4];
    let mut i = 0;
    while i < 4 {
        let (s, v) = splitmix64(state);
        state = s;
        rights[i] = v;
        i += 1;
    }
    let mut mask = 0;
    while mask < 16 {
        let mut bit = 0;
        while bit < 4 {
            if mask & (1 << bit) != 0 {
                k.castling[mask] ^= rights[bit];
            }
            bit += 1;
        }
        mask += 1;
    }
    let mut file = 0;
    while file < 10 {
        let (s, v) = splitmix64(state);
        state = s;
        k.en_passant_file[file] = v;
        file += 1;
    }
    k.black_to_move = splitmix64(state).1;
    k
}

static KEYS: Keys = keys();

#[inline]
pub(super) fn piece(p: Piece, sq: usize) -> u64 {
    KEYS.pieces[p.color.index() * 8 + p.role.index()][sq]
}

#[inline]
pub(super) fn castling(rights: u8) -> u64 {
    KEYS.castling[rights as usize & 15]
}

#[inline]
pub(super) fn en_passant_file(file: usize) -> u64 {
    KEYS.en_passant_file[file]
}

#[inline]
pub(super) fn side(turn: Color) -> u64 {
    match turn {
        Color::White => 0,
        Color::Black => KEYS.black_to_move,
    }
}
